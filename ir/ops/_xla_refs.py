"""The NumPy references of the elementwise ops (`elementwise.py`) where XLA's semantics
differ from NumPy's: integer division, shifts and power, bit counts, rounding, NaN-ordering
maximum/minimum, lgamma's poles, erf_inv, next_after. `elementwise.py`'s docstring lists
what each promises; `elementwise.py` registers the ops.
"""

from __future__ import annotations

import math

import numpy as np
from purejit.ir import dtypes


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def _round_afz(x):
    # halves away from zero; floor(|x| + 0.5) would round 0.49999997f up, so step from trunc
    t = np.trunc(x)
    away = np.abs(x - t) >= 0.5
    return np.copysign(np.where(away, t + np.sign(x), t), x).astype(x.dtype)


def _sign(x):
    # XLA keeps the zero's sign (sign(-0.0) == -0.0); NaN stays NaN
    if dtypes.is_float(x.dtype):
        return np.where(x == 0, x, np.sign(x)).astype(x.dtype)
    return np.sign(x)


def _not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _unsigned(x):
    """The same bits viewed as the unsigned integer type of the same width."""
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _signed(x):
    """The same bits viewed as the signed integer type of the same width."""
    return x.view(np.dtype(f"i{x.dtype.itemsize}"))


def _popcnt(x):
    # counts the bits of the two's complement pattern (np.bitwise_count counts |x| for signed)
    return np.bitwise_count(_unsigned(x)).astype(x.dtype)


def _clz(x):
    bits = x.dtype.itemsize * 8
    u = _unsigned(x).astype(np.uint64)
    out = np.full(x.shape, bits, dtype=np.int64)
    for i in range(bits):
        hit = (u >> np.uint64(bits - 1 - i)) & np.uint64(1)
        out = np.where((out == bits) & (hit == 1), i, out)
    return out.astype(x.dtype)


def _abs(x):
    return np.abs(x)


def _int_min_overflow(a, b):
    """Where a signed division `a / b` overflows (INT_MIN / -1)."""
    if a.dtype.kind != "i":
        return np.zeros(np.shape(a), bool)
    return (a == np.iinfo(a.dtype).min) & (b == -1)


def _divide(a, b):
    # XLA: truncates towards zero; x / 0 == -1 (all bits set); INT_MIN / -1 == INT_MIN
    if not dtypes.is_integer(a.dtype):
        return a / b
    zero, over = b == 0, _int_min_overflow(a, b)
    safe = np.where(zero | over, np.ones_like(b), b)
    q = a // safe  # floor division; correct it to truncation below
    inexact = (q * safe) != a
    q = np.where(inexact & ((a < 0) != (safe < 0)), q + 1, q)
    all_ones = np.full(np.shape(a), -1, np.int64).astype(a.dtype)
    return np.where(zero, all_ones, np.where(over, a, q)).astype(a.dtype)


def _remainder(a, b):
    # XLA: the sign of the dividend (C's fmod); x % 0 == x; INT_MIN % -1 == 0
    if not dtypes.is_integer(a.dtype):
        return np.fmod(a, b)
    zero, over = b == 0, _int_min_overflow(a, b)
    safe = np.where(zero | over, np.ones_like(b), b)
    r = np.fmod(a, safe)
    return np.where(zero, a, np.where(over, np.zeros_like(a), r)).astype(a.dtype)


# the exponent bits integer `power` reads (XLA's own op read these up to jaxlib 0.11; the
# lowering spells them out, so the op means the same on every jaxlib)
INT_POWER_BITS = 6


def _power(a, b):
    if dtypes.is_complex(a.dtype):
        # XLA: 0 ** b is 1 for b == 0, 0 for real b > 0, NaN otherwise (NumPy gives 0 for
        # any b with a positive real part)
        out = np.power(a, b)
        positive_real = (b.imag == 0) & (b.real > 0)
        undefined = (a == 0) & (b != 0) & ~positive_real
        return np.where(undefined, np.array(complex(np.nan, np.nan), a.dtype), out)
    if not dtypes.is_integer(a.dtype):
        return np.power(a, b)
    # XLA's integer power: square-and-multiply over the low 6 bits of the exponent, wrapping
    # in the operand's width; a negative exponent (its bits read as signed, for unsigned
    # types too) gives 1 for a base of 1, +-1 for a base of -1, 0 otherwise.
    base, e = _unsigned(a).copy(), _unsigned(b).copy()
    acc = np.ones_like(base)
    one = base.dtype.type(1)
    for _ in range(INT_POWER_BITS):
        acc = np.where((e & one) == one, acc * base, acc)
        base = base * base
        e = e >> one
    sa = _signed(a)
    odd = (_unsigned(b) & one) == one
    small = np.where(sa == 1, 1, np.where(sa == -1, np.where(odd, -1, 1), 0)).astype(sa.dtype)
    return np.where(_signed(b) < 0, small.view(a.dtype), acc.view(a.dtype)).astype(a.dtype)


