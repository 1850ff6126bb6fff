"""The gamma function family that the rest of purejit.scipy.special builds on: gammaln
(the IR's `lgamma`), digamma, gammasgn and gamma, with the argument promotion they share.

digamma is the recurrence psi(x) = psi(x + 6) - sum_{k<6} 1/(x + k), the asymptotic series at
x + 6 and reflection for x < 0.5.
"""

from __future__ import annotations

import math

import numpy as np

from purejit import errors
from purejit import lax
from purejit.lax._lift import convert
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._core import astype as _astype
from purejit.numpy._core import log, promote_args, tan, where
from purejit.numpy._creation import zeros_like


def _here() -> str:
    return errors.at(errors.user_location())


def _inexact(name: str, *xs, real: bool = True):
    """The arguments promoted to a common inexact dtype; ValueError for complex ones unless
    `real` is False (the functions written on lax ops that take them)."""
    out = promote_args(f"scipy.special.{name}", *xs, to_inexact=True)
    if real and out[0].dtype.kind == "c":
        raise ValueError(f"{name} does not support complex-valued inputs{_here()}")
    return out if len(xs) > 1 else out[0]


def _c(x, value):
    """`value` in x's dtype (a strongly typed scalar)."""
    return _astype(np.asarray(value), x.dtype)


def gammaln(x):
    """log |Gamma(x)|."""
    return lax.lgamma(_inexact("gammaln", x, real=False))


# psi(x) ~ log x - 1/(2x) - sum B_2k / (2k x^2k)
_PSI_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _digamma_positive(x):
    shift = 6
    acc = zeros_like(x)
    for k in range(shift):
        acc = acc + 1 / (x + _c(x, k))
    z = x + _c(x, shift)
    inv2 = 1 / (z * z)
    series = _c(x, 0.0)
    for coef in reversed(_PSI_SERIES):
        series = (series + _c(x, coef)) * inv2
    return log(z) - _c(x, 0.5) / z - series - acc


def digamma(x):
    """The digamma function psi(x) = d/dx log Gamma(x); NaN at the poles 0, -1, -2, ...
    Real x: lax.digamma, as JAX's (so the bits are JAX's); complex x: the recurrence and
    asymptotic series below."""
    x = _inexact("digamma", x, real=False)
    if x.dtype.kind != "c":
        return lax.digamma(x)
    reflect = x < _c(x, 0.5)
    y = where(reflect, 1 - x, x)
    psi = _digamma_positive(y)
    pi = _c(x, math.pi)
    reflected = psi - pi / tan(pi * x)
    pole = (x <= 0) & (x == lax.floor(x))
    out = where(reflect, reflected, psi)
    return where(pole, _c(x, np.nan), out)


def gammasgn(x):
    """The sign of the gamma function (NaN at the poles and for NaN)."""
    x = _inexact("gammasgn", x)
    fl = c.floor(x)
    neg = x < 0
    nan_at = (neg & (x == fl)) | arith.isnan(x)
    minus = (neg & (arith.remainder(fl, 2) != 0)) | ((x == 0) & arith.signbit(x))
    # strongly typed, as jax.scipy's (NumPy scalars there)
    one = convert(1.0, x.dtype)
    return c.where(nan_at, one * np.nan, c.where(minus, -one, one))


def gamma(x):
    """The gamma function (real arguments)."""
    x = _inexact("gamma", x)
    return gammasgn(x) * c.exp(lax.lgamma(x))
