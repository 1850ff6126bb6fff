"""purejit.scipy.stats.gamma: the gamma distribution (`jax.scipy.stats.gamma`)."""

from __future__ import annotations

import numpy as np

from purejit import lax
from purejit import numpy as jnp
from purejit.scipy.special import gammaln, xlogy
from purejit.scipy.stats._common import INF, args, igamma, igammac

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x, a, loc=0, scale=1):
    """(a - 1) log y - y - lgamma(a) - log scale, y = (x - loc)/scale; -inf below loc."""
    x, a, loc, scale = args("gamma.logpdf", x, a, loc, scale)
    ok = x >= loc
    # y = 1 off the support keeps xlogy finite there (the where below discards it)
    y = jnp.where(ok, (x - loc) / scale, jnp.ones_like(x))
    log_probs = (xlogy(a - 1, y) - y) - (gammaln(a) + jnp.log(scale))
    return jnp.where(ok, log_probs, -INF)


def pdf(x, a, loc=0, scale=1):
    """The gamma density."""
    return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """P(a, y), y clamped to [0, inf]."""
    x, a, loc, scale = args("gamma.cdf", x, a, loc, scale)
    y = lax.clamp(jnp.zeros_like(x), (x - loc) / scale, jnp.full_like(x, np.inf))
    return igamma(a, y)


def logcdf(x, a, loc=0, scale=1):
    """log cdf."""
    return jnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """Q(a, y); 1 below loc."""
    x, a, loc, scale = args("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return jnp.where(y < 0, 1, igammac(a, y))


def logsf(x, a, loc=0, scale=1):
    """log sf."""
    return jnp.log(sf(x, a, loc, scale))
