"""purejit.scipy.stats.wrapcauchy: the wrapped Cauchy distribution on [0, 2 pi]
(`jax.scipy.stats.wrapcauchy`)."""

from __future__ import annotations

import numpy as np

from purejit import numpy as jnp
from purejit.scipy.stats._common import INF, NAN, args

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
    """log(1 - c^2) - log(2 pi) - log(1 + c^2 - 2 c cos x); -inf off [0, 2 pi], NaN unless
    0 < c < 1."""
    x, c = args("wrapcauchy.logpdf", x, c)
    value = jnp.log(1 - c * c) - jnp.log(2 * np.pi) - jnp.log(1 + c * c - 2 * c * jnp.cos(x))
    inside = jnp.where((x >= 0) & (x <= np.pi * 2), value, -INF)
    return jnp.where((c > 0) & (c < 1), inside, NAN)


def pdf(x, c):
    """The wrapped Cauchy density."""
    return jnp.exp(logpdf(x, c))
