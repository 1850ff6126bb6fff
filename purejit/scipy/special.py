"""purejit.scipy.special: `jax.scipy.special`'s most used functions, from IR ops.

As in JAX, erf, erfinv, gammaln, expit, and for real arguments erfc and digamma, are lax's
`erf`, `erf_inv`, `lgamma`, `logistic`, `erfc` and `digamma` (XLA's approximations), and
i0e, i1e, i0, i1, gammainc, gammaincc, betainc, zeta and polygamma are lax's bessel_i0e,
bessel_i1e, igamma, igammac, betainc, zeta and polygamma of the promoted arguments, so their
bits are JAX's. Complex erfc is exp(-z^2) w(iz) (the Faddeeva function, _error_functions),
complex digamma a recurrence and asymptotic series (_gamma). ndtr is jax.scipy's
erf/erfc split; ndtri is Cephes' piecewise rational approximation, as JAX's (_ndtri).

More functions, computed from existing ops:

Closed forms: entr, rel_entr, kl_div, log_softmax, gammasgn, gamma, loggamma, betaln, beta,
factorial, comb, poch, multigammaln, boxcox, boxcox1p, log_ndtr (the asymptotic series below
the switch point, as jax.scipy); betaln is gammaln(a) + gammaln(b) - gammaln(a + b), which
loses relative accuracy when a and b are both large (JAX corrects for that).
"""

from __future__ import annotations

import math

import numpy as np

from purejit import lax
from purejit import nn as _nn
from purejit.backend import versions
from purejit.numpy._arithmetic import DERIVATIVE_RULES, isnan
from purejit.numpy._core import (
    abs,
    exp,
    log,
    log1p,
    where,
)
from purejit.lax._lift import convert
from purejit.numpy import _core as c
from purejit.numpy._creation import arange, zeros_like
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._shape import expand_dims
from purejit.scipy._error_functions import dawsn, erfcx, owens_t, wofz
from purejit.scipy._gamma import _c, _here, _inexact
from purejit.scipy._gamma import digamma, gamma, gammaln, gammasgn
from purejit.scipy._ndtri import ndtri_rational

__all__ = [
    "beta",
    "betainc",
    "betaln",
    "boxcox",
    "boxcox1p",
    "comb",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfinv",
    "expit",
    "factorial",
    "gamma",
    "gammainc",
    "gammaincc",
    "gammaln",
    "gammasgn",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "kl_div",
    "log_ndtr",
    "log_softmax",
    "loggamma",
    "logit",
    "logsumexp",
    "multigammaln",
    "ndtr",
    "ndtri",
    "poch",
    "polygamma",
    "rel_entr",
    "softmax",
    "xlog1py",
    "xlogy",
    "zeta",
]

logsumexp = _nn.logsumexp
softmax = _nn.softmax


def erf(x):
    """The error function."""
    return lax.erf(_inexact("erf", x, real=False))


def erfinv(x):
    """The inverse error function (XLA's erf_inv, as JAX's)."""
    return lax.erf_inv(_inexact("erfinv", x, real=False))


def erfc(x):
    """The complementary error function 1 - erf(x): lax.erfc for real x, as JAX's (so the
    bits are JAX's), and exp(-z^2) w(iz) for complex z."""
    x = _inexact("erfc", x, real=False)
    if x.dtype.kind == "c":
        return exp(-x * x) * wofz(x * _c(x, 1j))
    return lax.erfc(x)


def ndtr(x):
    """The standard normal CDF, as jax.scipy's for float32 and float64: (1 + erf(w)) / 2
    near 0, erfc(|w|) / 2 (or 1 minus it) beyond, w = x / sqrt(2); erfc(-w) / 2 for the
    other inexact dtypes (which JAX refuses)."""
    x = _inexact("ndtr", x, real=False)
    if np.dtype(x.dtype) not in (np.float32, np.float64):
        return _c(x, 0.5) * erfc(-x * _c(x, 1 / math.sqrt(2)))
    half_sqrt_2 = _c(x, 0.5) * np.sqrt(2.0, dtype=x.dtype)
    w = x * half_sqrt_2
    z = abs(w)
    y = where(z < half_sqrt_2, _c(x, 1.0) + lax.erf(w),
              where(w > _c(x, 0.0), _c(x, 2.0) - lax.erfc(z), lax.erfc(z)))  # fmt: skip
    return _c(x, 0.5) * y


