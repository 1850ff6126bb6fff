"""Convolutions, windows and pooling against JAX: lax.conv_general_dilated and its wrappers,
lax.reduce_window, jnp.convolve/correlate, nn.max_pool/avg_pool, and a small CNN forward."""

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax
from jnp_compare import assert_same

import purejit
import purejit.numpy as pnp
from purejit import lax as plax
from purejit.backend import pjrt

RNG = np.random.default_rng(0)


def _r(*shape, dt=np.float32):
    return RNG.standard_normal(shape).astype(dt)


X4 = _r(2, 3, 9, 8)  # NCHW
W4 = _r(4, 3, 3, 2)  # OIHW
XH = _r(2, 9, 8, 6)  # NHWC
WH = _r(3, 2, 3, 4)  # HWIO, 3 input features = 6 / feature_group_count 2
X3 = _r(4, 6, 10)  # NCH
W3G = _r(6, 3, 3)  # OIH for 2 feature groups
W3B = _r(6, 6, 2)  # OIH for 2 batch groups

CASES = {
    "SAME": lambda L, x, w, xh, wh, x3, wg, wb: L.conv_general_dilated(x, w, (1, 1), "SAME"),
    "VALID strided": lambda L, x, w, *_: L.conv_general_dilated(x, w, (2, 3), "VALID"),
    "SAME_LOWER": lambda L, x, w, *_: L.conv_general_dilated(x, w, (2, 2), "SAME_LOWER"),
    "pairs, dilations": lambda L, x, w, *_: L.conv_general_dilated(
        x, w, (2, 1), [(1, 2), (0, -1)], lhs_dilation=(2, 1), rhs_dilation=(1, 2)
    ),
    "NHWC strings, groups": lambda L, x, w, xh, wh, *_: L.conv_general_dilated(
        xh, wh, (1, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2
    ),
    "mixed layouts": lambda L, x, w, xh, wh, *_: L.conv_general_dilated(
        xh, wh, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NCHW"), feature_group_count=2
    ),
    "ConvDimensionNumbers": lambda L, x, w, xh, wh, *_: L.conv_general_dilated(
        xh,
        wh,
        (1, 1),
        "VALID",
        dimension_numbers=L.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)),
        feature_group_count=2,
    ),  # fmt: skip
    "1d feature groups": lambda L, x, w, xh, wh, x3, wg, wb: L.conv_general_dilated(
        x3, wg, (2,), [(1, 1)], feature_group_count=2
    ),
    "1d batch groups": lambda L, x, w, xh, wh, x3, wg, wb: L.conv_general_dilated(
        x3, wb, (1,), "VALID", batch_group_count=2
    ),
    "precision HIGHEST": lambda L, x, w, *_: L.conv_general_dilated(
        x, w, (1, 1), "SAME", precision=L.Precision.HIGHEST
    ),
    "conv": lambda L, x, w, *_: L.conv(x, w, (1, 2), "SAME"),
    "conv_with_general_padding": lambda L, x, w, *_: L.conv_with_general_padding(
        x, w, (1, 1), [(2, 0), (1, 1)], (1, 2), (2, 1)
    ),
    "conv_transpose SAME": lambda L, x, w, xh, wh, *_: L.conv_transpose(
        xh[..., :2], wh[..., :2, :], (2, 2), "SAME"
    ),
    "conv_transpose VALID kernel": lambda L, x, w, xh, wh, *_: L.conv_transpose(
        xh[..., :4], wh[..., :2, :], (2, 1), "VALID", transpose_kernel=True
    ),
    "conv_transpose pairs dilated": lambda L, x, w, *_: L.conv_transpose(
        x,
        w,
        (1, 2),
        [(1, 1), (2, 0)],
        rhs_dilation=(2, 1),
        dimension_numbers=("NCHW", "OIHW", "NCHW"),
    ),  # fmt: skip
}


def test_convolutions_match_jax():
    args = (X4, W4, XH, WH, X3, W3G, W3B)
    names = list(CASES)
    refs = jax.jit(lambda *a: [CASES[n](jlax, *a) for n in names])(*args)
    outs = purejit.jit(lambda *a: [CASES[n](plax, *a) for n in names])(*args)
    for n, r, g in zip(names, refs, outs):
        assert_same(r, g, rtol=1e-5, atol=1e-5, where=n)
    # eagerly too (one op each, compiled per signature)
    g = CASES["pairs, dilations"](plax, *args)
    assert_same(refs[names.index("pairs, dilations")], g, rtol=1e-5, atol=1e-5, where="eager")


