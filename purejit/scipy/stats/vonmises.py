"""purejit.scipy.stats.vonmises: the von Mises distribution on the circle
(`jax.scipy.stats.vonmises`)."""

from __future__ import annotations

import numpy as np

from purejit import numpy as jnp
from purejit.scipy.stats._common import NAN, args, bessel_i0e

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
    """kappa (cos x - 1) - log(2 pi i0e(kappa)) (i0e keeps large kappa finite); NaN unless
    kappa > 0."""
    x, kappa = args("vonmises.logpdf", x, kappa)
    value = kappa * (jnp.cos(x) - 1) - jnp.log(2 * np.pi * bessel_i0e(kappa))
    return jnp.where(kappa > 0, value, NAN)


def pdf(x, kappa):
    """The von Mises density."""
    return jnp.exp(logpdf(x, kappa))
