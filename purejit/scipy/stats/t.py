"""purejit.scipy.stats.t: Student's t distribution (`jax.scipy.stats.t`)."""

from __future__ import annotations

import numpy as np

from purejit import lax
from purejit import numpy as jnp
from purejit.scipy.stats._common import args, const

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    """-(lgamma(df/2) + log(pi scale^2 df)/2 - lgamma((df+1)/2) + (df+1)/2 log1p(z^2/df))."""
    x, df, loc, scale = args("t.logpdf", x, df, loc, scale)
    two = const(x, 2)
    z = (x - loc) / scale
    half_df = df / two
    half_df_plus_half = half_df + const(x, 0.5)
    norm_const = (scale * scale) * const(x, np.pi)
    norm_tmp = jnp.log(norm_const * df) / two
    normalize = (lax.lgamma(half_df) + norm_tmp) - lax.lgamma(half_df_plus_half)
    quadratic = (z * z) / df
    return -(normalize + half_df_plus_half * jnp.log1p(quadratic))


def pdf(x, df, loc=0, scale=1):
    """The t density."""
    return jnp.exp(logpdf(x, df, loc, scale))
