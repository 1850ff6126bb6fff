"""purejit.scipy.stats.bernoulli: the Bernoulli distribution (`jax.scipy.stats.bernoulli`)."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.special import xlog1py, xlogy
from purejit.scipy.stats._common import INF, NAN, args

__all__ = ["cdf", "logpmf", "pmf", "ppf"]


def logpmf(k, p, loc=0):
    """log P(k): log p at k - loc = 1, log(1 - p) at 0, -inf elsewhere."""
    k, p, loc = args("bernoulli.logpmf", k, p, loc)
    x = k - loc
    log_probs = xlogy(x, p) + xlog1py(1 - x, -p)
    return jnp.where((x < 0) | (x > 1), -INF, log_probs)


def pmf(k, p, loc=0):
    """P(k)."""
    return jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    """P(K <= k); NaN for NaN arguments or p outside [0, 1]."""
    k, p = args("bernoulli.cdf", k, p)
    bad = jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1)
    conds = [bad, k < 0, (k >= 0) & (k < 1), k >= 1]
    return jnp.select(conds, [NAN, jnp.zeros_like(k), 1 - p, jnp.ones_like(k)])


def ppf(q, p):
    """The smallest k with cdf(k) >= q: 0 for q <= 1 - p, else 1."""
    q, p = args("bernoulli.ppf", q, p)
    bad = jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return jnp.where(bad, NAN, jnp.where(q <= 1 - p, jnp.zeros_like(q), jnp.ones_like(q)))
