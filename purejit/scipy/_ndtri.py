"""ndtri, the standard normal quantile, by Cephes' piecewise rational approximations (the
form jax.scipy.special.ndtri evaluates, step for step, so the bits agree).

For p in (exp(-2), 1 - exp(-2)) the quantile is sqrt(2 pi) (w + w^3 P0(w^2) / Q0(w^2)) with
w = p - 1/2 (of the nearer tail's p). Nearer the tails, with z = sqrt(-2 log p):
x = z - log(z) / z - P(1/z) / Q(1/z) / z, the coefficients P1/Q1 for z < 8 and P2/Q2 beyond
(p below exp(-32)). p = 0 and p = 1 give -inf and inf. erf_inv(2p - 1), the closed form,
loses relative accuracy as p nears 0 (6e-4 at p = 1e-6 in float32).
"""

from __future__ import annotations

import math

import numpy as np

from purejit import lax
from purejit.numpy._core import where
from purejit.numpy._poly import polyval

_P0 = (
    -5.99633501014107895267e1,
    9.80010754185999661536e1,
    -5.66762857469070293439e1,
    1.39312609387279679503e1,
    -1.23916583867381258016e0,
)
_Q0 = (
    1.0,
    1.95448858338141759834e0,
    4.67627912898881538453e0,
    8.63602421390890590575e1,
    -2.25462687854119370527e2,
    2.00260212380060660359e2,
    -8.20372256168333339912e1,
    1.59056225126211695515e1,
    -1.18331621121330003142e0,
)
_P1 = (
    4.05544892305962419923e0,
    3.15251094599893866154e1,
    5.71628192246421288162e1,
    4.40805073893200834700e1,
    1.46849561928858024014e1,
    2.18663306850790267539e0,
    -1.40256079171354495875e-1,
    -3.50424626827848203418e-2,
    -8.57456785154685413611e-4,
)
_Q1 = (
    1.0,
    1.57799883256466749731e1,
    4.53907635128879210584e1,
    4.13172038254672030440e1,
    1.50425385692907503408e1,
    2.50464946208309415979e0,
    -1.42182922854787788574e-1,
    -3.80806407691578277194e-2,
    -9.33259480895457427372e-4,
)
_P2 = (
    3.23774891776946035970e0,
    6.91522889068984211695e0,
    3.93881025292474443415e0,
    1.33303460815807542389e0,
    2.01485389549179081538e-1,
    1.23716634817820021358e-2,
    3.01581553508235416007e-4,
    2.65806974686737550832e-6,
    6.23974539184983293730e-9,
)
_Q2 = (
    1.0,
    6.02427039364742014255e0,
    3.67983563856160859403e0,
    1.37702099489081330271e0,
    2.16236993594496635890e-1,
    1.34204006088543189037e-2,
    3.28014464682127739104e-4,
    2.89247864745380683936e-6,
    6.79019408009981274425e-9,
)


def ndtri_rational(p):
    """ndtri of a float32/float64 array `p` (already checked and converted)."""
    dt = np.dtype(p.dtype).type

    def k(v):  # a constant of p's dtype
        return np.asarray(v, dt)

    def coeffs(c):
        return np.asarray(c, dt)

    near = where(p > k(-np.expm1(-2.0)), k(1.0) - p, p)  # the nearer tail's p
    # p = 0 (and 1) is answered at the end; 1/2 keeps the unused branches finite
    safe = where(near == k(0.0), k(0.5), near)

    w = safe - k(0.5)
    ww = lax.square(w)
    big = w + w * ww * (polyval(coeffs(_P0), ww) / polyval(coeffs(_Q0), ww))
    big = big * -k(math.sqrt(2.0 * math.pi))

    z = lax.sqrt(k(-2.0) * lax.log(safe))
    first = z - lax.log(z) / z
    inv = 1 / z
    far = first - polyval(coeffs(_P2), inv) / polyval(coeffs(_Q2), inv) / z
    mid = first - polyval(coeffs(_P1), inv) / polyval(coeffs(_Q1), inv) / z

    x = where(safe > k(np.exp(-2.0)), big, where(z >= k(8.0), far, mid))
    x = where(p > k(1.0 - np.exp(-2.0)), x, -x)
    return where(p == k(0.0), k(-np.inf), where(p == k(1.0), k(np.inf), x))
