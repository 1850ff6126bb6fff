"""purejit.scipy.stats.laplace: the Laplace distribution (`jax.scipy.stats.laplace`)."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.stats._common import args

__all__ = ["cdf", "logpdf", "pdf"]


def logpdf(x, loc=0, scale=1):
    """-|x - loc|/scale - log(2 scale)."""
    x, loc, scale = args("laplace.logpdf", x, loc, scale)
    return -(jnp.abs(x - loc) / scale + jnp.log(2 * scale))


def pdf(x, loc=0, scale=1):
    """The Laplace density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """exp(z)/2 for z <= 0, else 1 - exp(-z)/2, z = (x - loc)/scale."""
    x, loc, scale = args("laplace.cdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(z <= 0, 0.5 * jnp.exp(z), 1 - 0.5 * jnp.exp(-z))