def ndtri(p):
    """The inverse of ndtr: the standard normal quantile of p (Cephes' rational
    approximations, as jax.scipy.special.ndtri; float32 and float64)."""
    p = _inexact("ndtri", p, real=False)
    if np.dtype(p.dtype) not in (np.float32, np.float64):
        raise TypeError(f"ndtri: p.dtype={p.dtype} is not supported (float32 or float64)")
    return ndtri_rational(p)


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return lax.logistic(_inexact("expit", x, real=False))


def logit(x):
    """log(x / (1 - x))."""
    x = _inexact("logit", x, real=False)
    return log(x / (1 - x))


def xlogy(x, y):
    """x * log(y), 0 where x == 0 (unless y is NaN)."""
    x, y = _inexact("xlogy", x, y, real=False)
    return where((x != 0) | isnan(y), x * log(y), zeros_like(x))


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is NaN)."""
    x, y = _inexact("xlog1py", x, y, real=False)
    return where((x != 0) | isnan(y), x * log1p(y), zeros_like(x))


log_softmax = _nn.log_softmax


def _k(x, v):
    """`v` in x's dtype and weak type."""
    return convert(v, x.dtype, weak=x.weak_type)


# ---- entropies --------------------------------------------------------------------------------


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf for x < 0."""
    x = _inexact("entr", x)
    return c.where(x < 0, _k(x, -np.inf), c.negative(xlogy(x, x)))


def rel_entr(p, q):
    """p log(p / q) for p, q > 0; 0 where p == 0 and q >= 0; inf otherwise."""
    p, q = _inexact("rel_entr", p, q)
    both = (p > 0) & (q > 0)
    one_zero = (p == 0) & (q >= 0)
    sp, sq = c.where(both, p, 1), c.where(both, q, 1)
    val = xlogy(sp, sp) - xlogy(sp, sq)
    return c.where(both, val, c.where(one_zero, _k(p, 0.0), _k(p, np.inf)))


def kl_div(p, q):
    """rel_entr(p, q) - p + q."""
    p, q = _inexact("kl_div", p, q)
    return rel_entr(p, q) - p + q


# ---- the gamma family -------------------------------------------------------------------------


def loggamma(x):
    """log Gamma(x) for x > 0, NaN elsewhere (real arguments)."""
    x = c.promote_args("scipy.special.loggamma", x, to_inexact=True)[0]
    if x.dtype.kind == "c":
        raise NotImplementedError(
            f"loggamma of complex arguments needs a complex log-gamma (Lanczos){_here()}"
        )
    return c.where(x > 0, lax.lgamma(x), _k(x, np.nan))


def betaln(a, b):
    """log |B(a, b)|."""
    a, b = _inexact("betaln", a, b)
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


def beta(a, b):
    """The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)."""
    a, b = _inexact("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * c.exp(betaln(a, b))


def factorial(n, exact: bool = False):
    """n! = Gamma(n + 1) (0 for n < 0)."""
    if exact:
        raise NotImplementedError("factorial with exact=True (as in jax.scipy)")
    n = _inexact("factorial", n)
    return c.where(n < 0, 0, c.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition: bool = False):
    """The number of combinations of N things taken k at a time (floating)."""
    N, k = _inexact("comb", N, k)
    if repetition:
        return c.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    ok = (k <= N) & (N >= 0) & (k >= 0)
    sn, sk = c.where(ok, N, 0.0), c.where(ok, k, 0.0)
    out = c.exp(gammaln(sn + 1) - gammaln(sk + 1) - gammaln(sn + 1 - sk))
    return c.where(ok, out, 0.0)


def poch(z, m):
    """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z)."""
    z, m = _inexact("poch", z, m)
    return c.where(m == 0.0, convert(1, z.dtype), gamma(z + m) / gamma(z))


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension d (static)."""
    d = int(d)
    a, dd = _inexact("multigammaln", a, d)
    constant = _k(a, 0.25) * dd * (dd - _k(a, 1)) * c.log(_k(a, np.pi))
    b = arange(d, dtype=dd.dtype) / _k(a, 2)
    terms = gammaln(expand_dims(a, -1) - expand_dims(b, tuple(range(a.ndim))))
    return _sum(terms, axis=-1) + constant


