"""purejit.scipy.stats.gumbel_l: the left-skewed Gumbel distribution
(`jax.scipy.stats.gumbel_l`), cdf 1 - exp(-exp(z)), z = (x - loc)/scale."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.special import xlog1py, xlogy
from purejit.scipy.stats._common import NAN, args

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """z - exp(z) - log scale; NaN unless scale > 0."""
    x, loc, scale = args("gumbel_l.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, xlogy(-1, scale) + (z - jnp.exp(z)), NAN)


def pdf(x, loc=0, scale=1):
    """The density."""
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """log(-expm1(-exp(z)))."""
    x, loc, scale = args("gumbel_l.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, jnp.log(-jnp.expm1(-jnp.exp(z))), NAN)


def cdf(x, loc=0, scale=1):
    """exp(logcdf)."""
    return jnp.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """-exp(z)."""
    x, loc, scale = args("gumbel_l.logsf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -jnp.exp(z), NAN)


def sf(x, loc=0, scale=1):
    """exp(logsf)."""
    return jnp.exp(logsf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    """loc + scale log(-log1p(-p)); NaN outside (0, 1)."""
    p, loc, scale = args("gumbel_l.ppf", p, loc, scale)
    quantile = loc + scale * jnp.log(xlog1py(-1, -p))
    return jnp.where((p > 0) & (p < 1), quantile, NAN)
