"""`lax.reduce_precision` against `jax.lax.reduce_precision`: bits, dtypes, weak types,
derivatives, batching and errors."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest

import purejit
from purejit import lax

BF16 = np.dtype(ml_dtypes.bfloat16)
FORMATS = [(5, 10), (8, 7), (5, 2), (4, 3), (1, 0), (3, 1), (8, 23), (11, 52)]


def _inputs(dt):
    """Specials, ties, overflow and underflow of narrow formats, and random bit patterns."""
    dt = np.dtype(dt)
    ut = {2: np.uint16, 4: np.uint32}[dt.itemsize]
    specials = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, -np.nan, 1 + 2**-11,
                1 + 3 * 2**-11, 65504.0, 65520.0, 2.0**-14, 1.5 * 2**-15, 3e38, 1e-30]  # fmt: skip
    with np.errstate(over="ignore"):
        s = np.array(specials).astype(dt)
    bits = np.random.default_rng(dt.itemsize).integers(0, 2 ** (8 * dt.itemsize), 512)
    return np.concatenate([s, bits.astype(ut).view(dt)])


def _bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


@pytest.mark.parametrize("dt", [np.float32, BF16, np.float16], ids=["f32", "bf16", "f16"])
def test_bits_match_jax_eager_and_jit(dt):
    x = _inputs(dt)

    def run(lx):
        return lambda x: [lx.reduce_precision(x, e, m) for e, m in FORMATS]

    want = jax.jit(run(jax.lax))(x)
    got_jit = purejit.jit(run(lax))(x)
    got_eager = run(lax)(x)
    for (e, m), w, gj, ge in zip(FORMATS, want, got_jit, got_eager, strict=True):
        w = np.asarray(w)
        nan = np.isnan(w.astype(np.float32))
        for path, g in (("jit", gj), ("eager", ge)):
            g = np.asarray(g)
            assert g.dtype == w.dtype, (path, e, m)
            # NaN stays NaN (bfloat16 payloads are XLA-CPU's canonical NaN on both sides)
            assert (np.isnan(g.astype(np.float32)) == nan).all(), (path, e, m)
            np.testing.assert_array_equal(
                _bits(g)[~nan], _bits(w)[~nan], err_msg=f"{path} e{e}m{m}"
            )


def test_interpreter_is_bit_exact_on_every_float16():
    """The NumPy reference (purejit.ir's interpreter) against XLA, every float16 pattern."""
    from purejit.ir import Builder, TensorType, interpret, verify

    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    b = Builder("rp")
    p = b.param(TensorType(x.shape, x.dtype))
    outs = [b.op("reduce_precision", [p], {"exponent_bits": e, "mantissa_bits": m})[0]
            for e, m in FORMATS]  # fmt: skip
    got = interpret(verify(b.finish(outs)), x)
    want = jax.jit(lambda x: [jax.lax.reduce_precision(x, e, m) for e, m in FORMATS])(x)
    for (e, m), g, w in zip(FORMATS, got, want, strict=True):
        np.testing.assert_array_equal(_bits(g), _bits(w), err_msg=f"e{e}m{m}")


def test_weak_type_dtype_and_finfo_form_match_jax():
    cases = [(2.0, 5, 10), (np.float16(3.1), 4, 3), (np.ones(3, np.float32) / 3, 5, 2)]
    for x, e, m in cases:
        w, g = jax.lax.reduce_precision(x, e, m), lax.reduce_precision(x, e, m)
        assert g.dtype == w.dtype and g.weak_type == w.weak_type and g.shape == w.shape
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    fi = ml_dtypes.finfo(ml_dtypes.bfloat16)
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    got = lax.reduce_precision(x, exponent_bits=fi.nexp, mantissa_bits=fi.nmant)
    np.testing.assert_array_equal(np.asarray(got), x.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_errors_match_jax():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="reduce_precision does not accept dtype int32"):
        lax.reduce_precision(np.ones(3, np.int32), 5, 10)
    with pytest.raises(ValueError, match="exponent_bits must be positive"):
        lax.reduce_precision(x, 0, 10)
    with pytest.raises(ValueError, match="mantissa_bits must be non-negative"):
        lax.reduce_precision(x, 5, -1)
    with pytest.raises(TypeError, match="mantissa_bits must be an integer"):
        lax.reduce_precision(x, 5, 2.5)
    with pytest.raises(TypeError, match="reduce_precision does not accept dtype complex64"):
        lax.reduce_precision(np.ones(3, np.complex64), 5, 10)
    with pytest.raises(purejit.errors.PurejitTypeError, match="must be a concrete integer"):
        purejit.jit(lambda x, m: lax.reduce_precision(x, 5, m))(x, 3)


def test_derivatives_and_vmap_match_jax():
    x = np.array([0.3, 1.7, -2.2, 5.5], np.float32)
    t = np.array([1.001, -0.37, 2.5, 1e-3], np.float32)

    def f(lx, m):
        return lambda x: lx.reduce_precision(x * x, 5, 2) * m.sin(x)

    import jax.numpy as jjnp

    import purejit.numpy as pnp

    wj = jax.jvp(f(jax.lax, jjnp), (x,), (t,))
    gj = purejit.jit(lambda x, t: purejit.jvp(f(lax, pnp), (x,), (t,)))(x, t)
    for w, g in zip(wj, gj):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    # the tangent itself is rounded: jvp of the bare op is reduce_precision of t
    _, tj = jax.jvp(lambda x: jax.lax.reduce_precision(x, 5, 2), (x,), (t,))
    _, tp = purejit.jvp(lambda x: lax.reduce_precision(x, 5, 2), (x,), (t,))
    np.testing.assert_array_equal(np.asarray(tp), np.asarray(tj))
    # reverse mode: the transpose rounds the cotangent (JAX's deflinear)
    gw = jax.grad(lambda x: (jax.lax.reduce_precision(x, 5, 2) * t).sum())(x)
    gp = purejit.jit(purejit.grad(lambda x: (lax.reduce_precision(x, 5, 2) * t).sum()))(x)
    np.testing.assert_array_equal(np.asarray(gp), np.asarray(gw))
    xs = np.stack([x, t, -x])
    vw = jax.vmap(lambda r: jax.lax.reduce_precision(r, 4, 1), in_axes=1)(xs)
    vp = purejit.vmap(lambda r: lax.reduce_precision(r, 4, 1), in_axes=1)(xs)
    np.testing.assert_array_equal(np.asarray(vp), np.asarray(vw))


def test_scatter_sub_matches_jax_with_gradient():
    """`lax.scatter_sub` (from the same change as reduce_precision's coverage entry)."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([[0], [2], [0]], np.int32)
    u = np.linspace(-1, 2, 9, dtype=np.float32).reshape(3, 3)

    def f(lx):
        dn = lx.ScatterDimensionNumbers(
            update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
        )
        return lambda x, u: lx.scatter_sub(x, idx, u, dn)

    np.testing.assert_array_equal(np.asarray(purejit.jit(f(lax))(x, u)), f(jax.lax)(x, u))
    xi, ui = x.astype(np.uint32), np.abs(u).astype(np.uint32) + 5  # wraps below zero
    np.testing.assert_array_equal(np.asarray(f(lax)(xi, ui)), f(jax.lax)(xi, ui))
    gj = jax.grad(lambda x, u: (f(jax.lax)(x, u) ** 2).sum(), argnums=(0, 1))(x, u)
    gp = purejit.grad(lambda x, u: (f(lax)(x, u) ** 2).sum(), argnums=(0, 1))(x, u)
    for a, b in zip(gp, gj):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
