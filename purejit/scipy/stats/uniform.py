"""purejit.scipy.stats.uniform: the uniform distribution on [loc, loc + scale]
(`jax.scipy.stats.uniform`)."""

from __future__ import annotations

import numpy as np

from purejit import numpy as jnp
from purejit.numpy._core import astype
from purejit.scipy.stats._common import INF, NAN, args

__all__ = ["cdf", "logpdf", "pdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """-log scale on the support, -inf off it."""
    x, loc, scale = args("uniform.logpdf", x, loc, scale)
    outside = (x > loc + scale) | (x < loc)
    return jnp.where(outside, -INF, -jnp.log(scale))


def pdf(x, loc=0, scale=1):
    """The uniform density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """0 below loc, 1 above loc + scale, (x - loc)/scale between (NaN stays 0, as JAX's)."""
    x, loc, scale = args("uniform.cdf", x, loc, scale)
    conds = [x < loc, x > loc + scale, (x >= loc) & (x <= loc + scale)]
    # strongly typed 0 and 1, as JAX's: the result is strong even for weak arguments
    zero, one = (astype(np.asarray(v), x.dtype) for v in (0, 1))
    vals = [zero, one, (x - loc) / scale]
    return jnp.select(conds, vals)


def ppf(q, loc=0, scale=1):
    """loc + scale q; NaN outside [0, 1]."""
    q, loc, scale = args("uniform.ppf", q, loc, scale)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), NAN, loc + scale * q)
