"""`purejit.scipy.cluster.vq`, as `jax.scipy.cluster.vq`: `vq`, the nearest code of each
observation, computed as JAX computes it (Euclidean norms of the differences, argmin)."""

from __future__ import annotations

import operator

import purejit.numpy as jnp
from purejit.numpy._grids_and_dtypes import _promote_inexact
from purejit.transforms.vmap import vmap

__all__ = ["vq"]


def vq(obs, code_book, check_finite: bool = True):
    """Assign each observation to its nearest code in `code_book`, as
    `scipy.cluster.vq.vq`.

    Args:
      obs: observations, (M,) or (M, N) features.
      code_book: codes, (K,) or (K, N), of the rank of `obs`.
      check_finite: ignored (as in JAX: a check of the values cannot run under jit).

    Returns:
      (code, dist): for each observation the index of its nearest code (the first on ties)
      and the Euclidean distance to it.
    """
    del check_finite
    obs_arr, cb_arr = _promote_inexact(obs, code_book)
    if obs_arr.ndim != cb_arr.ndim:
        raise ValueError(
            "vq: observation and code_book should have the same rank, got shapes "
            f"{obs_arr.shape} and {cb_arr.shape}"
        )
    if obs_arr.ndim == 1:
        obs_arr, cb_arr = obs_arr[..., None], cb_arr[..., None]
    if obs_arr.ndim != 2:
        raise ValueError(f"vq: ndim different than 1 or 2 are not supported, got {obs_arr.ndim}")
    dist = vmap(lambda ob: jnp.linalg.norm(ob[None] - cb_arr, axis=-1))(obs_arr)
    code = jnp.argmin(dist, axis=-1)
    dist_min = vmap(operator.getitem)(dist, code)
    return code, dist_min
