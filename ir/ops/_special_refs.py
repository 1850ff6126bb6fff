"""NumPy references (computed in float64) of the special-function elementwise ops that XLA
evaluates with CHLO's expansions: erfc, digamma, polygamma, zeta (Hurwitz) and bessel_i1e.

Each is accurate to about 1e-13 relative in float64 on the domains the tests draw from,
far inside the float32 tolerances the op table uses; poles and out-of-domain values give
what XLA gives (NaN or inf).
"""

from __future__ import annotations

import math

import numpy as np

# B_2j / (2j)!, j = 1..12: the Euler-Maclaurin corrections of the zeta sum
_B2J = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
        43867 / 798, -174611 / 330, 854513 / 138, -236364091 / 2730)  # fmt: skip
_ZETA_COEFS = tuple(b / math.factorial(2 * j + 2) for j, b in enumerate(_B2J))


def _digamma1(x: float) -> float:
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x <= 0 and x == math.floor(x):
        return math.nan  # the poles, as XLA's chlo.digamma
    if x == math.inf:
        return math.inf
    if x < 0.5:  # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        return _digamma1(1.0 - x) - math.pi / math.tan(math.pi * x)
    acc = 0.0
    while x < 10.0:  # psi(x) = psi(x + 1) - 1 / x
        acc -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    # ln x - 1/(2x) - sum_k B_2k / (2k x^2k)
    series = 0.0
    for k in range(7, 0, -1):
        series = series * inv2 + _B2J[k - 1] / (2 * k)
    return acc + math.log(x) - 0.5 / x - series * inv2


def _zeta1(s: float, q: float) -> float:
    if math.isnan(s) or math.isnan(q):
        return math.nan
    if s == 1.0:
        return math.inf
    if s < 1.0:
        return math.nan
    if q <= 0:
        if q == math.floor(q):
            return math.inf
        if s != math.floor(s):
            return math.nan
    total = 0.0
    n = 12
    for k in range(n):
        total += (q + k) ** -s
    w = q + n
    total += w ** (1 - s) / (s - 1) + 0.5 * w**-s
    rising, wpow = s, w ** (-s - 1)
    for j, coef in enumerate(_ZETA_COEFS):
        if j:
            rising *= (s + 2 * j - 1) * (s + 2 * j)
        total += coef * rising * wpow
        wpow /= w * w
    return total


def _polygamma1(n: float, x: float) -> float:
    if math.isnan(n) or math.isnan(x) or n < 0 or n != math.floor(n):
        return math.nan
    if n == 0:
        return _digamma1(x)
    sign = -1.0 if int(n) % 2 == 0 else 1.0
    return sign * math.exp(math.lgamma(n + 1)) * _zeta1(n + 1, x)


def _i1e1(x: float) -> float:
    if math.isnan(x):
        return math.nan
    a = abs(x)
    if a <= 30.0:
        # exp(-|x|) sum_k (x/2)^(2k+1) / (k! (k+1)!)
        half, term, total, k = x / 2, x / 2, x / 2, 0
        while abs(term) > 1e-17 * abs(total) or k < 2:
            k += 1
            term *= half * half / (k * (k + 1))
            total += term
            if k > 500:
                break
        return total * math.exp(-a)
    # the asymptotic expansion: 1/sqrt(2 pi |x|) sum_k (-1)^k a_k(1) / |x|^k
    total, term = 1.0, 1.0
    for k in range(1, 30):
        term *= -(4.0 - (2 * k - 1) ** 2) / (k * 8.0 * a)
        total += term
    return math.copysign(total / math.sqrt(2 * math.pi * a), x)


def _vectorize(fn, nargs: int):
    v = np.vectorize(fn, otypes=[np.float64])

    def run(*args):
        wide = [np.asarray(a, np.float64) for a in args[:nargs]]
        with np.errstate(all="ignore"):
            return v(*wide).astype(np.asarray(args[0]).dtype)

    return run


erfc = _vectorize(math.erfc, 1)
digamma = _vectorize(_digamma1, 1)
polygamma = _vectorize(_polygamma1, 2)
zeta = _vectorize(_zeta1, 2)
bessel_i1e = _vectorize(_i1e1, 1)