def test_conv_dtypes_and_preferred_element_type():
    bf = np.dtype(ml_dtypes.bfloat16)
    xb, wb = X4.astype(bf), W4.astype(bf)
    xi, wi = (X4 * 4).astype(np.int8), (W4 * 4).astype(np.int8)

    def f(L, xb, wb, xi, wi):
        return [
            L.conv_general_dilated(xb, wb, (1, 1), "SAME"),
            L.conv_general_dilated(xb, wb, (1, 1), "SAME", preferred_element_type=np.float32),
            L.conv_general_dilated(xi, wi, (1, 1), "VALID"),
            L.conv_general_dilated(xi, wi, (1, 1), "VALID", preferred_element_type=np.int32),
        ]

    if pjrt.is_gpu():  # XLA:GPU has no int8 -> int32 convolution: JAX's and ours both fail
        _both_reject_integer_conv(lambda L, xi, wi: [f(L, xb, wb, xi, wi)[3]], xi, wi)
        f = _drop(f, 3)
    refs = jax.jit(lambda *a: f(jlax, *a))(xb, wb, xi, wi)
    outs = purejit.jit(lambda *a: f(plax, *a))(xb, wb, xi, wi)
    for k, (r, g) in enumerate(zip(refs, outs)):
        assert_same(r, g, rtol=1e-5, atol=1e-5, where=f"case {k}")


def _drop(f, *cases):
    return lambda *a: [o for k, o in enumerate(f(*a)) if k not in cases]


def _both_reject_integer_conv(f, *args, mods=(jlax, plax)):
    """cuDNN convolves integers only as int8 -> int8/float32, and XLA:GPU has no other
    integer convolution, so on GPU JAX's program fails to compile; ours must fail alike."""
    for mod, jit in zip(mods, (jax.jit, purejit.jit)):
        with pytest.raises(Exception, match="integer convolutions"):
            jit(lambda *a: f(mod, *a))(*args)


def test_conv_dimension_numbers_structure():
    for spec in [
        None,
        ("NHWC", "HWIO", "NHWC"),
        ("NCHW", "OIHW", "NHWC"),
        ("NWHC", "HWOI", "CNHW"),
    ]:
        want = jlax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), spec)
        got = plax.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), spec)
        assert tuple(got) == tuple(want), spec
        assert got._fields == want._fields


def test_conv_errors_name_the_function():
    with pytest.raises(purejit.PurejitTypeError, match="conv_general_dilated.*same dtypes"):
        plax.conv_general_dilated(X4, W4.astype(np.float16), (1, 1), "SAME")
    with pytest.raises(ValueError, match="padding"):
        plax.conv_general_dilated(X4, W4, (1, 1), "FULL")
    with pytest.raises(purejit.PurejitTypeError, match="convolution: input features 3"):
        plax.conv_general_dilated(X4, W4[:, :2], (1, 1), "SAME")


# ---- reduce_window, pooling, convolve ---------------------------------------------------------


def _flax_pool(x, init, fn, window, strides, padding):
    nb = x.ndim - len(window) - 1
    dims = (1,) * nb + tuple(window) + (1,)
    st = (1,) * nb + tuple(strides or (1,) * len(window)) + (1,)
    if not isinstance(padding, str):
        padding = ((0, 0),) * nb + tuple(padding) + ((0, 0),)
    return jlax.reduce_window(x, init, fn, dims, st, padding)


def test_reduce_window_and_pooling():
    x = _r(2, 7, 6, 3)
    xi = (x * 10).astype(np.int32)

    def windows(L, x, xi):
        return [
            L.reduce_window(x, -np.inf, L.max, (1, 3, 2, 1), (1, 2, 1, 1), "SAME"),
            L.reduce_window(x, 0.0, L.add, (1, 2, 2, 1), (1, 1, 2, 1), [(0, 0), (1, 0), (0, 1), (0, 0)]),
            L.reduce_window(xi, np.int32(2**31 - 1), L.min, (2, 2, 1, 1), (1, 1, 1, 1), "VALID"),
            L.reduce_window(x, 1.0, L.mul, (1, 2, 2, 1), (1, 1, 1, 1), "VALID", (1, 2, 1, 1), (1, 1, 2, 1)),
            L.reduce_window((x, xi), (0.0, np.int32(0)),
                            lambda a, b: (a[0] + b[0], L.max(a[1], b[1])),
                            (1, 2, 2, 1), (1, 1, 1, 1), "VALID"),
        ]  # fmt: skip

    refs = jax.jit(lambda *a: windows(jlax, *a))(x, xi)
    outs = purejit.jit(lambda *a: windows(plax, *a))(x, xi)
    for k, (r, g) in enumerate(zip(jax.tree.leaves(refs), jax.tree.leaves(outs))):
        assert_same(r, g, rtol=1e-5, atol=1e-5, weak=False, where=f"window {k}")

    def pools(x):
        nn = purejit.nn
        return [
            nn.max_pool(x, (2, 2), (2, 2)),
            nn.max_pool(x, (3, 2), None, "SAME"),
            nn.min_pool(x, (2, 3), (1, 2), [(1, 0), (0, 1)]),
            nn.avg_pool(x, (2, 2), (2, 1), "SAME"),
            nn.avg_pool(x, (2, 2), (2, 1), "SAME", count_include_pad=False),
            nn.max_pool(x[0], (2, 2)),  # no batch axis
        ]

    outs = purejit.jit(pools)(x)
    ones = jjnp.ones((1, 7, 6, 1))
    refs = [
        _flax_pool(x, -jjnp.inf, jlax.max, (2, 2), (2, 2), "VALID"),
        _flax_pool(x, -jjnp.inf, jlax.max, (3, 2), None, "SAME"),
        _flax_pool(x, jjnp.inf, jlax.min, (2, 3), (1, 2), [(1, 0), (0, 1)]),
        _flax_pool(x, 0.0, jlax.add, (2, 2), (2, 1), "SAME") / 4,
        _flax_pool(x, 0.0, jlax.add, (2, 2), (2, 1), "SAME")
        / _flax_pool(ones, 0.0, jlax.add, (2, 2), (2, 1), "SAME"),
        _flax_pool(x[:1], -jjnp.inf, jlax.max, (2, 2), None, "VALID")[0],
    ]
    for k, (r, g) in enumerate(zip(refs, outs)):
        assert_same(r, g, rtol=1e-6, atol=1e-6, weak=False, where=f"pool {k}")


