"""jax.lax.linalg functions purejit composes from IR ops (purejit/lax/linalg.py):
symmetric_product and cholesky_update, against JAX on CPU, bit for bit (JAX computes them
from the same formulas there), under jit and eagerly."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
from purejit import lax as plax

RNG = np.random.default_rng(11)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(got, want)


def test_symmetric_product_equals_jax_bit_for_bit():
    a = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    c = RNG.normal(size=(2, 4, 4)).astype(np.float32)
    c = c + np.swapaxes(c, -1, -2)
    for kw in ({}, {"alpha": 0.5, "beta": 2.0, "symmetrize_output": True}):
        want = jax.jit(lambda a, c, kw=kw: jax.lax.linalg.symmetric_product(a, c, **kw))(a, c)
        got = purejit.jit(lambda a, c, kw=kw: plax.linalg.symmetric_product(a, c, **kw))(a, c)
        _same(got, want)
        _same(plax.linalg.symmetric_product(a, c, **kw), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_cholesky_update_equals_jax_bit_for_bit(dtype):
    with jax.enable_x64(True), purejit.enable_x64(True):
        m = RNG.normal(size=(5, 5))
        r = np.linalg.cholesky(m @ m.T + 5 * np.eye(5)).T.astype(dtype)
        w = RNG.normal(size=5).astype(dtype)
        w[2] = 0  # a rotation by (1, 0)
        want = jax.jit(jax.lax.linalg.cholesky_update)(r, w)
        _same(purejit.jit(plax.linalg.cholesky_update)(r, w), want)
        _same(plax.linalg.cholesky_update(r, w), want)  # one program eagerly too
        got = np.asarray(want, np.float64)
        rtol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got.T @ got, r.T @ r + np.outer(w, w), rtol=rtol, atol=rtol)
        with pytest.raises(TypeError, match="cholesky_update"):
            plax.linalg.cholesky_update(r, w[:4])
