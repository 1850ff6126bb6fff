"""JVP and VJP of the linalg and fft ops (through purejit.numpy.linalg, purejit.lax.linalg
and purejit.numpy.fft) against JAX's, with random tangents and cotangents."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from ad_compare import check_ad

import purejit
import purejit.numpy as pjnp

RNG = np.random.default_rng(3)


def _spd(shape):
    a = RNG.normal(size=shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(np.float32)


A = (RNG.normal(size=(2, 4, 4)) + 3 * np.eye(4)).astype(np.float32)
S = _spd((2, 4, 4))
R = RNG.normal(size=(2, 5, 3)).astype(np.float32)
B = RNG.normal(size=(2, 4, 2)).astype(np.float32)


def _both(fn):
    return fn(pjnp, purejit.lax), fn(jjnp, jax.lax)


CASES = {
    "solve": (lambda n, lx: n.linalg.solve, (A, B)),
    "inv": (lambda n, lx: n.linalg.inv, (A,)),
    "det": (lambda n, lx: n.linalg.det, (A,)),
    "slogdet": (lambda n, lx: lambda a: tuple(n.linalg.slogdet(a)), (A,)),
    "cholesky": (lambda n, lx: n.linalg.cholesky, (S,)),
    "eigh": (lambda n, lx: lambda a: tuple(n.linalg.eigh(a)), (S,)),
    "qr": (lambda n, lx: lambda a: tuple(n.linalg.qr(a)), (R,)),
    "svd": (lambda n, lx: lambda a: tuple(n.linalg.svd(a, full_matrices=False)), (R,)),
    "svd wide": (
        lambda n, lx: lambda a: tuple(n.linalg.svd(n.swapaxes(a, -1, -2), full_matrices=False)),
        (R,),
    ),
    "svdvals": (lambda n, lx: n.linalg.svdvals, (R,)),
    "eigvals": (lambda n, lx: n.linalg.eigvals, (S,)),
    "lu": (lambda n, lx: lambda a: lx.linalg.lu(a)[0], (R,)),
    "lu wide": (lambda n, lx: lambda a: lx.linalg.lu(n.swapaxes(a, -1, -2))[0], (R,)),
    "triangular_solve": (
        lambda n, lx: (
            lambda a, b: lx.linalg.triangular_solve(
                a, b, left_side=True, lower=True, transpose_a=True
            )
        ),
        (A, B),
    ),
    "triangular_solve right": (
        lambda n, lx: (
            lambda a, b: lx.linalg.triangular_solve(
                a, n.swapaxes(b, -1, -2), left_side=False, lower=False, unit_diagonal=True
            )
        ),
        (A, B),
    ),
    "fft": (lambda n, lx: lambda x: n.fft.fft(x), (R,)),
    "ifft2": (lambda n, lx: lambda x: n.fft.ifft2(x), (R,)),
    "rfft": (lambda n, lx: lambda x: n.fft.rfft(x), (R,)),
    "rfftn even": (lambda n, lx: lambda x: n.fft.rfftn(x[..., :2]), (R,)),
    "irfft": (lambda n, lx: lambda x: n.fft.irfft(x), (R,)),
    "irfft odd": (lambda n, lx: lambda x: n.fft.irfft(x, n=5), (R,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_fft_derivatives_match_jax(name):
    make, args = CASES[name]
    f_pj, f_jax = _both(make)
    check_ad(f_pj, f_jax, *args, rtol=2e-3, atol=2e-3)


def test_grad_of_logdet_and_solve():
    def loss(m):
        def f(a, b):
            return m.sum(m.linalg.solve(a, b) ** 2) + m.linalg.slogdet(a)[1].sum()

        return f

    want = jax.grad(loss(jjnp), argnums=(0, 1))(A, B)
    got = purejit.grad(loss(pjnp), argnums=(0, 1))(A, B)
    for w, g in zip(want, got):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-3, atol=2e-3)


def test_eigenvector_derivatives_raise():
    with pytest.raises(NotImplementedError, match="eigenvectors"):
        purejit.jvp(lambda a: pjnp.linalg.eig(a)[1], (S[0],), (S[0],))