def boxcox(x, lmbda):
    """The Box-Cox transform: (x**lmbda - 1) / lmbda, log(x) at lmbda == 0."""
    x, lm = _inexact("boxcox", x, lmbda)
    zero = lm == 0
    safe = c.where(zero, 1, lm)
    lx = c.log(x)
    return c.where(zero, lx, c.expm1(safe * lx) / safe)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x."""
    x, lm = _inexact("boxcox1p", x, lmbda)
    zero = lm == 0
    safe = c.where(zero, 1, lm)
    lx = c.log1p(x)
    return c.where(zero, lx, c.expm1(safe * lx) / safe)


# ---- normal distribution ----------------------------------------------------------------------


def _double_factorial(n: int) -> int:
    return math.prod(range(n, 0, -2)) if n > 0 else 1


def log_ndtr(x, series_order: int = 3):
    """log of the standard normal CDF, accurate far into both tails: -ndtr(-x) above the
    upper switch point, an asymptotic series below the lower one."""
    if not isinstance(series_order, int):
        raise TypeError("log_ndtr: series_order must be a Python integer")
    if not 0 <= series_order <= 30:
        raise ValueError("log_ndtr: series_order must be in [0, 30]")
    x = c.asarray(x)
    if x.dtype == np.float64:
        lower, upper = -20.0, 8.0
    elif x.dtype == np.float32:
        lower, upper = -10.0, 5.0
    else:
        raise TypeError(f"log_ndtr: x.dtype={x.dtype} is not supported (float32 or float64)")
    above = x > upper
    res = ndtr(c.where(above, c.negative(x), c.maximum(x, lower)))
    xl = c.minimum(x, lower)
    x2 = xl * xl
    log_scale = _k(xl, -0.5) * x2 - c.log(c.negative(xl)) - _k(xl, 0.5 * np.log(2 * np.pi))
    even, odd, x2n = zeros_like(xl), zeros_like(xl), x2
    for n in range(1, series_order + 1):
        y = _k(xl, float(_double_factorial(2 * n - 1))) / x2n
        if n % 2:
            odd = odd + y
        else:
            even = even + y
        x2n = x2n * x2
    low = log_scale + c.log(_k(xl, 1.0) + even - odd)
    return c.where(above, c.negative(res), c.where(x > lower, c.log(res), low))


# ---- Bessel functions -------------------------------------------------------------------------


def i0e(x):
    """The exponentially scaled modified Bessel function of order 0: exp(-|x|) I0(x)."""
    return lax.bessel_i0e(_inexact("i0e", x))


def i1e(x):
    """The exponentially scaled modified Bessel function of order 1: exp(-|x|) I1(x)."""
    return lax.bessel_i1e(_inexact("i1e", x))


def i0(x):
    """The modified Bessel function of order 0 (under jax >= 0.11.2 with its custom JVP,
    I0' = I1, as jax.numpy.i0)."""
    x = _inexact("i0", x)
    if versions.jax_release() >= (0, 11, 2):
        return DERIVATIVE_RULES["i0"](x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def i1(x):
    """The modified Bessel function of order 1 (under jax >= 0.11.2 with its custom JVP, whose
    derivatives near 0 come from I1's Maclaurin series)."""
    x = _inexact("i1", x)
    if versions.jax_release() >= (0, 11, 2):
        return DERIVATIVE_RULES["i1"](x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


# ---- incomplete gamma and beta functions ------------------------------------------------------


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    return lax.igamma(*_inexact("gammainc", a, x))


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return lax.igammac(*_inexact("gammaincc", a, x))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    return lax.betainc(*_inexact("betainc", a, b, x))


# ---- zeta and polygamma -----------------------------------------------------------------------


def zeta(x, q=None):
    """The Hurwitz zeta function sum_k (k + q)^-x (q is required, as in jax.scipy): lax.zeta
    of the promoted arguments, as JAX's."""
    if q is None:
        raise NotImplementedError(
            "Riemann zeta function not implemented; pass q != None to compute the Hurwitz "
            "zeta function (as in jax.scipy)"
        )
    return lax.zeta(*_inexact("zeta", x, q))


def polygamma(n, x):
    """The n-th derivative of digamma (n a non-negative integer array or scalar): lax.polygamma
    of the promoted arguments, as JAX's."""
    n0 = c._lift(n)
    if n0.dtype.kind not in "iu":
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{n0.dtype}{_here()}")  # fmt: skip
    return lax.polygamma(*_inexact("polygamma", n, x))


# ---- the integrals, the Faddeeva family, hypergeometric and recurrence-built functions -------

from purejit.scipy._integrals import exp1, expi, expn, fresnel, sici, spence  # noqa: E402

__all__ += ["dawsn", "erfcx", "exp1", "expi", "expn", "fresnel", "owens_t", "sici", "spence",
            "wofz"]  # fmt: skip
from purejit.scipy._hypergeometric import hyp1f1, hyp2f1  # noqa: E402

__all__ += ["hyp1f1", "hyp2f1"]
from purejit.scipy._recurrences import bernoulli, bessel_jn, sph_harm_y  # noqa: E402

__all__ += ["bernoulli", "bessel_jn", "sph_harm_y"]
