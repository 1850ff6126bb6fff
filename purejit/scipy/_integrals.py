"""The exponential, sine/cosine and Fresnel integrals and the dilogarithm of
`jax.scipy.special`: exp1, expi, expn, sici, fresnel, spence.

Each is evaluated elementwise by a power series where it converges quickly and a continued
fraction (modified Lentz) or asymptotic series elsewhere (Numerical Recipes 6.3, 6.8, 6.9):

- expn(n, x) = E_n(x): the series E_n = (-x)^(n-1) / (n-1)! (psi(n) - log x)
  - sum_{k != n-1} (-x)^k / ((k - n + 1) k!) for x <= 1, the continued fraction
  E_n = exp(-x) / (x + n - 1 * n / (x + n + 2 - ...)) for x > 1; exp1 = expn(1, .).
- expi(x) = Ei(x): gamma + log x + sum x^k / (k k!) for 0 < x <= 40 (16 in float32), the
  asymptotic series exp(x) / x * sum k! / x^k beyond (stopped at its smallest term), and
  -E1(-x) for x < 0.
- sici(x) = (Si, Ci): the power series for |x| <= 2, else the continued fraction of
  E1(ix) = -Ci(x) + i (Si(x) - pi/2) in complex arithmetic.
- fresnel(x) = (S, C), scipy's normalisation (integrals of sin and cos of pi t^2 / 2): the
  power series for |x| <= 1.5, else the continued fraction of erfc in complex arithmetic.
- spence(x) = int_1^x log t / (1 - t) dt for x >= 0 (NaN below, as jax.scipy): Cephes'
  rational fit on [0.5, 1.5] with the reflection and inversion identities elsewhere.

The iterations run in `while` loops until every element has converged, each element frozen
once it has. Derivatives are custom JVPs with the closed forms jax.scipy uses:
E_n' = -E_(n-1), Ei' = exp(x) / x, Si' = sin(x) / x, Ci' = cos(x) / x, S' = sin(pi x^2 / 2),
C' = cos(pi x^2 / 2), and spence is differentiated through its closed form.
"""

from __future__ import annotations

import math

import numpy as np

import purejit.numpy as jnp
from purejit.custom_derivatives import custom_jvp
from purejit.lax import control
from purejit.scipy._error_functions import horner, inexact, k
from purejit.scipy._gamma import digamma

_EULER = 0.57721566490153286061
_MAX_ITER = 500


def _eps(x) -> float:
    return float(np.finfo(np.dtype(x.dtype).type(0).real.dtype).eps)


def _tiny(x) -> float:
    return float(np.finfo(np.dtype(x.dtype).type(0).real.dtype).tiny) * 1e3


def iterate(step, init, done, max_iter: int = _MAX_ITER):
    """Run `step(i, *carry) -> (carry, done)` for i = 1, 2, ... until every element of `done`
    is set (or `max_iter` steps); an element's carry is frozen from the step where it
    converged."""

    def cond(state):
        return (state[0] < max_iter) & ~jnp.all(state[1])

    def body(state):
        i, finished, *carry = state
        new, now_done = step(i + 1, *carry)
        kept = [jnp.where(finished, old, nw) for old, nw in zip(carry, new)]
        return (i + 1, finished | now_done, *kept)

    out = control.while_loop(cond, body, (jnp.asarray(np.int32(0)), done, *init))
    return out[2:]


def _as_float(i, x):
    return jnp.astype(i, x.dtype)


# ---- E_n, E1 and Ei ---------------------------------------------------------------------------


def _expn_series(n, x):
    """E_n(x) for 0 < x <= 1, n >= 1."""
    nm1 = n - 1
    psi = digamma(n)
    log_x = jnp.log(x)
    ans = jnp.where(nm1 != 0, 1 / jnp.where(nm1 != 0, nm1, 1), -log_x - k(x, _EULER))
    eps = _eps(x)

    def step(i, fact, total):
        fi = _as_float(i, x)
        fact = fact * -x / fi
        at_pole = fi == nm1
        term = jnp.where(at_pole, fact * (psi - log_x), -fact / jnp.where(at_pole, 1, fi - nm1))
        total = total + term
        return (fact, total), jnp.abs(term) <= jnp.abs(total) * eps

    _, total = iterate(step, (jnp.ones_like(x), ans), jnp.zeros(x.shape, bool))
    return total


