"""purejit.scipy.stats.beta: the beta distribution (`jax.scipy.stats.beta`)."""

from __future__ import annotations

from purejit import lax
from purejit import numpy as jnp
from purejit.scipy.special import betaln, xlog1py, xlogy
from purejit.scipy.stats._common import INF, NAN, args, betainc

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x, a, b, loc=0, scale=1):
    """log density: (a-1) log y + (b-1) log(1-y) - log B(a, b) - log scale, y = (x-loc)/scale;
    -inf outside [loc, loc + scale], NaN unless a, b and scale are positive."""
    x, a, b, loc, scale = args("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    log_linear = xlogy(a - 1, y) + xlog1py(b - 1, -y)
    log_probs = (-betaln(a, b) + log_linear) - jnp.log(scale)
    out = jnp.where((x > loc + scale) | (x < loc), -INF, log_probs)
    return jnp.where((a <= 0) | (b <= 0) | (scale <= 0), NAN, out)


def pdf(x, a, b, loc=0, scale=1):
    """The beta density."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def _unit(x, loc, scale):
    return lax.clamp(jnp.zeros_like(x), (x - loc) / scale, jnp.ones_like(x))


def cdf(x, a, b, loc=0, scale=1):
    """I_y(a, b), y clamped to [0, 1]."""
    x, a, b, loc, scale = args("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, _unit(x, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """log cdf."""
    return jnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """1 - cdf as I_{1-y}(b, a) (accurate in the upper tail)."""
    x, a, b, loc, scale = args("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, 1 - _unit(x, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """log sf."""
    return jnp.log(sf(x, a, b, loc, scale))
