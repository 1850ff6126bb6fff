"""purejit.scipy.stats.chi2: the chi-squared distribution (`jax.scipy.stats.chi2`)."""

from __future__ import annotations

import numpy as np

from purejit import lax
from purejit import numpy as jnp
from purejit.scipy.stats._common import INF, args, const, igamma, igammac

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x, df, loc=0, scale=1):
    """(df/2 - 1) log y - y/2 - lgamma(df/2) - df log(2)/2 - log scale; -inf below loc."""
    x, df, loc, scale = args("chi2.logpdf", x, df, loc, scale)
    two = const(x, 2)
    y = (x - loc) / scale
    half_df = df / two
    kernel = (half_df - 1) * jnp.log(y) - y / two
    norm_const = -(lax.lgamma(half_df) + jnp.log(two) * df / two)
    return jnp.where(x < loc, -INF, (norm_const - jnp.log(scale)) + kernel)


def pdf(x, df, loc=0, scale=1):
    """The chi-squared density."""
    return jnp.exp(logpdf(x, df, loc, scale))


def _half_y(x, loc, scale):
    y = (x - loc) / (scale * const(scale, 2))
    return lax.clamp(jnp.zeros_like(x), y, jnp.full_like(x, np.inf))


def cdf(x, df, loc=0, scale=1):
    """P(df/2, y/2), the regularised lower incomplete gamma function."""
    x, df, loc, scale = args("chi2.cdf", x, df, loc, scale)
    return igamma(df / const(scale, 2), _half_y(x, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    """log cdf."""
    return jnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """Q(df/2, y/2), the regularised upper incomplete gamma function."""
    x, df, loc, scale = args("chi2.sf", x, df, loc, scale)
    return igammac(df / const(scale, 2), _half_y(x, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """log sf."""
    return jnp.log(sf(x, df, loc, scale))
