"""The elementwise functions of purejit.numpy with special cases beyond binding one IR op:
floored division and remainders, powers, isfinite/isnan/isinf, the NaN rules of the inverse
trigonometric functions, clip, complex parts, nextafter, copysign, signbit, hypot, degrees
and radians, logaddexp and sinc. Each is built from `purejit.numpy._core`'s promotion and
elementwise functions, as jax.numpy computes it."""

from __future__ import annotations

import operator

import ml_dtypes
import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.backend import versions
from purejit.lax._lift import convert
from purejit.lax.ops import bitcast_convert_type as lax_bitcast
from purejit.lax.ops import integer_pow as lax_integer_pow
from purejit.numpy._core import (
    _lift,
    _strong_const,
    _unary,
    abs,
    add,
    broadcast_arrays,
    broadcast_to,
    convert_inexact,
    equal,
    exp,
    full_like_bool,
    greater_equal,
    less,
    less_equal,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    promote_args,
    sin,
    sqrt,
    subtract,
    true_divide,
    where,
)
from purejit.runtime.array import Array
from purejit.tracing import bind1


def floor_divide(x, y, /):
    a, b = promote_args("floor_divide", x, y, numeric=True)
    if a.dtype.kind == "c":
        raise TypeError(f"floor_divide does not support complex inputs, got {a.dtype}")
    if pdt.is_inexact(a.dtype):
        return _float_floordiv(a, b)
    q = bind1("divide", a, b)
    if a.dtype.kind == "u":
        return q
    # truncated -> floored: subtract one where the signs differ and the remainder is nonzero
    # (x // 0 follows JAX: XLA's -1, minus one when x != 0)
    r = bind1("remainder", a, b)
    fix_ = logical_and(not_equal(bind1("sign", a), bind1("sign", b)), not_equal(r, 0))
    return where(fix_, subtract(q, convert(1, a.dtype, weak=a.weak_type)), q)


def _float_floordiv(a, b):
    """JAX's (and CPython's) float divmod quotient: (a - a % b) / b, one less where the
    remainder's sign differs from b's, rounded; it keeps -0.0 and the exact quotient where
    floor(a / b) would round a / b up first (e.g. in bfloat16)."""
    mod = bind1("remainder", a, b)
    div = bind1("divide", where(equal(b, 0), a, subtract(a, mod)), b)
    fix_ = logical_and(not_equal(mod, 0), not_equal(bind1("sign", b), bind1("sign", mod)))
    return bind1("round_nearest_afz", where(fix_, subtract(div, 1), div))


def _nonzero_divisor(b):
    """Integer divisors with 0 replaced by 1, so x % 0 == 0 (as in JAX)."""
    if pdt.is_inexact(b.dtype):
        return b
    return where(equal(b, 0), convert(1, b.dtype, weak=b.weak_type), b)


def remainder(x, y, /):
    """x - floor(x / y) * y: the result has the sign of y."""
    a, b = promote_args("remainder", x, y, numeric=True)
    b = _nonzero_divisor(b)
    r = bind1("remainder", a, b)
    if a.dtype.kind == "u":
        return r
    fix_ = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(b, 0)))
    return where(fix_, add(r, b), r)


mod = remainder


def fmod(x, y, /):
    """C's fmod: the remainder of truncated division (sign of x)."""
    a, b = promote_args("fmod", x, y)
    if a.dtype == np.bool_:  # as JAX: booleans skip the zero-divisor guard (x rem 0 is x)
        return bind1("remainder", *promote_args("fmod", a, b, numeric=True))
    return bind1("remainder", a, _nonzero_divisor(b))


def _static_int(y):
    """`y` as a Python int when it is a concrete integer scalar, else None."""
    if isinstance(y, (bool, np.bool_)):
        return None
    if type(y) is Array and (y.ndim != 0 or y.dtype.kind not in "iu"):
        return None
    if isinstance(y, np.ndarray) and y.ndim != 0:
        return None
    try:
        return operator.index(y)
    except TypeError:
        return None


def power(x, y, /):
    """x ** y; a concrete integer exponent is JAX's `integer_pow` (the multiplies of repeated
    squaring, and its derivative), in eager mode as under jit, as jax.numpy does."""
    n = _static_int(y)
    if n is not None:
        a = _lift(x)
        if a.dtype == np.bool_:
            a = convert(a, pdt.default_int(), weak=a.weak_type)
        if n < 0 and a.dtype.kind in "iu":
            raise TypeError(
                f"power: integers cannot be raised to negative powers (got {a.dtype} ** {n})"
                f"{errors.at(errors.user_location())}"
            )
        return lax_integer_pow(a, n)
    a, b = promote_args("power", x, y, numeric=True)
    if a.dtype.kind in "iu":
        return _integer_power(a, b)
    return bind1("power", a, b)


# jax.numpy raises integers to integer arrays by six steps of repeated squaring: any base
# above 1 has overflowed by the 64th power, so the exponent's higher bits are not read
_INT_POWER_STEPS = 6


