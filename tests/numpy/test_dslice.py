"""`purejit.ds` (JAX's `jax.ds`): dynamic-start slices in indexing and indexed updates,
against JAX, including its bounds rules (reads clamp, unit-stride windows that do not fit
are dropped whole by updates, strided ones element by element)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pjnp

X = np.arange(10.0, dtype=np.float32)
Y = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def both(make, *args):
    got = purejit.jit(make(purejit, pjnp))(*args)
    want = jax.jit(make(jax, jjnp))(*args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_ds_builds_slices_as_jax():
    assert purejit.ds(None) == jax.ds(None) == slice(None)
    s = purejit.ds(3)
    assert (s.start, s.size, s.stride) == (0, 3, 1)
    with pytest.raises(ValueError, match="Non-static stride"):
        purejit.ds(1, 2, 1.5)


@pytest.mark.parametrize("i", [-20, -4, -1, 0, 3, 8, 9])
def test_reads_match_jax(i):
    both(lambda m, n: lambda x, i: n.asarray(x)[m.ds(i, 2)], X, np.int32(i))
    both(lambda m, n: lambda x, i: n.asarray(x)[m.ds(i, 3, 2)], X, np.int32(i))
    both(lambda m, n: lambda y, i: n.asarray(y)[1, m.ds(i, 2)], Y, np.int32(i))
    both(lambda m, n: lambda y, i: n.asarray(y)[m.ds(i, 2), None, ..., 1:3], Y, np.int32(i))


@pytest.mark.parametrize("i", [-2, -1, 0, 1, 2, 5, 8, 9])
def test_updates_match_jax(i):
    both(lambda m, n: lambda y, i: n.asarray(y).at[m.ds(i, 2)].set(0.0), Y, np.int32(i))
    both(lambda m, n: lambda x, i: n.asarray(x).at[m.ds(i, 2, 3)].add(5.0), X, np.int32(i))


def test_grad_and_vmap_through_ds():
    def f(m, n):
        return lambda x, i: (n.asarray(x)[m.ds(i, 3)] ** 2).sum()

    got = purejit.grad(f(purejit, pjnp))(X, np.int32(8))
    want = jax.grad(f(jax, jjnp))(X, np.int32(8))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    got = purejit.vmap(lambda i: pjnp.asarray(X)[purejit.ds(i, 2)])(np.arange(4, dtype=np.int32))
    want = jax.vmap(lambda i: jjnp.asarray(X)[jax.ds(i, 2)])(np.arange(4, dtype=np.int32))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_updates_mixing_ds_with_integer_indices_are_refused():
    with pytest.raises(NotImplementedError, match="dynamic_update_slice"):
        pjnp.asarray(Y).at[1, purejit.ds(0, 2)].set(0.0)