def _expn_cf(n, x):
    """E_n(x) for x > 1 by its continued fraction (modified Lentz)."""
    nm1 = n - 1
    tiny, eps = _tiny(x), _eps(x)
    b = x + n
    d = 1 / b

    def step(i, b, cc, d, h):
        fi = _as_float(i, x)
        an = -fi * (nm1 + fi)
        b = b + 2
        d = an * d + b
        d = 1 / jnp.where(jnp.abs(d) < tiny, tiny, d)
        cc = b + an / cc
        cc = jnp.where(jnp.abs(cc) < tiny, tiny, cc)
        delta = cc * d
        return (b, cc, d, h * delta), jnp.abs(delta - 1) <= eps

    init = (b, jnp.full_like(x, 1 / tiny), d, d)
    *_, h = iterate(step, init, jnp.zeros(x.shape, bool))
    return h * jnp.exp(-x)


def _expn_impl(n, x):
    big = (x > 1) & ~jnp.isinf(x)
    safe_series = jnp.where(big | (x <= 0), k(x, 0.5), x)
    safe_cf = jnp.where(big, x, k(x, 2.0))
    n_pos = jnp.where(n >= 1, n, k(n, 1.0))
    val = jnp.where(big, _expn_cf(n_pos, safe_cf), _expn_series(n_pos, safe_series))
    val = jnp.where(n == 0, jnp.exp(-x) / x, val)
    at_zero = jnp.where(n < 2, k(x, np.inf), 1 / jnp.where(n < 2, 1, n - 1))
    val = jnp.where(x == 0, at_zero, val)
    val = jnp.where(jnp.isinf(x), k(x, 0.0), val)
    return jnp.where((n < 0) | (x < 0) | jnp.isnan(x) | jnp.isnan(n), k(x, np.nan), val)


@custom_jvp
def _expn(n, x):
    return _expn_impl(n, x)


def _expn_jvp(primals, tangents):
    n, x = primals
    _, dx = tangents
    return _expn(n, x), -dx * _expn(n - 1, x)


_expn.defjvp(_expn_jvp)


def expn(n, x):
    """The generalised exponential integral E_n(x) = int_1^inf exp(-x t) / t^n dt.

    Args:
        n: non-negative integer-valued array (NaN where negative).
        x: real array (NaN where negative).

    Returns:
        E_n(x) in the promoted inexact dtype.
    """
    n, x = inexact("expn", n, x)
    n, x = jnp.broadcast_arrays(n, x)
    return _expn(n, x)


def exp1(x):
    """The exponential integral E1(x) = int_x^inf exp(-t) / t dt (NaN for x < 0).

    Args:
        x: real array.

    Returns:
        E1(x) in x's inexact dtype.
    """
    x = inexact("exp1", x)
    return _expn(jnp.ones_like(x), x)


def _ei_series(x):
    eps = _eps(x)

    def step(i, fact, total):
        fact = fact * x / _as_float(i, x)
        term = fact / _as_float(i, x)
        total = total + term
        return (fact, total), term <= total * eps

    _, total = iterate(step, (jnp.ones_like(x), jnp.zeros_like(x)), jnp.zeros(x.shape, bool))
    return total + jnp.log(x) + k(x, _EULER)


def _ei_asymptotic(x):
    eps = _eps(x)

    def step(i, term, total, stop):
        prev = term
        term = term * _as_float(i, x) / x
        grows = term >= prev
        total = jnp.where(grows, total, total + term)
        return (term, total, stop), grows | (term < eps)

    init = (jnp.ones_like(x), jnp.zeros_like(x), jnp.zeros_like(x))
    _, total, _ = iterate(step, init, jnp.zeros(x.shape, bool))
    return jnp.exp(x - jnp.log(x)) * (1 + total)


@custom_jvp
def _expi(x):
    switch = 40.0 if x.dtype == np.float64 else 25.0
    pos = x > 0
    series_at = pos & (x <= switch)
    ser = _ei_series(jnp.where(series_at, x, k(x, 1.0)))
    asy = _ei_asymptotic(jnp.where(x > switch, x, k(x, 2 * switch)))
    neg = -_expn(jnp.ones_like(x), jnp.where(pos, k(x, 1.0), -x))
    out = jnp.where(pos, jnp.where(series_at, ser, asy), neg)
    out = jnp.where(jnp.isposinf(x), k(x, np.inf), out)
    return jnp.where(x == 0, k(x, -np.inf), out)


_expi.defjvps(lambda g, ans, x: g * jnp.exp(x) / x)


