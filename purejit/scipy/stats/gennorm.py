"""purejit.scipy.stats.gennorm: the generalised normal distribution
(`jax.scipy.stats.gennorm`), density beta / (2 Gamma(1/beta)) exp(-|x|^beta)."""

from __future__ import annotations

from purejit import lax
from purejit import numpy as jnp
from purejit.scipy.stats._common import args, igamma

__all__ = ["cdf", "logpdf", "pdf"]


def logpdf(x, beta):
    """log(beta/2) - lgamma(1/beta) - |x|^beta."""
    x, beta = args("gennorm.logpdf", x, beta)
    return jnp.log(0.5 * beta) - lax.lgamma(1 / beta) - jnp.abs(x) ** beta


def cdf(x, beta):
    """(1 + sign(x) P(1/beta, |x|^beta)) / 2."""
    x, beta = args("gennorm.cdf", x, beta)
    return 0.5 * (1 + jnp.sign(x) * igamma(1 / beta, jnp.abs(x) ** beta))


def pdf(x, beta):
    """The generalised normal density."""
    return jnp.exp(logpdf(x, beta))
