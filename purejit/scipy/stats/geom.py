"""purejit.scipy.stats.geom: the geometric distribution (`jax.scipy.stats.geom`)."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.special import xlog1py
from purejit.scipy.stats._common import INF, args

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
    """(x - 1) log(1 - p) + log p, x = k - loc; -inf for x <= 0."""
    k, p, loc = args("geom.logpmf", k, p, loc)
    x = k - loc
    log_probs = xlog1py(x - 1, -p) + jnp.log(p)
    return jnp.where(x <= 0, -INF, log_probs)


def pmf(k, p, loc=0):
    """P(k)."""
    return jnp.exp(logpmf(k, p, loc))
