"""Complex convolutions against JAX: emitted as three real convolutions (Gauss's product), as
JAX lowers them on CPU and GPU (XLA's GPU backend has no complex convolution), so the bits
agree with JAX's on CPU; eagerly, under jit and vmap, in complex64 and complex128, with feature
and batch groups, and through jnp.convolve."""

import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import lax as jlax
from tolerance import dot_tol

import purejit
import purejit.numpy as pnp
from purejit import errors
from purejit import lax as plax
from purejit.backend import pjrt

RNG = np.random.default_rng(5)
NHWC = ("NHWC", "HWIO", "NHWC")


def _c(*shape, dt=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


# (lhs shape, rhs shape, conv_general_dilated keywords)
CASES = {
    "plain": ((2, 3, 7, 6), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    "strided dilated": ((2, 3, 9, 8), (4, 3, 3, 2), dict(
        window_strides=(2, 1), padding=((1, 2), (0, -1)), lhs_dilation=(2, 1),
        rhs_dilation=(1, 2))),
    "feature groups": ((2, 7, 6, 6), (3, 2, 2, 6), dict(
        window_strides=(2, 2), padding="SAME", dimension_numbers=NHWC, feature_group_count=3)),
    "batch groups": ((4, 3, 7, 6), (6, 3, 3, 2), dict(
        window_strides=(2, 1), padding=((1, 0), (2, 1)), batch_group_count=2)),
    "1-d": ((3, 4, 10), (6, 2, 3), dict(window_strides=(3,), padding="SAME",
                                        feature_group_count=2)),
}  # fmt: skip


def _args(dt):
    return [a for xs, ws, _ in CASES.values() for a in (_c(*xs, dt=dt), _c(*ws, dt=dt))]


def _all(lax):
    def f(*xw):
        return [
            lax.conv_general_dilated(xw[2 * k], xw[2 * k + 1], **kw)
            for k, (_, _, kw) in enumerate(CASES.values())
        ]

    return f


def _assert_bits(ref, got, where):
    r, g = np.asarray(ref), np.asarray(got)
    assert r.dtype == g.dtype and r.shape == g.shape, f"{where}: {g.dtype}{g.shape}"
    if pjrt.is_gpu():  # JAX's reference runs at TF32 there too, but kernels may differ
        np.testing.assert_allclose(g, r, **dot_tol(), err_msg=where)
    else:
        np.testing.assert_array_equal(g, r, err_msg=where)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["c64", "c128"])
def test_complex_conv_matches_jax_bitwise(dt):
    with jax.enable_x64(True), purejit.enable_x64(True):
        args = _args(dt)
        refs = jax.jit(_all(jlax))(*args)
        outs = purejit.jit(_all(plax))(*args)
        for name, r, g in zip(CASES, refs, outs):
            _assert_bits(r, g, name)
        # eagerly: one op, compiled on its own
        _assert_bits(refs[2], _all(plax)(*args)[2], "eager")


def test_complex_conv_is_emitted_as_three_real_convolutions():
    x, w = _c(2, 3, 7, 6), _c(4, 3, 3, 2)
    text = purejit.jit(lambda a, b: plax.conv(a, b, (1, 1), "SAME")).lower(x, w).as_text()
    convs = [ln for ln in text.splitlines() if "stablehlo.convolution" in ln]
    assert len(convs) == 3, text
    assert not any(re.search(r"->\s*tensor<[^>]*complex", ln) for ln in convs), text


def test_complex_conv_vmap_and_preferred_element_type():
    (xs, ws, kw) = CASES["feature groups"]
    x, w = _c(3, *xs), _c(*ws)

    def f(lax, vmap):
        return vmap(lambda a: lax.conv_general_dilated(a, w, **kw))

    ref = jax.jit(f(jlax, jax.vmap))(x)
    _assert_bits(ref, purejit.jit(f(plax, purejit.vmap))(x), "vmap")
    with jax.enable_x64(True), purejit.enable_x64(True):
        a, b = _c(2, 3, 7, 6), _c(4, 3, 3, 2)

        def g(lax):
            return lambda a, b: lax.conv(a, b, (1, 1), "SAME", preferred_element_type=np.complex128)

        ref = jax.jit(g(jlax))(a, b)
        got = purejit.jit(g(plax))(a, b)
        assert got.dtype == np.complex128
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6, atol=1e-6)
        with pytest.raises(errors.PurejitTypeError, match="complex operands need a complex"):
            plax.conv(a, b, (1, 1), "SAME", preferred_element_type=np.float32)


def test_complex_numpy_convolve_matches_jax():
    a, v = _c(11), _c(4)
    modes = ("full", "same", "valid")

    def f(m):
        return lambda a, v: [m.convolve(a, v, mode) for mode in modes] + [m.correlate(a, v)]

    for k, (r, g) in enumerate(zip(jax.jit(f(jjnp))(a, v), purejit.jit(f(pnp))(a, v))):
        _assert_bits(r, g, f"case {k}")