def _integer_power(a, b):
    """a ** b for integer arrays as jax.numpy computes it, on every jaxlib: XLA's own integer
    power changed in jaxlib 0.12 (it reads every bit of the exponent, where jax.numpy reads
    six), and before that gave 0 ** 64 = 1; 0 ** n is 0 for n != 0 and 1 for n == 0."""
    zero, one = _strong_const(0, a.dtype), _strong_const(1, a.dtype)
    acc = where(logical_and(equal(a, zero), not_equal(b, zero)), zero, one)
    one_b = broadcast_to(one, b.shape)
    for _ in range(_INT_POWER_STEPS):
        odd = not_equal(bind1("and", b, one_b), broadcast_to(zero, b.shape))
        acc = where(odd, multiply(acc, a), acc)
        a = multiply(a, a)
        b = bind1("shift_right_logical", b, one_b)
    return acc


pow = power  # noqa: A001


def square(x, /):
    """x * x, as JAX's `square` (CHLO's form for complex x); booleans become integers."""
    (x,) = promote_args("square", x, numeric=True)
    return bind1("square", x)


def reciprocal(x, /):
    """1 / x in x's inexact type, as JAX's `integer_pow(x, -1)` (and its derivative)."""
    (x,) = promote_args("reciprocal", x, to_inexact=True)
    return lax_integer_pow(x, -1)


def isfinite(x, /):
    x = _lift(x)
    if not pdt.is_inexact(x.dtype):
        return full_like_bool(x, True)
    if x.dtype.kind == "c":  # as JAX: both parts finite
        return bind1("and", isfinite(bind1("real", x)), isfinite(bind1("imag", x)))
    return bind1("is_finite", x)


def isnan(x, /):
    x = _lift(x)
    if not pdt.is_inexact(x.dtype):
        return full_like_bool(x, False)
    return not_equal(x, x)


def isinf(x, /):
    x = _lift(x)
    if not pdt.is_inexact(x.dtype):
        return full_like_bool(x, False)
    if x.dtype.kind == "c":  # as JAX: either part infinite
        return bind1("or", isinf(bind1("real", x)), isinf(bind1("imag", x)))
    return logical_and(logical_not(isfinite(x)), logical_not(isnan(x)))


def _nan_with_nonzero_finite(f):
    """f on complex inputs, with NaN + NaN j wherever one part is NaN and the other a nonzero
    finite number (the Array API's special cases for acos, acosh, asin, asinh). XLA's
    expansion gives that for moderate magnitudes only: acos(1e19 + nan j) is nan - 44.4j in
    jax.numpy too, while acos(1.5 + nan j) is nan + nan j."""

    def g(x, /):
        out = f(x)
        x = _lift(x)
        if x.dtype.kind != "c":
            return out
        re, im = bind1("real", x), bind1("imag", x)

        def nonzero_finite(v):
            return logical_and(isfinite(v), not_equal(v, 0))

        bad = logical_or(
            logical_and(isnan(re), nonzero_finite(im)), logical_and(nonzero_finite(re), isnan(im))
        )
        return where(bad, multiply(out, float("nan")), out)

    g.__name__, g.__doc__ = f.__name__, f.__doc__
    return g


arcsin = _nan_with_nonzero_finite(_unary("asin", "arcsin", inexact=True))
arccos = _nan_with_nonzero_finite(_unary("acos", "arccos", inexact=True))
arcsinh = _nan_with_nonzero_finite(_unary("asinh", "arcsinh", inexact=True))
arccosh = _nan_with_nonzero_finite(_unary("acosh", "arccosh", inexact=True))


def clip(x, /, min=None, max=None):  # noqa: A002
    x = _lift(x)
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def real(x, /):
    x = _lift(x)
    return bind1("real", x) if x.dtype.kind == "c" else x


def imag(x, /):
    x = _lift(x)
    if x.dtype.kind == "c":
        return bind1("imag", x)
    return broadcast_to(convert(0, x.dtype, weak=x.weak_type), x.shape)


def conj(x, /):
    """The complex conjugate (real inputs are returned as they are)."""
    x = _lift(x)
    if x.dtype.kind != "c":
        return x
    return bind1("complex", bind1("real", x), bind1("negate", bind1("imag", x)))


def nextafter(x, y, /):
    """The next representable value after x in the direction of y."""
    a, b = promote_args("nextafter", x, y, to_inexact=True)
    return bind1("next_after", a, b)


conjugate = conj


def copysign(x, y, /):
    a, b = promote_args("copysign", x, y, to_inexact=True)
    return where(logical_or(less(b, 0), logical_and(equal(b, 0), less(true_divide(1, b), 0))),
                 negative(abs(a)), abs(a))  # fmt: skip