def _logical_shift(shift, a, b):
    # the shift amount is read as unsigned: negative or >= bit width gives 0
    bits = a.dtype.itemsize * 8
    sh = _unsigned(b)
    ok = sh < bits
    out = shift(_unsigned(a), np.where(ok, sh, 0).astype(sh.dtype))
    return np.where(ok, out, 0).astype(sh.dtype).view(a.dtype)


def _shift_left(a, b):
    return _logical_shift(np.left_shift, a, b)


def _shift_right_logical(a, b):
    return _logical_shift(np.right_shift, a, b)


def _shift_right_arithmetic(a, b):
    # a shift amount >= the bit width (read as unsigned) fills with the sign bit
    bits = a.dtype.itemsize * 8
    s = _signed(a)
    sh = np.minimum(_unsigned(b), bits - 1).astype(s.dtype)
    return np.right_shift(s, sh).view(a.dtype)


def _lgamma(v: float) -> float:
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):  # poles at 0, -1, -2, ...: +inf, as XLA gives
        return math.inf


def _minmax(pick, real_fn):
    """maximum/minimum. Real types: NumPy's (NaN propagates, as in XLA). Complex: JAX's
    lexicographic order on (real, imag), picking `a` where `pick(a, b)` holds, else `b`."""

    def run(a, b):
        if dtypes.is_float(a.dtype):
            # XLA orders -0.0 below +0.0: maximum(0.0, -0.0) == 0.0, minimum == -0.0
            out = real_fn(a, b)
            both_zero = (a == 0) & (b == 0)
            either, both = np.signbit(a) | np.signbit(b), np.signbit(a) & np.signbit(b)
            neg = either if pick is np.less else both
            zero = np.where(neg, -0.0, 0.0).astype(out.dtype)
            return np.where(both_zero, zero, out)
        if not dtypes.is_complex(a.dtype):
            return real_fn(a, b)
        ra, rb, ia, ib = a.real, b.real, a.imag, b.imag
        take_a = np.where(ra == rb, pick(ia, ib), pick(ra, rb))
        return np.where(take_a, a, b)

    return run


def _erf_inv(x):
    """erf^-1 in float64: Giles' single-precision approximation (the one XLA evaluates)
    refined by Newton steps; +-inf at +-1, NaN outside [-1, 1], and the sign of zero
    kept, as XLA does."""
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - x) * (1.0 + x))
        small = w < 5.0
        ws, wl = w - 2.5, np.sqrt(w) - 3.0
        ps = np.polyval([2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                         0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                         1.50140941], ws)  # fmt: skip
        pl = np.polyval([-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                         0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                         2.83297682], wl)  # fmt: skip
        a = np.abs(x)
        y = np.where(small, ps, pl) * a
        erf = np.vectorize(math.erf, otypes=[np.float64])
        erfc = np.vectorize(math.erfc, otypes=[np.float64])
        # Newton on erf(y) = |x|, or on log erfc(y) = log(1 - |x|) near 1 (exact there)
        inner, c = a < 0.5, np.where(a < 0.5, 0.5, 1.0 - a)
        for _ in range(6):
            pdf = 2.0 / math.sqrt(math.pi) * np.exp(-y * y)
            tail = erfc(y)
            step_in = (erf(y) - a) / pdf
            step_out = (np.log(c) - np.log(tail)) * tail / pdf
            y = y - np.where(inner, step_in, step_out)
        y = np.copysign(y, x)
        y = np.where(np.abs(x) == 1.0, np.copysign(np.inf, x), y)
        y = np.where(x == 0, x, y)
        return np.where(np.abs(x) > 1.0, np.nan, y).astype(dt)


def _next_after(a, b):
    # on the bits, for every float width (np.nextafter has no bf16, and f16 through f32
    # would round back): step the magnitude of `a` towards `b`; 0 steps to the smallest
    # subnormal of b's sign; equal operands give b; NaN in, NaN out
    a, b = np.asarray(a), np.asarray(b)
    ut = np.dtype(f"u{a.dtype.itemsize}")
    ua, ub = a.view(ut), b.view(ut)
    sign = ut.type(1 << (8 * a.dtype.itemsize - 1))
    mag = ua & ut.type(~sign)
    away = (a < b) != (ua >= sign)  # moving away from zero increases the magnitude
    one = ut.type(1)
    stepped = np.where(away, ua + one, ua - one).astype(ut)
    from_zero = (ub & sign) | one
    out = np.where(mag == 0, from_zero, stepped).astype(ut)
    out = np.where(a == b, ub, out).astype(ut).view(a.dtype)
    return np.where(np.isnan(a) | np.isnan(b), np.array(np.nan, a.dtype), out).astype(a.dtype)


def _vec(fn):
    v = np.vectorize(fn, otypes=[np.float64])
    return lambda x: v(x).astype(x.dtype)
