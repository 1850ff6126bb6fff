"""purejit.lax.linalg.tridiagonal_solve (ir/ops/tridiagonal.py) against JAX: values on CPU
bit for bit (the same LAPACK gtsv), under jit and eagerly, batched and under vmap; gradients
in every operand bit for bit; NaN for a singular matrix; the NumPy reference rule; on a GPU,
cuSPARSE's gtsv2 and, below 3 rows, the Thomas recurrence, against JAX's."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
from purejit import lax as plax
from purejit.ir import all_ops

RNG = np.random.default_rng(5)


def _system(batch, m, n, dtype):
    def draw(shape):
        x = RNG.normal(size=shape)
        if np.issubdtype(dtype, np.complexfloating):
            x = x + 1j * RNG.normal(size=shape)
        return x.astype(dtype)

    dl, du, b = draw(batch + (m,)), draw(batch + (m,)), draw(batch + (m, n))
    return dl, (draw(batch + (m,)) + 4).astype(dtype), du, b


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True), purejit.enable_x64(True):
        yield


CASES = [
    ((), 5, 2, np.float32),
    ((3,), 4, 1, np.float64),
    ((), 1, 2, np.complex64),
    ((2,), 2, 3, np.complex128),
]


@pytest.mark.parametrize(("batch", "m", "n", "dtype"), CASES, ids=str)
def test_solve_equals_jax_bit_for_bit(batch, m, n, dtype):
    args = _system(batch, m, n, dtype)
    want = jax.jit(jax.lax.linalg.tridiagonal_solve)(*args)
    _same(purejit.jit(plax.linalg.tridiagonal_solve)(*args), want)
    _same(plax.linalg.tridiagonal_solve(*args), want)
    dense = np.zeros(batch + (m, m), dtype)
    for idx in np.ndindex(*batch):
        dl, d, du = (x[idx] for x in args[:3])
        dense[idx] = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
    np.testing.assert_allclose(dense @ np.asarray(want), args[3], rtol=1e-4, atol=1e-4)
    (ref,) = all_ops()["tridiagonal_solve"].reference(list(args), {}, [], None)
    np.testing.assert_allclose(ref, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m", [1, 4])
def test_gradients_equal_jax_bit_for_bit(m):
    args = _system((2,), m, 3, np.float64)

    def loss(lax):
        return lambda *a: (lax.linalg.tridiagonal_solve(*a) ** 2).sum()

    want = jax.jit(jax.grad(loss(jax.lax), argnums=(0, 1, 2, 3)))(*args)
    got = purejit.jit(purejit.grad(loss(plax), argnums=(0, 1, 2, 3)))(*args)
    for g, w in zip(got, want, strict=True):
        _same(g, w)


def test_vmap_with_shared_diagonals_equals_jax():
    dl, d, du, b = _system((), 5, 2, np.float32)
    bs = RNG.normal(size=(3, 5, 2)).astype(np.float32)

    def f(lax):
        return lambda b: lax.linalg.tridiagonal_solve(dl, d, du, b)

    want = jax.jit(jax.vmap(f(jax.lax)))(bs)
    got = purejit.jit(purejit.vmap(f(plax)))(bs)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    _same(got[1], jax.jit(f(jax.lax))(bs[1]))


def test_singular_gives_nan_and_errors_name_the_operand():
    dl, d, du, b = _system((), 3, 1, np.float32)
    d = np.zeros_like(d)
    dl, du = np.zeros_like(dl), np.zeros_like(du)
    assert np.isnan(np.asarray(purejit.jit(plax.linalg.tridiagonal_solve)(dl, d, du, b))).all()
    assert np.isnan(np.asarray(jax.lax.linalg.tridiagonal_solve(dl, d, du, b))).all()
    with pytest.raises(TypeError, match="tridiagonal_solve: du float32\\[2\\]"):
        plax.linalg.tridiagonal_solve(dl, d, du[:2], b)
    with pytest.raises(NotImplementedError, match="perturb_singular"):
        plax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True)


@pytest.mark.skipif(purejit.default_backend() != "gpu", reason="needs a GPU")
@pytest.mark.parametrize("m", [1, 2, 6])
def test_gpu_equals_jax_bit_for_bit(m):
    args = _system((2,), m, 3, np.float32)
    want = jax.jit(jax.lax.linalg.tridiagonal_solve)(*args)
    _same(purejit.jit(plax.linalg.tridiagonal_solve)(*args), want)


@pytest.mark.parametrize("m", [1, 2])
def test_gpu_small_systems_thomas_recurrence_solves(m):
    """The IR program the CUDA lowering emits below 3 rows (where cuSPARSE's gtsv2 does not
    apply), run by the reference interpreter here: it solves the system."""
    from purejit.ir import Builder, TensorType, interpret, verify

    from purejit.backend.lowering.tridiagonal import _thomas

    args = _system((2,), m, 3, np.float64)
    b = Builder("thomas")
    params = [b.param(TensorType(x.shape, x.dtype)) for x in args]
    fn = verify(b.finish(list(_thomas(b, *params))))
    (got,) = interpret(fn, *args)
    want = jax.jit(jax.lax.linalg.tridiagonal_solve)(*args)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
