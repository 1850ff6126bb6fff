"""The confluent and Gauss hypergeometric functions of `jax.scipy.special`: hyp1f1 and hyp2f1,
for real arguments, computed as jax.scipy computes them (Pearson, Olver and Porter, "Numerical
methods for the computation of the confluent and Gauss hypergeometric functions", 2014):

- hyp1f1(a, b, x): the Taylor series sum (a)_k / (b)_k x^k / k! for |x| < 100, else the
  asymptotic series Gamma(b) / Gamma(a) e^x x^(a - b) sum (b - a)_k (1 - a)_k / k! x^-k;
  1 where a == 0, exp(x) where a == b, inf where b == 0 (a != 0).
- hyp2f1(a, b, c, x): the Taylor series, terminating where a or b is a non-positive integer;
  for x > 0.9 with c - a - b an integer, the digamma form of the connection formula (Abramowitz
  and Stegun 15.3.10-12); Euler's transformation (1 - x)^(c - a - b) 2F1(c - a, c - b; c; x)
  where c - a - b <= -1; the closed forms (1 - x)^-a, (1 - x)^-b at b == c, a == c and Gauss's
  Gamma(c) Gamma(c - a - b) / (Gamma(c - a) Gamma(c - b)) at x == 1; inf at the poles (c a
  non-positive integer, x > 1, or x == 1 with c - a - b <= 0).

Every series runs elementwise in a `while` loop for at most 250 terms, each element stopping
once its next term is below the dtype's epsilon relative to the sum. The derivatives are
jax.scipy's: d/dx is (a b / c) 2F1(a + 1, b + 1; c + 1; x) (a / b 1F1(a + 1; b + 1; x)); d/da,
d/db, d/dc are the series of the terms times differences of digamma.
"""

from __future__ import annotations

import numpy as np

import purejit.numpy as jnp
from purejit.custom_derivatives import custom_jvp
from purejit.scipy._error_functions import k
from purejit.scipy._gamma import _inexact, digamma, gamma
from purejit.scipy._integrals import iterate

_TERMS = 249  # jax.scipy stops its series at k = 250


def _eps(x) -> float:
    return float(np.finfo(x.dtype).eps)


def _f(i, x):
    return jnp.astype(i, x.dtype)


def _no(x):
    return jnp.zeros(x.shape, bool)


# ---- 1F1 -------------------------------------------------------------------------------------


def _hyp1f1_series(a, b, x, weight=None):
    """sum_k t_k (w_k) with t_k = (a)_k / (b)_k x^k / k!; w_k = weight(k) (t_0 w_0 = 0) when
    given: the derivative series in a or b."""
    eps = _eps(x)
    term = a / b * x
    total = jnp.ones_like(x) if weight is None else jnp.zeros_like(x)

    def step(i, total, term):
        kf = _f(i, x)
        total = total + (term if weight is None else term * weight(kf))
        term = term * (a + kf) / (b + kf) * x / (kf + 1)
        return (total, term), jnp.abs(term) / jnp.abs(total) <= eps

    first_done = jnp.abs(term) / jnp.abs(total) <= eps if weight is None else _no(x)
    total, _ = iterate(step, (total, term), first_done, _TERMS)
    return total


def _hyp1f1_asymptotic(a, b, x):
    eps = _eps(x)
    term = (b - a) * (1 - a) / x

    def step(i, total, term):
        kf = _f(i, x)
        total = total + term
        term = term * (b - a + kf) * (1 - a + kf) / (kf + 1) / x
        return (total, term), jnp.abs(term) / jnp.abs(total) <= eps

    total, _ = iterate(step, (jnp.ones_like(x), term), jnp.abs(term) <= eps, _TERMS)
    return gamma(b) / gamma(a) * jnp.exp(x) * x ** (a - b) * total


