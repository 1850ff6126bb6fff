"""purejit.scipy.stats.logistic: the logistic distribution (`jax.scipy.stats.logistic`)."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.special import expit, logit
from purejit.scipy.stats._common import args

__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """-2 logaddexp(z/2, -z/2) - log scale, z = (x - loc)/scale (no overflow for large |z|)."""
    x, loc, scale = args("logistic.logpdf", x, loc, scale)
    z = (x - loc) / scale
    half = z / 2
    return -2 * jnp.logaddexp(half, -half) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """The logistic density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """expit(z)."""
    x, loc, scale = args("logistic.cdf", x, loc, scale)
    return expit((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """expit(-z)."""
    x, loc, scale = args("logistic.sf", x, loc, scale)
    return expit(-((x - loc) / scale))


def ppf(x, loc=0, scale=1):
    """logit(q) scale + loc."""
    x, loc, scale = args("logistic.ppf", x, loc, scale)
    return logit(x) * scale + loc


def isf(x, loc=0, scale=1):
    """-logit(q) scale + loc."""
    x, loc, scale = args("logistic.isf", x, loc, scale)
    return -logit(x) * scale + loc
