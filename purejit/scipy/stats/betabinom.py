"""purejit.scipy.stats.betabinom: the beta-binomial distribution
(`jax.scipy.stats.betabinom`)."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.special import betaln
from purejit.scipy.stats._common import INF, NAN, args

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
    """log C(n, y) + log B(y + a, n - y + b) - log B(a, b), y = floor(k) - loc, with
    log C(n, y) = -(log(n + 1) + log B(n - y + 1, y + 1)); NaN unless n >= 0, a, b > 0."""
    k, n, a, b, loc = args("betabinom.logpmf", k, n, a, b, loc)
    y = jnp.floor(k) - loc
    combiln = -(jnp.log1p(n) + betaln(n - y + 1, y + 1))
    log_probs = combiln + (betaln(y + a, n - y + b) - betaln(a, b))
    log_probs = jnp.where((y == 0) & (n == 0), 0.0, log_probs)
    outside = (y < -loc) | (y > n) | (y + a <= 0)
    log_probs = jnp.where(outside, -INF, log_probs)
    return jnp.where((n < 0) | (a <= 0) | (b <= 0), NAN, log_probs)


def pmf(k, n, a, b, loc=0):
    """P(k)."""
    return jnp.exp(logpmf(k, n, a, b, loc))
