"""purejit.scipy.stats.binom: the binomial distribution (`jax.scipy.stats.binom`)."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.special import gammaln, xlog1py, xlogy
from purejit.scipy.stats._common import INF, args

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """log C(n, y) + y log p + (n - y) log(1 - p), y = k - loc; 0 where the linear term is 0
    (p = 0 or 1 at the matching end), -inf outside [loc, loc + n]."""
    k, n, p, loc = args("binom.logpmf", k, n, p, loc)
    y = k - loc
    comb = gammaln(n + 1) - (gammaln(y + 1) + gammaln(n - y + 1))
    log_linear = xlogy(y, p) + xlog1py(n - y, -p)
    log_probs = comb + log_linear
    log_probs = jnp.where(((y == 0) & (n == 0)) | (log_linear == 0), 0.0, log_probs)
    return jnp.where((k >= loc) & (k < loc + n + 1), log_probs, -INF)


def pmf(k, n, p, loc=0):
    """P(k)."""
    return jnp.exp(logpmf(k, n, p, loc))
