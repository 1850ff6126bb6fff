"""Elementwise functions whose bits changed between JAX releases (hypot, frexp, i0): purejit
follows the installed jax, so these compare against whichever jax runs the tests."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit.backend import versions

F32 = np.float32
LEGS = np.array(
    [0, -0.0, 1e-45, 1e-40, 7e-39, 3, -2.5, 1e-20, 1e20, 1e30, 3e38, np.inf, -np.inf, np.nan],
    F32,
)


def _same_bits(got, want, eager=False):
    got, want = np.asarray(got), np.asarray(want)
    if eager:
        # op by op, some jaxlib releases' CPU kernels flush subnormal results and round
        # exp-based functions an ulp apart: eager results are compared up to both
        tiny = float(ml_dtypes.finfo(got.dtype).tiny) if got.dtype.kind in "fV" else 0.0
        if tiny:
            f32 = np.float32 if got.dtype.itemsize <= 4 else np.float64
            g, w = got.astype(f32), want.astype(f32)
            g, w = np.where(np.abs(g) < tiny, 0, g), np.where(np.abs(w) < tiny, 0, w)
            np.testing.assert_allclose(g, w, rtol=2.5e-7 if f32 is np.float32 else 0, atol=0)
            return
    assert got.dtype == want.dtype and got.shape == want.shape
    ok = (got == want) | (np.isnan(got) & np.isnan(want))
    assert ok.all(), (got[~ok], want[~ok])
    # NaN's sign is not specified: only the other values' signs are compared
    assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16, np.float16])
def test_hypot_bits_eager_and_jit(dtype):
    with np.errstate(over="ignore"):
        a, b = (v.astype(dtype) for v in np.meshgrid(LEGS, LEGS))
    _same_bits(pnp.hypot(a, b), jnp.hypot(a, b), eager=True)
    _same_bits(purejit.jit(pnp.hypot)(a, b), jax.jit(jnp.hypot)(a, b))


@pytest.mark.parametrize("args", [(3, 4), (3.0, 4), (F32(3), 4), (np.float16(3), F32(4))])
def test_hypot_dtype_and_weak_type(args):
    got, want = pnp.hypot(*args), jnp.hypot(*args)
    assert got.dtype == want.dtype
    if versions.jax_release(2) >= (0, 12):
        # before 0.12 purejit's hypot of weak operands is strong (jax's is weak)
        assert got.weak_type == want.weak_type
    _same_bits(got, want)


@pytest.mark.parametrize("x, y", [(3.0, 4.0), (0.0, 0.0), (0.0, 2.0), (3e38, 3e38), (np.inf, 1)])
def test_hypot_derivatives(x, y):
    x, y = F32(x), F32(y)
    for argnums in (0, 1):
        _same_bits(purejit.grad(pnp.hypot, argnums)(x, y), jax.grad(jnp.hypot, argnums)(x, y))
    got = purejit.grad(purejit.grad(pnp.hypot))(x, y)
    _same_bits(got, jax.grad(jax.grad(jnp.hypot))(x, y))


def test_hypot_vmap():
    a, b = np.meshgrid(LEGS, LEGS)
    _same_bits(purejit.vmap(pnp.hypot)(a, b), jax.vmap(jnp.hypot)(a, b))


SUBNORMALS = np.array(
    [0, -0.0, 1e-45, -1e-45, 1e-40, -7e-39, 1.1754944e-38, 3, -2.5, np.inf, -np.inf, np.nan],
    F32,
)


@pytest.mark.parametrize("compiled", [False, True])
def test_frexp_subnormals(compiled):
    """jax 0.12 reads subnormals as signed zeros, (+-0, 0); 0.10/0.11 give (0.5, -149) for
    the smallest."""
    ours, theirs = (
        (purejit.jit(pnp.frexp), jax.jit(jnp.frexp)) if compiled else (pnp.frexp, jnp.frexp)
    )
    (m, e), (jm, je) = ours(SUBNORMALS), theirs(SUBNORMALS)
    _same_bits(m, jm)
    _same_bits(e, je)
    assert m.weak_type == jm.weak_type


BESSEL_X = np.array([0, -0.0, 1e-5, 1e-3, -1e-3, 0.5, -2, 3, 7.9, 8.1, 30], F32)


def _derivatives(grad, f, n):
    for _ in range(n):
        f = grad(f)
    return f


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("name", ["numpy.i0", "scipy.special.i0", "scipy.special.i1"])
def test_bessel_i0_i1_bits_and_derivative(name, order):
    if name == "numpy.i0" and versions.jax_release() < (0, 11, 2):
        pytest.skip("before jax 0.11.2 purejit's jnp.i0 is within 3e-6 of JAX's, not its bits")
    module, fn = name.rsplit(".", 1)
    ours = getattr({"numpy": pnp, "scipy.special": purejit.scipy.special}[module], fn)
    theirs = getattr({"numpy": jnp, "scipy.special": jax.scipy.special}[module], fn)
    got = purejit.vmap(_derivatives(purejit.grad, ours, order))(BESSEL_X)
    _same_bits(got, jax.vmap(_derivatives(jax.grad, theirs, order))(BESSEL_X), eager=True)
    got = purejit.jit(purejit.vmap(_derivatives(purejit.grad, ours, order)))(BESSEL_X)
    _same_bits(got, jax.jit(jax.vmap(_derivatives(jax.grad, theirs, order)))(BESSEL_X))


def test_i0_second_derivative():
    got = purejit.jit(purejit.vmap(purejit.grad(purejit.grad(pnp.i0))))(BESSEL_X)
    want = jax.jit(jax.vmap(jax.grad(jax.grad(jnp.i0))))(BESSEL_X)
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=0)


TANH_X = np.array([-30, -5, -1, -1e-3, 0, 1e-3, 0.5, 1, 3, 20, 40], F32)


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", ["tanh", "mish"])
def test_tanh_and_mish_derivatives(name, order):
    """jax >= 0.11.2 differentiates tanh as t (1 + y)(1 - y), and that product as -2 y dy."""
    ours = {"tanh": pnp.tanh, "mish": purejit.nn.mish}[name]
    theirs = {"tanh": jnp.tanh, "mish": jax.nn.mish}[name]
    got = purejit.jit(purejit.vmap(_derivatives(purejit.grad, ours, order)))(TANH_X)
    want = jax.jit(jax.vmap(_derivatives(jax.grad, theirs, order)))(TANH_X)
    if name == "mish" and order == 2:
        # within an ulp: the two products' cotangents are summed in another order
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=3e-8)
    else:
        _same_bits(got, want)
    if name == "tanh":
        _same_bits(purejit.vmap(_derivatives(purejit.grad, ours, order))(TANH_X),
                   jax.vmap(_derivatives(jax.grad, theirs, order))(TANH_X))  # fmt: skip


LDEXP_X = np.array([0, -0.0, 1e-45, -1e-40, 1e-38, 3, -2.5, np.inf, np.nan, 3e38, 1.5, 1], F32)
LDEXP_N = np.array([1, 3, 100, -3, 2, -150, 1, 5, 0, 1, -130, 127], np.int32)


@pytest.mark.parametrize("n_dtype", [np.int32, np.int8, np.uint16])
def test_ldexp_subnormals_and_range(n_dtype):
    n = np.abs(LDEXP_N).astype(n_dtype) if n_dtype == np.uint16 else LDEXP_N.astype(n_dtype)
    _same_bits(pnp.ldexp(LDEXP_X, n), jnp.ldexp(LDEXP_X, n))
    _same_bits(purejit.jit(pnp.ldexp)(LDEXP_X, n), jax.jit(jnp.ldexp)(LDEXP_X, n))
    with np.errstate(over="ignore"):
        half = LDEXP_X.astype(np.float16)
    _same_bits(pnp.ldexp(half, n), jnp.ldexp(half, n))


def test_ldexp_derivative():
    if versions.jax_release(2) < (0, 12):
        pytest.skip("before jax 0.12 purejit's ldexp has a zero derivative (jax's is 2**n)")
    x, n = np.array([3.0, -0.5, 1e30], F32), np.array([2, -3, 100], np.int32)
    got = purejit.jit(purejit.vmap(purejit.grad(pnp.ldexp)))(x, n)
    _same_bits(got, jax.jit(jax.vmap(jax.grad(jnp.ldexp)))(x, n))


def test_frexp_derivative():
    if versions.jax_release(2) < (0, 12):
        pytest.skip("before jax 0.12 purejit's frexp mantissa has a zero derivative")
    x = np.array([3.0, 0.75, -1e30, 0.0, 1e-40, 2e-38], F32)

    def ours(v):
        return pnp.frexp(v)[0]

    def theirs(v):
        return jnp.frexp(v)[0]

    _same_bits(purejit.vmap(purejit.grad(ours))(x), jax.vmap(jax.grad(theirs))(x))
    _same_bits(
        purejit.jit(purejit.vmap(purejit.grad(ours)))(x), jax.jit(jax.vmap(jax.grad(theirs)))(x)
    )