def expi(x):
    """The exponential integral Ei(x) = -int_-x^inf exp(-t) / t dt (principal value).

    Args:
        x: real array.

    Returns:
        Ei(x) in x's inexact dtype.
    """
    return _expi(inexact("expi", x))


# ---- sine and cosine integrals ----------------------------------------------------------------

_SICI_TERMS = 26


def _sici_series(t):
    """(Si, Ci - gamma - log t) for 0 <= t <= 2: the power series, unrolled."""
    si, ci = jnp.zeros_like(t), jnp.zeros_like(t)
    fact = jnp.ones_like(t)
    for j in range(1, _SICI_TERMS + 1):
        fact = fact * t / j
        term = fact / j
        sign = 1 if (j // 2) % 2 == 0 else -1
        if j % 2:
            si = si + sign * term
        else:
            ci = ci + sign * term
    return si, ci


def _complex_lentz(b0, a_of, b_step, eps, tiny):
    """The continued fraction 1 / (b0 + a_1 / (b0 + b_step + a_2 / ...)) with complex b."""
    d = 1 / b0

    def step(i, b, cc, d, h):
        a = a_of(i)
        b = b + b_step
        d = 1 / (a * d + b)
        cc = b + a / cc
        delta = cc * d
        err = jnp.abs(jnp.real(delta) - 1) + jnp.abs(jnp.imag(delta))
        return (b, cc, d, h * delta), err <= eps

    init = (b0, jnp.full_like(b0, 1 / tiny), d, d)
    *_, h = iterate(step, init, jnp.zeros(b0.shape, bool))
    return h


def _complex_of(x):
    return np.complex128 if x.dtype == np.float64 else np.complex64


@custom_jvp
def _sici(x):
    t = jnp.abs(x)
    small = t <= 2
    ts = jnp.where(small, t, k(t, 1.0))
    si_s, ci_s = _sici_series(ts)
    ci_s = ci_s + jnp.log(ts) + k(t, _EULER)
    # E1(i t) e^(i t) by its continued fraction: b_1 = 1 + i t, a_j = -(j - 1)^2, b += 2
    tl = jnp.where(small | jnp.isinf(t), k(t, 3.0), t)
    cdt = _complex_of(x)
    b0 = jnp.astype(1 + 0 * tl, cdt) + jnp.astype(tl, cdt) * k(jnp.astype(tl, cdt), 1j)
    h = _complex_lentz(b0, lambda i: -jnp.astype(jnp.square(_as_float(i, t)), cdt),
                       k(b0, 2.0), _eps(t), _tiny(t))  # fmt: skip
    h = (jnp.astype(jnp.cos(tl), cdt) - k(b0, 1j) * jnp.astype(jnp.sin(tl), cdt)) * h
    si_l, ci_l = k(t, math.pi / 2) + jnp.imag(h), -jnp.real(h)
    si = jnp.where(small, si_s, si_l)
    ci = jnp.where(small, ci_s, ci_l)
    si = jnp.where(jnp.isinf(t), k(t, math.pi / 2), si)
    ci = jnp.where(jnp.isinf(t), k(t, 0.0), ci)
    ci = jnp.where(t == 0, k(t, -np.inf), ci)
    ci = jnp.where(x < 0, jnp.where(jnp.isinf(x), k(t, np.nan), ci), ci)
    return jnp.sign(x) * si, ci


def _sici_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return _sici(x), (jnp.sinc(x / k(x, math.pi)) * dx, jnp.cos(x) / x * dx)


_sici.defjvp(_sici_jvp)


def sici(x):
    """The sine and cosine integrals Si(x) = int_0^x sin t / t dt and
    Ci(x) = gamma + log x + int_0^x (cos t - 1) / t dt.

    Args:
        x: real array.

    Returns:
        (Si(x), Ci(x)); Si is odd, and Ci(x) for x < 0 is Ci(-x) (the real part of scipy's
        complex value), NaN at -inf, as jax.scipy.
    """
    return _sici(inexact("sici", x))


# ---- Fresnel integrals ------------------------------------------------------------------------

_FRESNEL_TERMS = 34


def _fresnel_series(x):
    """(S, C) for 0 <= x <= 1.5: the power series in (pi/2) x^2, unrolled."""
    s, cc = jnp.zeros_like(x), x
    u = k(x, math.pi / 2) * x * x
    fact = jnp.ones_like(x)
    for j in range(1, _FRESNEL_TERMS + 1):
        fact = fact * u / j
        term = x * fact / (2 * j + 1)
        sign = 1 if (j // 2) % 2 == 0 else -1
        if j % 2:
            s = s + sign * term
        else:
            cc = cc + sign * term
    return s, cc


@custom_jvp
def _fresnel(x):
    ax = jnp.abs(x)
    small = ax <= 1.5
    s_s, c_s = _fresnel_series(jnp.where(small, ax, k(ax, 1.0)))
    big = jnp.isinf(ax)
    al = jnp.where(small | big, k(ax, 2.0), ax)
    cdt = _complex_of(x)
    pix2 = k(al, math.pi) * al * al
    one = jnp.astype(1 + 0 * al, cdt)
    b0 = one - jnp.astype(pix2, cdt) * k(one, 1j)
    h = _complex_lentz(
        b0,
        lambda i: jnp.astype(-(2 * _as_float(i, ax) - 1) * (2 * _as_float(i, ax)), cdt),
        k(b0, 4.0),
        _eps(ax),
        _tiny(ax),
    )
    h = h * (jnp.astype(al, cdt) - jnp.astype(al, cdt) * k(one, 1j))
    half = k(al, 0.5) * pix2
    phase = jnp.astype(jnp.cos(half), cdt) + k(one, 1j) * jnp.astype(jnp.sin(half), cdt)
    cs = k(one, 0.5 + 0.5j) * (one - phase * h)
    s_l, c_l = jnp.imag(cs), jnp.real(cs)
    s = jnp.where(small, s_s, jnp.where(big, k(ax, 0.5), s_l))
    cc = jnp.where(small, c_s, jnp.where(big, k(ax, 0.5), c_l))
    return jnp.sign(x) * s, jnp.sign(x) * cc


def _fresnel_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    arg = k(x, math.pi / 2) * x * x
    return _fresnel(x), (jnp.sin(arg) * dx, jnp.cos(arg) * dx)


_fresnel.defjvp(_fresnel_jvp)


def fresnel(x):
    """The Fresnel integrals S(x) = int_0^x sin(pi t^2 / 2) dt, C(x) = int_0^x cos(...) dt.

    Args:
        x: real array.

    Returns:
        (S(x), C(x)) in x's inexact dtype.
    """
    return _fresnel(inexact("fresnel", x))


# ---- the dilogarithm --------------------------------------------------------------------------

# Cephes' spence: spence(x) = -w P(w) / Q(w), w = x - 1, for 0.5 <= x <= 1.5
_SPENCE_P = (
    4.65128586073990045278e-5, 7.31589045238094711071e-3, 1.33847639578309018650e-1,
    8.79691311754530315341e-1, 2.71149851196553469920e0, 4.25697156008121755724e0,
    3.29771340985225106936e0, 1.00000000000000000126e0,
)  # fmt: skip
_SPENCE_Q = (
    6.90990488912553276999e-4, 2.54043763932544379113e-2, 2.82974860602568089943e-1,
    1.41172597751831069617e0, 3.63800533345137075418e0, 5.03278880143316990390e0,
    3.54771340985225096217e0, 9.99999999999999998740e-1,
)  # fmt: skip


def spence(x):
    """Spence's function int_1^x log t / (1 - t) dt, for real x >= 0 (NaN for x < 0).

    Args:
        x: float32 or float64 array.

    Returns:
        spence(x) in x's dtype.
    """
    x = jnp.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={x.dtype} is not supported, see docstring for supported types.")
    # spence(x) = -log(x)^2 / 2 - spence(1 / x) folds x > 1.5 into [0, 1.5)
    inverted = x > 1.5
    y = jnp.where(inverted, 1 / jnp.where(inverted, x, 1), x)
    # spence(y) = pi^2/6 - log(y) log(1 - y) - spence(1 - y) folds [0, 0.5) into (0.5, 1]
    reflected = y < 0.5
    z = jnp.where(reflected, 1 - y, y)
    w = z - 1
    val = -w * horner(_SPENCE_P, w) / horner(_SPENCE_Q, w)
    ys = jnp.where(reflected & (y > 0), y, k(y, 0.5))
    refl = k(x, math.pi**2 / 6) - jnp.log(ys) * jnp.log1p(-ys) - val
    val = jnp.where(reflected, jnp.where(y == 0, k(x, math.pi**2 / 6), refl), val)
    lx = jnp.log(jnp.where(inverted, x, 1))
    val = jnp.where(inverted, k(x, -0.5) * lx * lx - val, val)
    return jnp.where((x < 0) | jnp.isnan(x), k(x, np.nan), val)
