"""Derivatives of the linear-algebra ops (cholesky, triangular_solve, lu, qr, eigh, svd, eig)
and of the `jnp.linalg` functions built on them, batched, real and complex, against JAX and
finite differences."""

from __future__ import annotations

import jax
import jax.lax.linalg as jll
import jax.numpy as jjnp
import numpy as np
import pytest
from ad_compare import check_ad, rand_like
from tolerance import dot_tol

import purejit
import purejit.lax.linalg as pll
import purejit.numpy as jnp
from purejit.test_util import check_grads
from purejit.transforms.autodiff import NonDifferentiableError


def _spd(m, x):
    n = x.shape[-1]
    return x @ m.swapaxes(x, -1, -2).conj() + 3 * m.eye(n, dtype=x.dtype)


def _make(m, lin):
    """Every factorization and solver on a square batch x, a right-hand side b, a tall batch
    t and a wide batch w."""

    def f(x, b, t, w):
        eye = m.eye(4, dtype=x.dtype)
        a = m.tril(x) + 3 * eye
        au = m.swapaxes(a, -1, -2)
        bt = m.swapaxes(b, -1, -2)
        return {
            "cholesky": m.linalg.cholesky(_spd(m, x)),
            "tri": [
                lin.triangular_solve(a, b, left_side=True, lower=True),
                lin.triangular_solve(a, b, left_side=True, lower=True, transpose_a=True,
                                     conjugate_a=True),
                lin.triangular_solve(au, bt, left_side=False, lower=False),
                lin.triangular_solve(a, b, left_side=True, lower=True, unit_diagonal=True,
                                     transpose_a=True),
            ],
            "solve": [m.linalg.solve(x + 3 * eye, b), m.linalg.inv(x + 3 * eye),
                      m.linalg.det(x), m.linalg.slogdet(x + 3 * eye)[1]],
            "lu": [lin.lu(x)[0], lin.lu(t)[0], lin.lu(w)[0]],
            "qr": [*m.linalg.qr(x), *m.linalg.qr(t), *m.linalg.qr(w),
                   *m.linalg.qr(t, mode="complete")],
            "eigh": [*m.linalg.eigh(x), m.linalg.eigvalsh(_spd(m, t[:, :3]))],
            "svd": [*m.linalg.svd(x), *m.linalg.svd(t, full_matrices=False),
                    *m.linalg.svd(w, full_matrices=False), m.linalg.svd(t, compute_uv=False)],
            "eigvals": m.linalg.eigvals(x),
        }  # fmt: skip

    return f


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_linalg_jvp_and_vjp_match_jax(dtype):
    args = [
        rand_like(np.zeros(s, dtype), k)
        for k, s in enumerate([(2, 4, 4), (2, 4, 3), (2, 5, 3), (2, 3, 5)])
    ]
    # JAX's lu/qr/svd rules multiply at default precision: TF32 on GPU (complex64 too)
    check_ad(_make(jnp, pll), _make(jjnp, jll), *args, **dot_tol(1e-3, 1e-3))


def test_linalg_errors_where_jax_does_not_differentiate():
    x = rand_like(np.zeros((3, 3), np.float32), 7)
    # eigenvalues of a general matrix are differentiable, its eigenvectors are not (JAX needs
    # enable_eigvec_derivs=True, which purejit's op does not carry)
    g = purejit.grad(lambda x: jnp.sum(jnp.real(jnp.linalg.eig(x)[0])))(x)
    ref = jax.grad(lambda x: jjnp.sum(jjnp.real(jjnp.linalg.eigvals(x))))(x)
    np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-4, atol=1e-4)
    with pytest.raises(NonDifferentiableError, match="eigvec_derivs"):
        purejit.grad(lambda x: jnp.sum(jnp.abs(jnp.linalg.eig(x)[1])))(x)
    # full_matrices singular vectors of a non-square matrix: NotImplementedError in both
    t = x[:, :2]
    with pytest.raises(NotImplementedError, match="full matrices"):
        jax.jvp(lambda t: jjnp.linalg.svd(t)[0], (t,), (t,))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        purejit.jvp(lambda t: jnp.linalg.svd(t)[0], (t,), (t,))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_check_grads_in_double_precision(dtype):
    # finite differences are tight in 64 bits: every factorization, both modes
    with jax.enable_x64(True):
        purejit.config.update("enable_x64", True)
        try:
            x = rand_like(np.zeros((2, 3, 3), dtype), 8)
            t = rand_like(np.zeros((4, 3), dtype), 9)
            w = rand_like(np.zeros((2, 4), dtype), 10)

            @purejit.jit
            def f(x, t, w):
                s = _spd(jnp, x)
                v = jnp.linalg.eigh(s)[1]
                u, sv, vh = jnp.linalg.svd(t, full_matrices=False)
                return [
                    jnp.linalg.cholesky(s),
                    v * v.conj(),  # phase-free
                    sv,
                    u @ vh,
                    *jnp.linalg.qr(t, mode="complete"),
                    *jnp.linalg.qr(w),
                    pll.lu(x)[0],
                    jnp.linalg.inv(s),
                    jnp.linalg.solve(s, x),
                    jnp.fft.rfft(jnp.real(t), axis=0),
                    jnp.fft.ifft2(x),
                ]

            check_grads(f, (x, t, w), order=1, modes=("fwd", "rev"))
        finally:
            purejit.config.update("enable_x64", False)
