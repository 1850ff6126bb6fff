"""Functions of `jax.scipy.special` built by recurrences: bernoulli, bessel_jn, sph_harm_y.

- bernoulli(n): B_0 .. B_n (B_1 = -1/2), from the recurrence
  sum_{k <= m} C(m + 1, k) B_k = 0 in exact rational arithmetic on the host (n is static, as in
  JAX, which evaluates B_2k = (-1)^(k+1) 2 (2k)! zeta(2k) / (2 pi)^2k in floating point), then
  rounded once to the default float dtype (inf where it overflows).
- bessel_jn(z, v=, n_iter=): J_0(z) .. J_v(z) by Miller's backward recurrence
  f_k = 2 (k + 1) / z f_(k+1) - f_(k+2) from f_(n_iter+1) = 0, f_(n_iter) = 1e-16 (Zhang and
  Jin, "Computation of special functions", BJNDD, as jax.scipy), normalised by
  J_0 + 2 sum J_2k = 1. Its accuracy depends on n_iter the way JAX's does.
- sph_harm_y(n, m, theta, phi, n_max=): the orthonormal spherical harmonics
  Y_n^m = N P_n^|m|(cos theta) e^(i |m| phi) (Condon-Shortley phase), Y_n^-m = (-1)^m conj(Y_n^m),
  from the three-term recurrences of the normalised associated Legendre functions:
  P~_m^m = -sqrt((2m + 1) / 2m) sin(theta) P~_(m-1)^(m-1), P~_(m+1)^m = sqrt(2m + 3) cos(theta)
  P~_m^m, P~_l^m = a_lm (cos(theta) P~_(l-1)^m - b_lm P~_(l-2)^m). Degrees above n_max are
  clipped to n_max, as jax.scipy does.
"""

from __future__ import annotations

import functools
import math
import operator
from fractions import Fraction

import numpy as np

import purejit.numpy as jnp
from purejit import dtypes as pdt
from purejit import lax
from purejit.scipy._gamma import _inexact


@functools.lru_cache(maxsize=16)
def _bernoulli_exact(n: int) -> tuple[Fraction, ...]:
    """B_0 .. B_n as exact fractions (B_1 = -1/2)."""
    b = [Fraction(1)]
    for m in range(1, n + 1):
        if m > 1 and m % 2:
            b.append(Fraction(0))
            continue
        acc = sum((math.comb(m + 1, j) * b[j] for j in range(m)), Fraction(0))
        b.append(-acc / (m + 1))
    return tuple(b)


def _to_float(q: Fraction) -> float:
    try:
        return float(q)
    except OverflowError:
        return math.copysign(math.inf, q)


def bernoulli(n: int):
    """The first n + 1 Bernoulli numbers B_0 .. B_n (B_1 = -1/2), in the default float dtype.

    Args:
        n: a static non-negative Python integer.

    Returns:
        An array of shape (n + 1,).
    """
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError(
            f"Argument n of bernoulli must be a concrete Python integer, got {n!r}: it sets "
            "the shape of the result"
        ) from e
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    values = np.array([_to_float(q) for q in _bernoulli_exact(n)], np.float64)
    with np.errstate(over="ignore"):
        return jnp.asarray(values.astype(pdt.default_float()))


def _bessel_jn(z, v: int, n_iter: int):
    zero = jnp.zeros_like(z)
    f0, f1 = zero, jnp.full_like(z, 1e-16)
    norm = zero
    vals = [None] * (n_iter + 1)
    for kk in range(n_iter, -1, -1):
        f = 2.0 * (kk + 1.0) * f1 / z - f0
        vals[kk] = f
        if kk % 2 == 0:
            norm = norm + 2.0 * f
        f0, f1 = f1, f
    norm = norm - vals[0]
    return jnp.stack([vals[j] / norm for j in range(v + 1)])


