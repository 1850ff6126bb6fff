"""vmap over a batch of 0 examples: gather and dynamic_slice from a batched operand with
batched indices cannot take size-1 windows out of a size-0 dimension, so the batching rules
build the empty result from the per-example shape, as JAX does (optax's Hungarian algorithm
runs under vmap with k=0)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.lax as plax
import purejit.numpy as pnp

X = np.zeros((0, 3, 4), np.float32)
IDX = np.zeros((0, 2), np.int32)
U = np.zeros((0, 2, 2), np.float32)


def _lax(np_):
    return jax.lax if np_ is jjnp else plax


CASES = {
    "gather": (lambda np_: lambda a, j: a[j, 1], (X, IDX)),
    "gather_rows": (lambda np_: lambda a, j: np_.take(a, j, axis=0), (X, IDX)),
    "dynamic_slice": (
        lambda np_: lambda a, j: _lax(np_).dynamic_slice(a, (j[0], j[1]), (2, 2)),
        (X, IDX),
    ),
    "dynamic_update_slice": (
        lambda np_: lambda a, j, b: _lax(np_).dynamic_update_slice(a, b, (j[0], j[1])),
        (X, IDX, U),
    ),
    "scatter": (lambda np_: lambda a, j, b: a.at[j[0]].add(b[0, 0]), (X, IDX, U)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_over_zero_examples_matches_jax(name):
    make, args = CASES[name]
    want = jax.vmap(make(jjnp))(*args)
    for f in (purejit.vmap(make(pnp)), purejit.jit(purejit.vmap(make(pnp)))):
        got = f(*args)
        assert (got.shape, got.dtype) == (want.shape, want.dtype)


def test_vmap_over_zero_examples_inside_a_loop():
    """The empty batch flows on through later batched ops (a while loop, a reduction)."""

    def f(a, j):
        row = a[j[0]]
        return purejit.lax.fori_loop(0, 3, lambda k, acc: acc + row.sum(), 0.0)

    out = purejit.jit(purejit.vmap(f))(X, IDX)
    assert out.shape == (0,) and out.dtype == np.float32