def signbit(x, /):
    """Whether the sign bit is set (also for -0.0 and -NaN: the bits are read, as JAX does)."""
    x = _lift(x)
    if x.dtype == np.bool_:
        return full_like_bool(x, False)
    if not pdt.is_inexact(x.dtype):
        return less(x, 0)
    if x.dtype.kind == "c":
        raise ValueError(f"signbit: complex input ({x.dtype}) has no sign bit")
    bits = lax_bitcast(x, np.dtype(f"int{8 * x.dtype.itemsize}"))
    return less(bits, 0)


def hypot(x, y, /):
    """sqrt(x**2 + y**2) without overflow: under jax >= 0.12 scaled by a power of two with
    JAX's custom derivative (`hypot_scaled`), before it big * sqrt(1 + (small / big)**2)."""
    a, b = promote_args("hypot", x, y, to_inexact=True)
    if versions.jax_release(2) >= (0, 12):
        if a.dtype.kind == "c":
            raise ValueError(
                f"hypot is not well defined for complex-valued inputs ({a.dtype}); convert "
                "to real values first, such as with abs(x)"
            )
        a, b = broadcast_arrays(a, b)
        return DERIVATIVE_RULES.get("hypot", hypot_scaled)(a, b)[0]
    a, b = abs(a), abs(b)
    big, small = maximum(a, b), minimum(a, b)
    zero = equal(big, 0)
    one = convert(1, big.dtype, weak=big.weak_type)
    ratio = true_divide(small, where(zero, one, big))
    r = where(zero, big, multiply(big, sqrt(add(one, multiply(ratio, ratio)))))
    inf = logical_or(isinf(a), isinf(b))
    return where(inf, _strong_const(np.inf, r.dtype), r)


def hypot_scaled(x1, x2):
    """(r, x1 / r, x2 / r) with r = hypot(x1, x2), as jax 0.12's lax.hypot: both legs scaled
    by 2**-k or 2**k (k from the dtype) so their squares neither overflow nor underflow, and
    the unit vector taken from the scaled legs so it stays accurate where 1 / r does not."""
    info = ml_dtypes.finfo(x1.dtype)
    k = (info.nmant - info.minexp + 1) // 2
    e_hi = (info.maxexp - 1) // 2

    def const(v):
        return convert(v, x1.dtype, weak=x1.weak_type)

    a1, a2 = abs(x1), abs(x2)
    m = maximum(a1, a2)
    hi = greater_equal(m, const(2.0**e_hi))
    lo = less_equal(m, const(2.0 ** (e_hi - k)))
    down, up, one = const(2.0**-k), const(2.0**k), const(1.0)
    # each leg is multiplied by its scale in its own select arm: XLA's simplifier may turn
    # (x * scale)**2 into scale**2 * x**2, which overflows for a constant x (NaN at x = 0)
    y1 = where(hi, multiply(x1, down), where(lo, multiply(x1, up), x1))
    y2 = where(hi, multiply(x2, down), where(lo, multiply(x2, up), x2))
    inv_scale = where(hi, up, where(lo, down, one))
    r_scaled = sqrt(add(multiply(y1, y1), multiply(y2, y2)))
    r = multiply(r_scaled, inv_scale)
    if _supports_inf(x1.dtype):
        inf = const(np.inf)
        r = where(logical_or(equal(a1, inf), equal(a2, inf)), inf, r)
    return r, true_divide(y1, r_scaled), true_divide(y2, r_scaled)


def _supports_inf(dt) -> bool:
    return bool(np.isinf(np.array(np.inf, np.float32).astype(dt).astype(np.float32)))


def deg2rad(x, /):
    return multiply(convert_inexact(x), np.pi / 180)


def rad2deg(x, /):
    return multiply(convert_inexact(x), 180 / np.pi)


radians, degrees = deg2rad, rad2deg


# logaddexp and logaddexp2 with JAX's derivative rules (custom JVPs), installed by
# purejit/special_gradients.py (custom_jvp sits above purejit.numpy): differentiating their
# formulas gives 0 instead of 1/2 where both operands are equal, and NaN at equal infinities
DERIVATIVE_RULES: dict = {}


def logaddexp(x, y, /):
    """log(exp(x) + exp(y)) without overflow; NaN and equal infinities as jax.numpy, and
    JAX's derivative t_x exp(x - out) + t_y exp(y - out)."""
    a, b = promote_args("logaddexp", x, y, to_inexact=True)
    return DERIVATIVE_RULES.get("logaddexp", logaddexp_value)(a, b)


def logaddexp_value(a, b):
    """`logaddexp` of operands of one inexact dtype, by its formula."""
    m = maximum(a, b)
    delta = subtract(a, b)
    soft = add(m, log1p(exp(negative(abs(delta)))))
    if a.dtype.kind == "c":
        return soft
    return where(isnan(delta), add(a, b), soft)


def sinc(x, /):
    x = convert_inexact(x)
    px = multiply(x, np.pi)
    safe = where(equal(x, 0), 1, px)
    return where(equal(x, 0), 1, true_divide(sin(safe), safe))