@custom_jvp
def _hyp1f1(a, b, x):
    near = jnp.abs(x) < 100
    series = _hyp1f1_series(a, b, jnp.where(near, x, k(x, 1.0)))
    asym = _hyp1f1_asymptotic(a, b, jnp.where(near, k(x, 200.0), x))
    out = jnp.where(near, series, asym)
    out = jnp.where((b == 0) & (a != 0), k(x, np.inf), out)
    out = jnp.where((a == b) & (a != 0), jnp.exp(x), out)
    return jnp.where(a == 0, k(x, 1.0), out)


def _hyp1f1_jvp(primals, tangents):
    a, b, x = primals
    da, db, dx = tangents
    out = _hyp1f1(a, b, x)
    d_a = _hyp1f1_series(a, b, x, lambda kf: digamma(a + kf) - digamma(a))
    d_b = _hyp1f1_series(a, b, x, lambda kf: digamma(b) - digamma(b + kf))
    d_x = a / b * _hyp1f1(a + 1, b + 1, x)
    return out, d_a * da + d_b * db + d_x * dx


_hyp1f1.defjvp(_hyp1f1_jvp)


def hyp1f1(a, b, x):
    """The confluent hypergeometric function 1F1(a; b; x) for real arguments (1 at
    a = b = 0, as jax.scipy).

    Args:
        a, b, x: real arrays (broadcast together).

    Returns:
        1F1(a; b; x) in the promoted inexact dtype.
    """
    a, b, x = jnp.broadcast_arrays(*_inexact("hyp1f1", a, b, x))
    return _hyp1f1(a, b, x)


# ---- 2F1 -------------------------------------------------------------------------------------


def _hyp2f1_series(a, b, c, x, weight=None):
    """sum_k t_k (w_k), t_k = (a)_k (b)_k / (c)_k x^k / k!, terminating where a term is 0."""
    eps = _eps(x)

    def step(i, total, term):
        kf = _f(i, x)
        total = total + (term if weight is None else term * weight(kf - 1))
        term = term * (a + kf - 1) * (b + kf - 1) / (c + kf - 1) / kf * x
        return (total, term), jnp.abs(term) <= eps * jnp.abs(total)

    total, _ = iterate(step, (jnp.zeros_like(x), jnp.ones_like(x)), _no(x), _TERMS)
    return total


def _hyp2f1_digamma(a, b, c, x):
    """2F1 near x = 1 when d = c - a - b is an integer (A&S 15.3.10-12)."""
    eps = _eps(x)
    d = c - a - b
    s = 1 - x
    rd = jnp.round(d)
    pos = rd >= 0
    e = jnp.where(pos, d, -d)
    zero = jnp.zeros_like(d)
    d1, d2 = jnp.where(pos, d, zero), jnp.where(pos, zero, d)
    ard = jnp.where(pos, rd, -rd)
    log_s = jnp.log(s)
    one = jnp.ones_like(x)
    y = digamma(one) + digamma(1 + e) - digamma(a + d1) - digamma(b + d1) - log_s
    y = y / gamma(e + 1)
    p = (a + d1) * (b + d1) * s / gamma(e + 2)

    def step(i, p, q, y):
        t = _f(i, x)
        r = digamma(1 + t) + digamma(1 + t + e) - digamma(a + t + d1) - digamma(b + t + d1)
        q = p * (r - log_s)
        y = y + q
        p = p * s * (a + t + d1) / (t + 1) * (b + t + d1) / (t + 1 + e)
        return (p, q, y), jnp.abs(q) < eps * jnp.abs(y)

    _, _, y = iterate(step, (p, y, y), jnp.abs(y) < eps * jnp.abs(y), _TERMS)

    # the finite sum sum_{t < |d|} of A&S 15.3.11/12, each element to its own |d|
    def finite(i, p, y1):
        t = _f(i, x) - 1
        p = p * s * (a + t + d2) * (b + t + d2) / (1 - e + t) / (t + 1)
        return (p, jnp.where(t + 1 < ard, y1 + p, y1)), t + 2 >= ard

    _, y1 = iterate(finite, (one, one), ard <= 1, 10**6)
    gc = gamma(c)
    y1 = y1 * gamma(e) * gc / (gamma(a + d1) * gamma(b + d1))
    yn = y * gc / (gamma(a + d2) * gamma(b + d2))
    yn = jnp.where(jnp.remainder(ard, 2) == 1, -yn, yn)
    q = s**rd
    summed = jnp.where(rd > 0, yn * q + y1, yn + y1 * q)
    return jnp.where(rd == 0, y * gc / (gamma(a) * gamma(b)), summed)