def test_convolve_correlate():
    a, v = _r(9), _r(4)
    ai, vi = np.arange(6, dtype=np.int32), np.array([1, -2, 3], np.int32)

    def f(m, a, v, ai, vi):
        out = []
        for mode in ("full", "same", "valid"):
            out += [m.convolve(a, v, mode), m.correlate(a, v, mode), m.correlate(v, a, mode)]
            out += [m.convolve(v, a, mode=mode)]
        return out + [m.convolve(ai, vi), m.convolve(ai, vi, preferred_element_type=np.int32)]  # fmt: skip

    args = (a, v, ai, vi)
    if pjrt.is_gpu():  # int32 convolutions do not compile on GPU (see above), in JAX either
        int_out = np.int32
        _both_reject_integer_conv(
            lambda m, ai, vi: [m.convolve(ai, vi, preferred_element_type=int_out)],
            ai, vi, mods=(jjnp, pnp),
        )  # fmt: skip
        f = _drop(f, 13)
    refs = jax.jit(lambda *x: f(jjnp, *x))(*args)
    outs = purejit.jit(lambda *x: f(pnp, *x))(*args)
    for k, (r, g) in enumerate(zip(refs, outs)):
        assert_same(r, g, rtol=1e-5, atol=1e-5, where=f"case {k}")


# ---- a CNN forward: conv -> relu -> max-pool -> conv -> relu -> avg-pool -> dense ---------------


def _cnn(L, nn, m, params, x):
    dn = ("NHWC", "HWIO", "NHWC")
    h = L.conv_general_dilated(x, params["c1"], (1, 1), "SAME", dimension_numbers=dn)
    h = nn.relu(h + params["b1"])
    h = nn.max_pool(h, (2, 2), (2, 2))
    h = L.conv_general_dilated(h, params["c2"], (1, 1), "VALID", dimension_numbers=dn)
    h = nn.relu(h)
    h = nn.avg_pool(h, (2, 2), (2, 2))
    h = h.reshape(h.shape[0], -1)
    return nn.log_softmax(h @ params["w"] + params["b"])


def _jax_pools():
    class nn:
        relu = staticmethod(jax.nn.relu)
        log_softmax = staticmethod(jax.nn.log_softmax)

        @staticmethod
        def max_pool(x, w, s):
            return _flax_pool(x, -jjnp.inf, jlax.max, w, s, "VALID")

        @staticmethod
        def avg_pool(x, w, s):
            return _flax_pool(x, 0.0, jlax.add, w, s, "VALID") / np.prod(w)

    return nn


def test_cnn_forward_matches_jax():
    params = {
        "c1": _r(3, 3, 3, 8) * 0.3,
        "b1": _r(8) * 0.1,
        "c2": _r(3, 3, 8, 16) * 0.2,
        "w": _r(2 * 2 * 16, 10) * 0.1,
        "b": _r(10) * 0.1,
    }
    x = _r(4, 12, 12, 3)
    ref = jax.jit(lambda p, x: _cnn(jlax, _jax_pools(), jjnp, p, x))(params, x)
    got = purejit.jit(lambda p, x: _cnn(plax, purejit.nn, pnp, p, x))(params, x)
    assert_same(ref, got, rtol=2e-5, atol=2e-5)
