"""purejit.scipy.stats.nbinom: the negative binomial distribution
(`jax.scipy.stats.nbinom`): k failures before the n-th success of probability p."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.special import gammaln, xlogy
from purejit.scipy.stats._common import INF, args

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """lgamma(y + n) - lgamma(n) - lgamma(y + 1) + n log p + y log(1 - p), y = k - loc;
    -inf below loc."""
    k, n, p, loc = args("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    comb = (gammaln(y + n) - gammaln(n)) - gammaln(y + 1)
    log_linear = xlogy(n, p) + xlogy(y, 1 - p)
    return jnp.where(k < loc, -INF, comb + log_linear)


def pmf(k, n, p, loc=0):
    """P(k)."""
    return jnp.exp(logpmf(k, n, p, loc))