def bessel_jn(z, *, v: int, n_iter: int = 50):
    """The Bessel functions of the first kind J_0 .. J_v at real z.

    Args:
        z: real array.
        v: the highest order (a static integer).
        n_iter: the length of the backward recurrence (static; JAX's rule of thumb: the
            smallest n with 0.5 log10(6.28 + n) - n log10(1.36 + |z| / n) > 20).

    Returns:
        An array of shape (v + 1, *z.shape) in z's inexact dtype.
    """
    z = jnp.asarray(z)
    if z.dtype.kind == "c":
        raise ValueError("complex input not supported.")
    z = _inexact("bessel_jn", z)
    try:
        v = operator.index(v)
    except TypeError as e:
        raise TypeError(f"Argument v of bessel_jn must be a static integer, got {v!r}") from e
    n_iter = int(n_iter)
    if v > n_iter:
        raise ValueError(f"bessel_jn: v={v} must not exceed n_iter={n_iter}")
    return _bessel_jn(z, v, n_iter)


def _legendre_table(n_max: int, cos_t, sin_t):
    """table[m][l] = P~_l^m(cos theta) (orthonormal on the sphere, with 1 / sqrt(2 pi) from
    the azimuth included), for 0 <= m <= l <= n_max."""
    table = [[None] * (n_max + 1) for _ in range(n_max + 1)]
    diag = jnp.full_like(cos_t, 1 / math.sqrt(4 * math.pi))
    for m in range(n_max + 1):
        if m:
            diag = -math.sqrt((2 * m + 1) / (2 * m)) * sin_t * diag
        table[m][m] = diag
        if m + 1 <= n_max:
            table[m][m + 1] = math.sqrt(2 * m + 3) * cos_t * diag
        for ll in range(m + 2, n_max + 1):
            a = math.sqrt((4 * ll * ll - 1) / (ll * ll - m * m))
            b = math.sqrt(((ll - 1) ** 2 - m * m) / (4 * (ll - 1) ** 2 - 1))
            table[m][ll] = a * (cos_t * table[m][ll - 1] - b * table[m][ll - 2])
    return table


def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
    """The spherical harmonics Y_n^m(theta, phi), theta the colatitude, phi the azimuth.

    Args:
        n: integer degrees (n >= 0).
        m: integer orders (|m| <= n).
        theta: colatitudes in [0, pi].
        phi: azimuths in [0, 2 pi].
        diff_n: unsupported (as in jax.scipy).
        n_max: the largest degree (static); the maximum of n when n is concrete. Degrees
            above it are clipped to it.

    Returns:
        A 1-D complex array of the broadcast length of the arguments.
    """
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported."
        )
    if n_max is None:
        try:
            n_max = int(np.max(np.asarray(n)))
        except Exception as e:
            raise TypeError(
                "sph_harm_y: n_max must be given statically when n is traced (it sets the "
                "number of Legendre recurrences)"
            ) from e
    n_max = int(n_max)
    theta, phi = jnp.broadcast_arrays(*_inexact("sph_harm_y", theta, phi))
    n, m = jnp.asarray(n), jnp.asarray(m)
    n, m, theta, phi = (jnp.atleast_1d(v) for v in jnp.broadcast_arrays(n, m, theta, phi))
    n, m, theta, phi = (v.reshape(-1) for v in (n, m, theta, phi))
    am = jnp.clip(jnp.abs(m), 0, n_max)
    nn = jnp.clip(n, 0, n_max)
    table = _legendre_table(n_max, jnp.cos(theta), jnp.sin(theta))
    val = jnp.zeros_like(theta)
    for mm in range(n_max + 1):
        for ll in range(mm, n_max + 1):
            val = jnp.where((am == mm) & (nn == ll), table[mm][ll], val)
    cdt = np.complex128 if theta.dtype == np.float64 else np.complex64
    angle = jnp.astype(am, theta.dtype) * phi
    y = lax.complex(val * jnp.cos(angle), val * jnp.sin(angle))
    sign = jnp.where(jnp.remainder(am, 2) == 1, -1.0, 1.0).astype(theta.dtype)
    neg = lax.complex(sign * jnp.real(y), -sign * jnp.imag(y))
    return jnp.astype(jnp.where(m < 0, neg, y), cdt)
