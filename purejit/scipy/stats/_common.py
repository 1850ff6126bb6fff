"""What the distribution modules share: argument promotion and typed constants."""

from __future__ import annotations

import numpy as np

from purejit.numpy._core import astype, promote_args

NAN, INF = np.nan, np.inf


def args(name: str, *xs):
    """The arguments as one inexact dtype and shape (JAX's promote_args_inexact); errors name
    `scipy.stats.<name>`."""
    out = promote_args(f"scipy.stats.{name}", *xs, to_inexact=True)
    return out if len(xs) > 1 else out[0]


def const(x, value):
    """`value` rounded to x's dtype, as a strongly typed scalar: arithmetic between two such
    constants then runs in x's dtype, as JAX's does on its typed constants."""
    return astype(np.asarray(value), x.dtype)
