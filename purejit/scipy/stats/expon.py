"""purejit.scipy.stats.expon: the exponential distribution (`jax.scipy.stats.expon`)."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.stats._common import INF, NAN, args

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """-(x - loc)/scale - log scale; -inf below loc."""
    x, loc, scale = args("expon.logpdf", x, loc, scale)
    log_probs = -((x - loc) / scale + jnp.log(scale))
    return jnp.where(x < loc, -INF, log_probs)


def pdf(x, loc=0, scale=1):
    """The exponential density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """-expm1(-(x - loc)/scale); 0 below loc."""
    x, loc, scale = args("expon.cdf", x, loc, scale)
    neg_z = (loc - x) / scale
    return jnp.where(x < loc, jnp.zeros_like(neg_z), -jnp.expm1(neg_z))


def logsf(x, loc=0, scale=1):
    """-(x - loc)/scale; 0 below loc."""
    x, loc, scale = args("expon.logsf", x, loc, scale)
    neg_z = (loc - x) / scale
    return jnp.where(x < loc, jnp.zeros_like(neg_z), neg_z)


def sf(x, loc=0, scale=1):
    """exp(logsf)."""
    return jnp.exp(logsf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """log1p(-sf)."""
    return jnp.log1p(-sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """loc - scale log1p(-q); NaN outside [0, 1]."""
    q, loc, scale = args("expon.ppf", q, loc, scale)
    bad = jnp.isnan(q) | (q < 0) | (q > 1)
    return jnp.where(bad, NAN, loc - scale * jnp.log1p(-q))
