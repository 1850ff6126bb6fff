"""purejit.scipy.stats.norm: the normal distribution (`jax.scipy.stats.norm`)."""

from __future__ import annotations

import math

from purejit.numpy._core import exp, log, promote_args
from purejit.scipy.special import log_ndtr, ndtr, ndtri
from purejit.scipy.stats._common import const

__all__ = ["cdf", "logcdf", "logpdf", "pdf", "ppf"]


def _args(name, *xs):
    return promote_args(f"scipy.stats.norm.{name}", *xs, to_inexact=True)


def logpdf(x, loc=0, scale=1):
    """log of the normal density at x: -(log(2 pi scale^2) + (x - loc)^2 / scale^2) / 2."""
    x, loc, scale = _args("logpdf", x, loc, scale)
    scale_sq = scale * scale
    log_normalizer = log(const(x, 2 * math.pi) * scale_sq)
    d = x - loc
    quadratic = d * d / scale_sq
    return (log_normalizer + quadratic) / const(x, -2)


def pdf(x, loc=0, scale=1):
    """The normal density at x."""
    return exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The normal cumulative distribution function at x."""
    x, loc, scale = _args("cdf", x, loc, scale)
    return ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    """log cdf(x), through log_ndtr (finite far into the lower tail, where cdf underflows)."""
    x, loc, scale = _args("logcdf", x, loc, scale)
    return log_ndtr((x - loc) / scale)


def ppf(q, loc=0, scale=1):
    """The quantile function (inverse of cdf)."""
    q, loc, scale = _args("ppf", q, loc, scale)
    return ndtri(q) * scale + loc


def sf(x, loc=0, scale=1):
    """The survival function 1 - cdf(x), computed as cdf(-x; -loc) (accurate in the upper
    tail)."""
    x, loc, scale = _args("sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """log sf(x), as logcdf(-x; -loc) (accurate far into the upper tail)."""
    x, loc, scale = _args("logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
    """The inverse survival function: ppf(1 - q)."""
    (q,) = _args("isf", q)
    return ppf(1 - q, loc, scale)


__all__ += ["isf", "logsf", "sf"]
