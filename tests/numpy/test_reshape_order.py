"""reshape / ravel / flatten with order='F' read and write column-major as NumPy and JAX do,
eager, under jit, grad and vmap; order='A' and ravel's order='K' raise as in JAX."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("shape", [(4, 6), (24,), (-1,), (2, 12), (4, 3, 2), (-1, 4), (1, 24, 1)])
def test_reshape_order_f_matches_numpy_and_jax(shape):
    want = np.reshape(X, shape, order="F")
    np.testing.assert_array_equal(pnp.reshape(X, shape, order="F"), want)
    np.testing.assert_array_equal(purejit.jit(lambda a: a.reshape(shape, order="F"))(X), want)
    np.testing.assert_array_equal(want, jjnp.reshape(X, shape, order="F"))


def test_ravel_and_flatten_order_f():
    want = np.ravel(X, order="F")
    np.testing.assert_array_equal(pnp.ravel(X, order="F"), want)
    np.testing.assert_array_equal(pnp.asarray(X).flatten(order="F"), want)
    np.testing.assert_array_equal(pnp.asarray(X).ravel(order="F"), want)


def test_reshape_order_f_under_grad_and_vmap():
    w = np.arange(24, dtype=np.float32).reshape(4, 6)
    g = purejit.grad(lambda a: (pnp.reshape(a, (4, 6), order="F") * w).sum())(X)
    np.testing.assert_array_equal(
        g, jax.grad(lambda a: (jjnp.reshape(a, (4, 6), order="F") * w).sum())(X)
    )
    np.testing.assert_array_equal(g, np.reshape(w, X.shape, order="F"))
    batched = purejit.vmap(lambda a: pnp.reshape(a, (4, 3), order="F"))(X)
    np.testing.assert_array_equal(batched, np.stack([np.reshape(x, (4, 3), order="F") for x in X]))


def test_unsupported_orders_raise_as_in_jax():
    with pytest.raises(NotImplementedError, match="order='A'"):
        pnp.reshape(X, (4, 6), order="A")
    with pytest.raises(NotImplementedError, match="order='A'"):
        pnp.ravel(X, order="A")
    with pytest.raises(NotImplementedError, match="order='K'"):
        pnp.ravel(X, order="K")
    with pytest.raises(ValueError, match="'Z'"):
        pnp.reshape(X, (4, 6), order="Z")
