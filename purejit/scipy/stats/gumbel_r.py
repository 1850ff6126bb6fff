"""purejit.scipy.stats.gumbel_r: the right-skewed Gumbel distribution
(`jax.scipy.stats.gumbel_r`), cdf exp(-exp(-z)), z = (x - loc)/scale."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.nn import log1mexp
from purejit.scipy.special import xlogy
from purejit.scipy.stats._common import NAN, args

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """-(z + exp(-z)) - log scale; NaN unless scale > 0."""
    x, loc, scale = args("gumbel_r.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, xlogy(-1, scale) + -(z + jnp.exp(-z)), NAN)


def pdf(x, loc=0, scale=1):
    """The density."""
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """-exp(-z)."""
    x, loc, scale = args("gumbel_r.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -jnp.exp(-z), NAN)


def cdf(x, loc=0, scale=1):
    """exp(logcdf)."""
    return jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """1 - exp(-exp(-z))."""
    x, loc, scale = args("gumbel_r.sf", x, loc, scale)
    neg_z = (loc - x) / scale
    return jnp.where(scale > 0, 1 - jnp.exp(-jnp.exp(neg_z)), NAN)


def logsf(x, loc=0, scale=1):
    """log(1 - exp(-exp(-z))), through log1mexp (accurate in both tails)."""
    x, loc, scale = args("gumbel_r.logsf", x, loc, scale)
    neg_z = (loc - x) / scale
    return jnp.where(scale > 0, log1mexp(jnp.exp(neg_z)), NAN)


def ppf(p, loc=0, scale=1):
    """loc - scale log(-log p); NaN outside (0, 1)."""
    p, loc, scale = args("gumbel_r.ppf", p, loc, scale)
    quantile = loc - scale * jnp.log(xlogy(-1, p))
    return jnp.where((p > 0) & (p < 1), quantile, NAN)
