"""purejit.scipy.stats.pareto: the Pareto distribution (`jax.scipy.stats.pareto`), support
x >= loc + scale."""

from __future__ import annotations

from purejit import lax
from purejit import numpy as jnp
from purejit.scipy.stats._common import INF, NAN, args

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, b, loc=0, scale=1):
    """-(log(scale/b) + (b + 1) log y), y = (x - loc)/scale; -inf below the support."""
    x, b, loc, scale = args("pareto.logpdf", x, b, loc, scale)
    y = (x - loc) / scale
    log_probs = -(jnp.log(scale / b) + (b + 1) * jnp.log(y))
    return jnp.where(x < loc + scale, -INF, log_probs)


def pdf(x, b, loc=0, scale=1):
    """The Pareto density."""
    return jnp.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """1 - y^-b; 0 below the support."""
    x, b, loc, scale = args("pareto.cdf", x, b, loc, scale)
    y = (x - loc) / scale
    return jnp.where(x < loc + scale, jnp.zeros_like(x), 1 - lax.pow(y, -b))


def logcdf(x, b, loc=0, scale=1):
    """log1p(-y^-b); -inf below the support."""
    x, b, loc, scale = args("pareto.logcdf", x, b, loc, scale)
    y = (x - loc) / scale
    return jnp.where(x < loc + scale, -INF, jnp.log1p(-lax.pow(y, -b)))


def logsf(x, b, loc=0, scale=1):
    """-b log y; 0 below the support."""
    x, b, loc, scale = args("pareto.logsf", x, b, loc, scale)
    y = (x - loc) / scale
    return jnp.where(x < loc + scale, jnp.zeros_like(x), -(b * jnp.log(y)))


def sf(x, b, loc=0, scale=1):
    """exp(logsf)."""
    return jnp.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    """loc + scale (1 - q)^(-1/b); NaN outside [0, 1]."""
    q, b, loc, scale = args("pareto.ppf", q, b, loc, scale)
    value = loc + scale * lax.pow(1 - q, -(1 / b))
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), NAN, value)
