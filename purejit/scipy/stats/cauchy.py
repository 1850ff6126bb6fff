"""purejit.scipy.stats.cauchy: the Cauchy distribution (`jax.scipy.stats.cauchy`)."""

from __future__ import annotations

import numpy as np

from purejit import numpy as jnp
from purejit.scipy.stats._common import args, const

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """-log(pi scale) - log1p(z^2), z = (x - loc) / scale."""
    x, loc, scale = args("cauchy.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -(jnp.log(const(x, np.pi) * scale) + jnp.log1p(z * z))


def pdf(x, loc=0, scale=1):
    """The Cauchy density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """1/2 + arctan(z) / pi."""
    x, loc, scale = args("cauchy.cdf", x, loc, scale)
    z = (x - loc) / scale
    # 1/pi is formed in x's dtype, as JAX divides its typed constants
    return const(x, 0.5) + (const(x, 1.0) / const(x, np.pi)) * jnp.arctan(z)


def logcdf(x, loc=0, scale=1):
    """log cdf."""
    return jnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """1 - cdf as cdf(-x; -loc) (accurate in the upper tail)."""
    x, loc, scale = args("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """log sf, as logcdf(-x; -loc)."""
    x, loc, scale = args("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    """tan(pi q - pi/2) scale + loc."""
    q, loc, scale = args("cauchy.ppf", q, loc, scale)
    unscaled = jnp.tan(const(q, np.pi) * q - const(q, np.pi / 2))
    return unscaled * scale + loc


def isf(q, loc=0, scale=1):
    """tan(pi/2 - pi q) scale + loc."""
    q, loc, scale = args("cauchy.isf", q, loc, scale)
    unscaled = jnp.tan(const(q, np.pi / 2) - const(q, np.pi) * q)
    return unscaled * scale + loc