def _terminal_or_series(a, b, c, x):
    eps = _eps(x) * 50
    d = c - a - b
    neg_int = ((a <= 0) & (jnp.abs(a - jnp.round(a)) < eps)) | (
        (b <= 0) & (jnp.abs(b - jnp.round(b)) < eps)
    )
    use_digamma = (x > 0.9) & ~neg_int & (jnp.abs(d - jnp.round(d)) < eps)
    series = _hyp2f1_series(a, b, c, jnp.where(use_digamma, k(x, 0.0), x))
    # elsewhere the digamma form runs on 2F1(1, 1; 3; 0.95) (d = 1: one finite-sum term)
    one = k(x, 1.0)
    safe = [jnp.where(use_digamma, v, k(x, s)) for v, s in ((a, 1.0), (b, 1.0), (c, 3.0))]
    near_one = _hyp2f1_digamma(*safe, jnp.where(use_digamma, x, one * 0.95))
    return jnp.where(use_digamma, near_one, series)


@custom_jvp
def _hyp2f1(a, b, c, x):
    eps = _eps(x) * 50
    d = c - a - b
    s = 1 - x
    ca, cb = c - a, c - b
    inf, one = k(x, np.inf), k(x, 1.0)
    euler = (d <= -1) & ~((jnp.abs(d - jnp.round(d)) >= eps) & (s < 0))
    # the cases in jax.scipy's order of precedence, the last one first
    generic = _terminal_or_series(a, b, c, jnp.where(euler | (x >= 1), k(x, 0.0), x))
    transformed = s**d * _terminal_or_series(ca, cb, c, jnp.where(euler, x, k(x, 0.0)))
    safe_g = jnp.where((x == 1) & ~euler, d, one)
    at_one = gamma(c) * gamma(safe_g) / (gamma(ca) * gamma(cb))
    out = jnp.where(x == 1, at_one, generic)
    out = jnp.where(x > 1, inf, out)
    out = jnp.where((x < 1) & (a == c), s ** (-b), out)
    out = jnp.where((x < 1) & (b == c), s ** (-a), out)
    out = jnp.where((d <= 0) & (x == 1), inf, out)
    out = jnp.where(euler, transformed, out)
    out = jnp.where((c == 0) | ((c < 0) & (jnp.remainder(c, 1) == 0)), inf, out)
    trivial = (x == 0) | (((a == 0) | (b == 0)) & (c != 0))
    return jnp.where(trivial, one, out)


def _hyp2f1_jvp(primals, tangents):
    a, b, c, x = primals
    da, db, dc, dx = tangents
    out = _hyp2f1(a, b, c, x)
    d_a = _hyp2f1_series(a, b, c, x, lambda kf: digamma(a + kf) - digamma(a))
    d_b = _hyp2f1_series(a, b, c, x, lambda kf: digamma(b + kf) - digamma(b))
    d_c = _hyp2f1_series(a, b, c, x, lambda kf: digamma(c) - digamma(c + kf))
    d_x = a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x)
    return out, d_a * da + d_b * db + d_c * dc + d_x * dx


_hyp2f1.defjvp(_hyp2f1_jvp)


def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function 2F1(a, b; c; x) for real arguments.

    Args:
        a, b, c, x: real arrays (broadcast together).

    Returns:
        2F1(a, b; c; x) in the promoted inexact dtype.
    """
    a, b, c, x = jnp.broadcast_arrays(*_inexact("hyp2f1", a, b, c, x))
    return _hyp2f1(a, b, c, x)
