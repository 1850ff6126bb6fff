"""Derivatives of gather, scatter, sort, top_k and windowed reductions against JAX."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
from ad_compare import check_ad, rand_like

import purejit.numpy as jnp
from purejit import lax

X = rand_like(np.zeros((4, 5), np.float32), 3)
IDX = np.array([3, 0, 3, 1], np.int32)


def test_gather_and_scatter_match_jax():
    def make(mod):
        def f(x, u):
            x = mod.asarray(x)
            return [
                x[IDX],
                x[:, IDX],
                x[IDX, IDX],
                mod.take_along_axis(x, mod.argsort(x, axis=1), axis=1),
                x.at[IDX].add(u),
                x.at[IDX].set(u),  # repeated index 3: the last write wins in both
                x.at[IDX].max(u),
                x.at[IDX].min(u * 0 + x[IDX]),  # ties with the operand
                x.at[np.array([0, 2])].multiply(u[:2], unique_indices=True),
                x.at[np.array([1, 7])].add(u[:2]),  # an out-of-bounds index is dropped
            ]

        return f

    check_ad(make(jnp), make(jjnp), X, X[:4] * 0.5)


def test_sort_top_k_and_cumulative_ops_match_jax():
    def make(mod, lx):
        def f(x):
            return [
                mod.sort(x, axis=0),
                lx.top_k(x, 2)[0],
                mod.cumsum(x, axis=1),
                lx.cumsum(x, axis=0, reverse=True),
                mod.cumprod(x, axis=1),
                lx.cummax(x, axis=1),
                lx.cummin(x, axis=0, reverse=True),
                mod.max(x, axis=0),
            ]

        return f

    check_ad(make(jnp, lax), make(jjnp, jax.lax), X)
