"""Derivatives of `convolution` (both transposes, every stride, padding, dilation, layout and
group count, `preferred_element_type`), of pooling (max-pool ties), and of a small CNN loss,
against JAX and finite differences."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
from ad_compare import assert_tree_close, check_ad, rand_like
from tolerance import dot_tol

import purejit
import purejit.numpy as jnp
from purejit import lax
from purejit.test_util import check_grads

NHWC = ("NHWC", "HWIO", "NHWC")
# (lhs shape, rhs shape, conv_general_dilated keywords)
CASES = [
    ((2, 3, 7, 6), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    ((2, 3, 9, 8), (4, 3, 3, 2), dict(window_strides=(2, 3), padding="SAME")),
    ((2, 3, 9, 8), (4, 3, 3, 2), dict(window_strides=(2, 1), padding=((1, 2), (0, -1)),
                                      lhs_dilation=(2, 1), rhs_dilation=(1, 2))),
    ((2, 6, 7, 6), (4, 3, 3, 2), dict(window_strides=(1, 2), padding="SAME",
                                      feature_group_count=2)),
    ((4, 3, 7, 6), (6, 3, 3, 2), dict(window_strides=(2, 1), padding=((1, 0), (2, 1)),
                                      batch_group_count=2, rhs_dilation=(2, 1))),
    ((2, 7, 6, 3), (3, 2, 3, 4), dict(window_strides=(1, 2), padding="SAME",
                                      dimension_numbers=NHWC)),
    ((2, 7, 6, 6), (3, 2, 2, 6), dict(window_strides=(2, 2), padding=((0, 1), (1, 1)),
                                      dimension_numbers=NHWC, feature_group_count=3,
                                      lhs_dilation=(1, 2))),
    ((6, 5, 4, 2), (2, 3, 2, 6), dict(window_strides=(1, 2), padding=((1, 1), (0, 1)),
                                      dimension_numbers=NHWC, batch_group_count=3,
                                      rhs_dilation=(1, 2))),
    ((3, 4, 10), (6, 2, 3), dict(window_strides=(3,), padding=((2, 2),),
                                 feature_group_count=2, rhs_dilation=(2,))),
    ((2, 6, 3, 3), (3, 4, 2, 2), dict(window_strides=(2, 1), padding=((3, 1), (1, 0)),
                                      dimension_numbers=("NCHW", "IOHW", "CNHW"),
                                      feature_group_count=2)),
    ((1, 2, 4, 3, 3), (2, 2, 2, 1, 2), dict(window_strides=(1, 2, 1), padding="SAME",
                                            rhs_dilation=(1, 1, 2))),
    ((2, 1, 3, 3), (2, 1, 2, 2), dict(window_strides=(3, 3), padding=((0, -1), (-1, 0)),
                                      lhs_dilation=(3, 2))),
]  # fmt: skip


def _args(cases, dtype=np.float32):
    out = []
    for k, (xs, ws, _) in enumerate(cases):
        out += [rand_like(np.zeros(xs, dtype), 2 * k), rand_like(np.zeros(ws, dtype), 2 * k + 1)]
    return out


def _convs(mod, cases):
    def f(*xw):
        return [
            mod.conv_general_dilated(xw[2 * k], xw[2 * k + 1], **kw)
            for k, (_, _, kw) in enumerate(cases)
        ]

    return f


def test_convolution_jvp_and_both_transposes_match_jax():
    # strides, padding (negative too), both dilations, layouts, feature and batch groups
    check_ad(_convs(lax, CASES), _convs(jax.lax, CASES), *_args(CASES), rtol=1e-4, atol=1e-4)


def test_complex_convolution_jvp_and_both_transposes_match_jax():
    # emitted as three real convolutions; the derivatives transpose the complex op itself
    cases = [CASES[k] for k in (1, 3, 4, 8)]  # strides, feature and batch groups, 1-d
    args = _args(cases, np.complex64)
    check_ad(_convs(lax, cases), _convs(jax.lax, cases), *args, rtol=1e-4, atol=1e-4)

    def loss(mod, m):
        # a real loss of both arguments: grad is the conjugate cotangent, as in JAX
        return lambda x, w: m.sum(m.abs(mod.conv_general_dilated(x, w, **cases[1][2])) ** 2)

    x, w = args[2:4]
    ref = jax.jit(jax.grad(loss(jax.lax, jjnp), argnums=(0, 1)))(x, w)
    got = purejit.jit(purejit.grad(loss(lax, jnp), argnums=(0, 1)))(x, w)
    assert_tree_close(ref, got, **dot_tol(1e-4, 1e-4), where="grad of |conv|^2")
    with jax.enable_x64(True), purejit.enable_x64(True):  # complex128, batch groups
        c128 = [CASES[4]]
        args = _args(c128, np.complex128)
        check_ad(_convs(lax, c128), _convs(jax.lax, c128), *args, rtol=1e-10, atol=1e-10)


def test_convolution_with_preferred_element_type_and_conv_transpose():
    def make(mod):
        def f(x, w, xb, wb):
            return [
                mod.conv_general_dilated(xb, wb, (2, 1), "SAME", dimension_numbers=NHWC,
                                         preferred_element_type=np.float32),
                mod.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=NHWC),
                mod.conv_transpose(x, w, (1, 2), ((1, 0), (2, 1)), rhs_dilation=(2, 1),
                                   dimension_numbers=NHWC, transpose_kernel=True),
            ]  # fmt: skip

        return f

    x = rand_like(np.zeros((2, 5, 4, 3), np.float32), 0)
    w = rand_like(np.zeros((3, 2, 3, 3), np.float32), 1)
    xb = rand_like(np.zeros((2, 5, 4, 4), jjnp.bfloat16), 2)
    wb = rand_like(np.zeros((3, 2, 4, 3), jjnp.bfloat16), 3)
    check_ad(make(lax), make(jax.lax), x, w, xb, wb, rtol=2e-2, atol=2e-2)


def test_convolution_check_grads_second_order():
    _, _, kw = CASES[4]  # batch groups: its transposes are feature-grouped and back again
    x, w = _args([CASES[4]])

    def f(x, w):
        return lax.conv_general_dilated(jnp.sin(x), w, **kw)

    check_grads(f, (x, w), order=2, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)


def _pads(padding):
    return padding if isinstance(padding, str) else ((0, 0), *padding, (0, 0))


def _max_pool_jax(x, window, strides, padding):
    dims, st, padding = (1, *window, 1), (1, *strides, 1), _pads(padding)
    return jax.lax.reduce_window(x, -jjnp.inf, jax.lax.max, dims, st, padding)


def _avg_pool_jax(x, window, strides, padding):
    dims, st, padding = (1, *window, 1), (1, *strides, 1), _pads(padding)
    y = jax.lax.reduce_window(x, 0.0, jax.lax.add, dims, st, padding)
    return y / float(np.prod(window))


def test_max_pool_gradient_matches_jax_including_ties():
    def make(max_pool, avg_pool):
        def f(x):
            return [
                max_pool(x, (2, 2), (2, 2), "VALID"),
                max_pool(x, (3, 2), (1, 1), "SAME"),
                max_pool(x, (2, 3), (2, 1), ((1, 0), (1, 1))),
                avg_pool(x, (3, 3), (2, 1), "SAME"),
            ]

        return f

    pj, jx = make(purejit.nn.max_pool, purejit.nn.avg_pool), make(_max_pool_jax, _avg_pool_jax)
    # integers in [-2, 2]: windows hold ties, and overlapping windows add up in one element.
    # Reverse mode is XLA's select_and_scatter_add in JAX: the first maximum of a window in
    # row-major order takes the cotangent. JAX's forward mode on ties follows XLA's
    # reduce_window reduction order, which XLA leaves unspecified, so it runs on distinct
    # values.
    x = np.round(rand_like(np.zeros((2, 6, 5, 3), np.float32), 7)).clip(-2, 2)
    check_ad(pj, jx, x, modes=("vjp",))
    distinct = np.random.default_rng(3).permutation(x.size).reshape(x.shape).astype(np.float32)
    check_ad(pj, jx, distinct, modes=("jvp",))


def _cnn(mod, lx, max_pool, conv_dn):
    def loss(params, x, labels):
        h = lx.conv_general_dilated(x, params["w1"], (1, 1), "SAME", dimension_numbers=conv_dn)
        h = mod.maximum(h + params["b1"], 0.0)
        h = max_pool(h, (2, 2), (2, 2), "VALID")
        h = lx.conv_general_dilated(h, params["w2"], (2, 2), ((1, 0), (0, 1)),
                                    dimension_numbers=conv_dn, feature_group_count=2)  # fmt: skip
        h = mod.maximum(h, 0.0).reshape(h.shape[0], -1)
        logits = h @ params["w3"]
        logp = logits - mod.log(mod.sum(mod.exp(logits), axis=1, keepdims=True))
        return -mod.mean(mod.sum(logp * labels, axis=1))

    return loss


def test_cnn_loss_gradient_matches_jax():
    rng = np.random.default_rng(0)
    params = {
        "w1": (rng.standard_normal((3, 3, 3, 8)) * 0.3).astype(np.float32),
        "b1": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "w2": (rng.standard_normal((2, 2, 4, 6)) * 0.3).astype(np.float32),
        "w3": (rng.standard_normal((6 * 2 * 2, 5)) * 0.3).astype(np.float32),
    }
    x = rng.standard_normal((4, 8, 8, 3)).astype(np.float32)
    labels = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 4)]
    ref = jax.jit(jax.value_and_grad(_cnn(jjnp, jax.lax, _max_pool_jax, NHWC)))(params, x, labels)
    loss = _cnn(jnp, lax, purejit.nn.max_pool, NHWC)
    got = purejit.jit(purejit.value_and_grad(loss))(params, x, labels)
    assert_tree_close(ref, got, rtol=1e-4, atol=1e-5, where="cnn value_and_grad")


def test_convolution_second_order_matches_jax():
    # grad of grad transposes the transposed convolutions again (groups, layouts, dilations)
    cases = [CASES[k] for k in (3, 6, 7, 9)]
    args = _args(cases)
    tangents = [rand_like(a, 50 + k) for k, a in enumerate(args)]

    def make(m, ad, lx):
        def loss(*xw):
            return sum(m.sum(m.tanh(y) ** 2) for y in _convs(lx, cases)(*xw))

        def inner(*xw):
            g = ad.grad(loss, argnums=tuple(range(len(xw))))(*xw)
            return sum(m.sum(a * t) for a, t in zip(g, tangents))

        return ad.grad(inner, argnums=tuple(range(len(args))))

    # The reference runs on JAX's CPU backend: on GPU, XLA finds no cuDNN algorithm for two
    # of the backward-input convolutions JAX's program contains (CUDNN_STATUS_BAD_PARAM on an
    # H200 with jax 0.11.2), so JAX's own GPU program does not compile.
    with jax.default_device(jax.devices("cpu")[0]):
        ref = jax.jit(make(jjnp, jax, jax.lax))(*args)
    got = purejit.jit(make(jnp, purejit, lax))(*args)
    assert_tree_close(ref, got, **dot_tol(1e-3, 1e-3), where="grad of grad")
