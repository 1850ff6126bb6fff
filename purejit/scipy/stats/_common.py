"""What the distribution modules share: argument promotion and typed constants."""

from __future__ import annotations

import numpy as np

from purejit import lax
from purejit.lax._lift import convert
from purejit.numpy._core import promote_args

NAN, INF = np.nan, np.inf


def args(name: str, *xs):
    """The arguments as one inexact dtype and shape (JAX's promote_args_inexact); errors name
    `scipy.stats.<name>`."""
    out = promote_args(f"scipy.stats.{name}", *xs, to_inexact=True)
    return out if len(xs) > 1 else out[0]


def const(x, value):
    """`value` rounded to x's dtype, weakly typed when x is (JAX's _const): arithmetic between
    two such constants runs in x's dtype, as JAX's does, and results keep x's weak type."""
    return convert(np.asarray(value), x.dtype, weak=x.weak_type)


def _weak_as(out, x):
    # purejit.lax's igamma, igammac, betainc and bessel_i0e return strongly typed results for
    # weakly typed arguments (JAX's keep the weak type); a no-op once they do
    return convert(out, out.dtype, weak=x.weak_type)


def igamma(a, x):
    """lax.igamma (what JAX's gammainc runs), keeping the arguments' weak type."""
    return _weak_as(lax.igamma(a, x), a)


def igammac(a, x):
    """lax.igammac (what JAX's gammaincc runs), keeping the arguments' weak type."""
    return _weak_as(lax.igammac(a, x), a)


def betainc(a, b, x):
    """lax.betainc (what JAX's betainc runs), keeping the arguments' weak type."""
    return _weak_as(lax.betainc(a, b, x), a)


def bessel_i0e(x):
    """lax.bessel_i0e, keeping the argument's weak type."""
    return _weak_as(lax.bessel_i0e(x), x)
