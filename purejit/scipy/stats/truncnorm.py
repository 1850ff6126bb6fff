"""purejit.scipy.stats.truncnorm: the normal distribution truncated to [a, b] (in standard
units: the support is loc + scale [a, b]) (`jax.scipy.stats.truncnorm`)."""

from __future__ import annotations

from purejit import numpy as jnp
from purejit.scipy.special import log_ndtr, logsumexp, ndtr
from purejit.scipy.stats import norm
from purejit.scipy.stats._common import INF, NAN, args

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def _log_diff(x, y):
    """log(exp(x) - exp(y)) for x >= y."""
    b = jnp.stack([jnp.ones_like(x), -jnp.ones_like(y)])
    return logsumexp(jnp.stack([x, y]), b=b, axis=0)


def _log_gauss_mass(a, b):
    """log(ndtr(b) - ndtr(a)): in a tail, as a difference of log_ndtr on the side nearer 0
    (mirrored for a > 0); across 0, as log1p(-ndtr(a) - ndtr(-b))."""
    a, b = jnp.broadcast_arrays(a, b)
    left, right = b <= 0, a > 0
    central = ~(left | right)
    a_tail = jnp.where(right, -b, a)
    b_tail = jnp.where(right, -a, b)
    mass_tail = _log_diff(log_ndtr(b_tail), log_ndtr(a_tail))
    mass_central = jnp.log1p(-ndtr(a) - ndtr(-b))
    return jnp.where(central, mass_central, mass_tail)


def logpdf(x, a, b, loc=0, scale=1):
    """The normal log density less the log mass of [a, b]; -inf off it, NaN for a >= b."""
    x, a, b, loc, scale = args("truncnorm.logpdf", x, a, b, loc, scale)
    value = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
    z = (x - loc) / scale
    value = jnp.where((z < a) | (z > b), -INF, value)
    return jnp.where(a >= b, NAN, value)


def pdf(x, a, b, loc=0, scale=1):
    """The truncated normal density."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """log mass(a, z) - log mass(a, b); near 1 (above -0.1), log1p of minus the upper mass,
    which keeps the digits the difference loses."""
    x, a, b, loc, scale = args("truncnorm.logcdf", x, a, b, loc, scale)
    z = (x - loc) / scale
    log_mass = _log_gauss_mass(a, b)
    lcdf = _log_gauss_mass(a, z) - log_mass
    lsf = _log_gauss_mass(z, b) - log_mass
    conds = [z >= b, z <= a, lcdf > -0.1, z > a]
    vals = [jnp.zeros_like(z), jnp.full_like(z, -INF), jnp.log1p(-jnp.exp(lsf)), lcdf]
    return jnp.where(a >= b, NAN, jnp.select(conds, vals))


def cdf(x, a, b, loc=0, scale=1):
    """exp(logcdf)."""
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """logcdf of the mirrored distribution at -x."""
    x, a, b, loc, scale = args("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
    """exp(logsf)."""
    return jnp.exp(logsf(x, a, b, loc, scale))
