"""purejit.scipy.special: `jax.scipy.special`'s most used functions, from IR ops.

erf, erfinv and gammaln are the IR's `erf`, `erf_inv` and `lgamma` ops (XLA's
approximations, as JAX's). The IR has no erfc or digamma op, so they are computed here:
erfc by the Chebyshev-fitted rational form of Numerical Recipes (`erfcc`, relative error
below 1.2e-7 for every x: float32 accuracy, not float64's), digamma by the recurrence
psi(x) = psi(x + 6) - sum 1/(x + k), the asymptotic series at x + 6 and reflection for
x < 0.5. ndtri is sqrt(2) * erfinv(2p - 1), which loses relative accuracy for p below ~1e-3
(JAX uses Cephes' rational approximations there).
"""

from __future__ import annotations

import math

import numpy as np

from purejit import lax
from purejit import nn as _nn
from purejit.numpy._core import (
    abs,
    exp,
    isnan,
    log,
    log1p,
    promote_args,
    tan,
    where,
)
from purejit.numpy._core import astype as _astype
from purejit.numpy._creation import zeros_like

__all__ = [
    "digamma",
    "erf",
    "erfc",
    "erfinv",
    "expit",
    "gammaln",
    "logit",
    "logsumexp",
    "ndtr",
    "ndtri",
    "softmax",
    "xlog1py",
    "xlogy",
]

logsumexp = _nn.logsumexp
softmax = _nn.softmax


def _inexact(name: str, *xs):
    out = promote_args(f"scipy.special.{name}", *xs, to_inexact=True)
    return out if len(xs) > 1 else out[0]


def _c(x, value):
    """`value` in x's dtype (a strongly typed scalar)."""
    return _astype(np.asarray(value), x.dtype)


def erf(x):
    """The error function."""
    return lax.erf(_inexact("erf", x))


def erfinv(x):
    """The inverse error function (XLA's erf_inv, as JAX's)."""
    return lax.erf_inv(_inexact("erfinv", x))


def gammaln(x):
    """log |Gamma(x)|."""
    return lax.lgamma(_inexact("gammaln", x))


_ERFCC = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
    1.48851587, -0.82215223, 0.17087277,
)  # fmt: skip


def erfc(x):
    """The complementary error function 1 - erf(x), accurate in the tails."""
    x = _inexact("erfc", x)
    z = abs(x)
    t = 1 / (1 + _c(x, 0.5) * z)
    poly = _c(x, _ERFCC[-1])
    for coef in reversed(_ERFCC[:-1]):
        poly = _c(x, coef) + t * poly
    r = t * exp(-z * z + poly)
    return where(x >= 0, r, 2 - r)


def ndtr(x):
    """The standard normal CDF: erfc(-x / sqrt(2)) / 2."""
    x = _inexact("ndtr", x)
    return _c(x, 0.5) * erfc(-x * _c(x, 1 / math.sqrt(2)))


def ndtri(p):
    """The inverse of ndtr: the standard normal quantile of p."""
    p = _inexact("ndtri", p)
    return _c(p, math.sqrt(2)) * lax.erf_inv(2 * p - 1)


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return lax.logistic(_inexact("expit", x))


def logit(x):
    """log(x / (1 - x))."""
    x = _inexact("logit", x)
    return log(x / (1 - x))


def xlogy(x, y):
    """x * log(y), 0 where x == 0 (unless y is NaN)."""
    x, y = _inexact("xlogy", x, y)
    return where((x != 0) | isnan(y), x * log(y), zeros_like(x))


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is NaN)."""
    x, y = _inexact("xlog1py", x, y)
    return where((x != 0) | isnan(y), x * log1p(y), zeros_like(x))


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
    """The digamma function psi(x) = d/dx log Gamma(x); NaN at the poles 0, -1, -2, ..."""
    x = _inexact("digamma", x)
    reflect = x < _c(x, 0.5)
    y = where(reflect, 1 - x, x)
    psi = _digamma_positive(y)
    pi = _c(x, math.pi)
    reflected = psi - pi / tan(pi * x)
    pole = (x <= 0) & (x == lax.floor(x))
    out = where(reflect, reflected, psi)
    return where(pole, _c(x, np.nan), out)
