"""More elementwise functions of jax.numpy: angle, fabs, divmod, modf, float_power, frexp,
ldexp, gcd, lcm, bitwise_count, fmax, fmin, spacing, isposinf/isneginf, iscomplex/isreal,
iscomplexobj/isrealobj, sort_complex and i0, each computed from existing ops as jax.numpy
computes it (frexp reads the bits; ldexp is m * 2**e after frexp; gcd is Euclid's algorithm
in a while loop)."""

from __future__ import annotations


import ml_dtypes
import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.backend import versions
from purejit.lax import control as lax_control
from purejit.lax._ad import stop_gradient
from purejit.lax._lift import convert
from purejit.lax.elementwise import abs as lax_abs
from purejit.lax.elementwise import exp as lax_exp
from purejit.lax.elementwise import mul as lax_mul
from purejit.lax.ops import bitcast_convert_type as lax_bitcast
from purejit.lax.special_functions import bessel_i0e
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._program import as_program
from purejit.numpy._reductions import any as _any
from purejit.numpy._sorting import sort
from purejit.tracing import ConcreteArray, Tracer, bind1


def _here() -> str:
    return errors.at(errors.user_location())


def _inexact1(x):
    return c.convert_inexact(c._lift(x))


def angle(z, deg: bool = False):
    """The angle of complex `z` (arctan2(imag, real)), in degrees with `deg=True`."""
    z = c._lift(z)
    re, im = arith.real(z), arith.imag(z)
    dt = re.dtype
    # as jax.numpy: integer inputs and real 0-d floats go to the default float, strongly typed
    if not pdt.is_inexact(dt) or (z.dtype.kind == "f" and z.ndim == 0):
        dt = pdt.default_float()
        re, im = convert(re, dt), convert(im, dt)
    out = c.arctan2(im, re)
    return arith.rad2deg(out) if deg else out


def fabs(x, /):
    """|x| for real x, as a floating result; complex inputs are refused (as NumPy's fabs)."""
    x = c._lift(x)
    if x.dtype.kind == "c":
        raise TypeError(f"fabs: ufunc 'fabs' does not support complex dtypes ({x.dtype}){_here()}")
    return c.abs(_inexact1(x))


def divmod(x1, x2, /):  # noqa: A001
    """(floor_divide(x1, x2), remainder(x1, x2))."""
    return arith.floor_divide(x1, x2), arith.remainder(x1, x2)


def modf(x, /, out=None):
    """The fractional and integral parts of x, both with x's sign."""
    if out is not None:
        raise NotImplementedError("modf: out= is not supported (arrays are immutable)")
    x = _inexact1(x)
    whole = c.where(c.greater_equal(x, 0), c.floor(x), c.ceil(x))
    return c.subtract(x, whole), whole


def float_power(x, y, /):
    """x ** y computed in a floating dtype."""
    a, b = c.promote_args("float_power", x, y, to_inexact=True)
    return bind1("power", a, b)


def _int_type(dt: np.dtype) -> np.dtype:
    return np.dtype(f"int{8 * np.dtype(dt).itemsize}")


def _frexp_float(x):
    info = _finfo(x.dtype)
    it = _int_type(x.dtype)
    mask = (1 << info.nexp) - 1
    bias = 1 - info.minexp
    small = c.less(c.abs(x), float(info.tiny))
    # subnormals: scale into the normal range first, and remember the scale
    x1 = c.where(small, c.multiply(x, c._strong_const(float(1 << info.nmant), x.dtype)), x)
    shift = c.where(small, np.array(-info.nmant, it), np.array(0, it))
    bits = lax_bitcast(x1, it)
    field = c.bitwise_and(c.right_shift(bits, np.array(info.nmant, it)), np.array(mask, it))
    e = c.add(shift, c.add(c.subtract(field, np.array(bias, it)), np.array(1, it)))
    bits = c.bitwise_and(bits, np.array(~(mask << info.nmant), it))
    bits = c.bitwise_or(bits, np.array((bias - 1) << info.nmant, it))
    m = lax_bitcast(bits, x.dtype)
    special = c.logical_or(c.logical_or(arith.isinf(x), arith.isnan(x)), c.equal(x, 0))
    e = c.where(special, np.array(0, it), e)
    return c.where(special, x, m), convert(e, np.dtype(np.int32))


def _finfo(dt):
    return ml_dtypes.finfo(dt)


def frexp(x, /):
    """Mantissa (in [0.5, 1) in magnitude) and int32 exponent with x == m * 2**e."""
    x = _inexact1(x)
    if x.dtype.kind == "c":
        raise TypeError(f"frexp does not support complex-valued inputs ({x.dtype}){_here()}")
    if versions.jax_release(2) >= (0, 12) and "frexp" in arith.DERIVATIVE_RULES:
        # jax 0.12's derivative of the mantissa, ldexp(t, -e)
        return tuple(arith.DERIVATIVE_RULES["frexp"](x))
    return frexp_program(x)


def frexp_program(x):
    """frexp of a real floating x as one program (outside jit XLA's CPU kernels, op by op,
    flush subnormals to zero)."""
    return tuple(as_program("frexp", lambda v: list(_frexp_float(_flush_if_jax12(v))), [x]))


def _flush_if_jax12(x):
    """jax >= 0.12's frexp reads subnormals as zeros of their sign (giving (+-0, 0)), where
    jax 0.10/0.11's scales them into the normal range (giving 2**-149 = 0.5 * 2**-148)."""
    if versions.jax_release(2) < (0, 12):
        return x
    it = _int_type(x.dtype)
    sign = lax_bitcast(c.bitwise_and(lax_bitcast(x, it), np.array(np.iinfo(it).min, it)), x.dtype)
    return c.where(c.less(c.abs(x), float(_finfo(x.dtype).tiny)), sign, x)


def ldexp(x1, x2, /):
    """x1 * 2**x2 for floating x1 and integer x2."""
    a, b = c._lift(x1), c._lift(x2)
    if a.dtype.kind == "c" or pdt.is_inexact(b.dtype):
        raise ValueError(
            f"ldexp not supported for input types ({a.dtype}, {b.dtype}){_here()}; the "
            "exponent must be an integer array"
        )
    a = _inexact1(a)
    if versions.jax_release(2) >= (0, 12):
        if b.dtype == np.bool_:
            b = convert(b, np.dtype(np.int32))
        a, b = c.broadcast_arrays(convert(a, a.dtype, weak=False), convert(b, b.dtype, weak=False))
        return arith.DERIVATIVE_RULES.get("ldexp", ldexp_bits)(a, b)
    b = convert(b, a.dtype)
    m, e = _frexp_float(a)
    e = convert(c.add(convert(e, b.dtype), b), a.dtype)
    # the exponent may overflow by one and still give a finite result
    pos = c.greater(e, 0)
    m = c.where(pos, c.multiply(m, 2), m)
    e = c.where(pos, c.subtract(e, 1), e)
    two = convert(2, m.dtype, weak=False)
    out = c.multiply(m, bind1("power", *c.broadcast_arrays(two, convert(e, m.dtype))))
    return c.where(c.logical_or(arith.isinf(a), c.equal(a, 0)), a, out)


def ldexp_bits(x, n):
    """jax 0.12's ldexp, x * 2**n on the exponent field: subnormal inputs read as zeros of
    their sign, results below the normal range flushed to them, above it +-inf."""
    info = _finfo(x.dtype)
    it = _int_type(x.dtype)
    x = _flush_if_jax12(x)
    u = lax_bitcast(x, it)
    mask = (1 << info.nexp) - 1
    sign = c.bitwise_and(u, np.array(np.iinfo(it).min, it))
    exp = c.bitwise_and(c.right_shift(u, np.array(info.nmant, it)), np.array(mask, it))
    mant = c.bitwise_and(u, np.array((1 << info.nmant) - 1, it))
    if np.dtype(n.dtype).itemsize < 4:
        n = convert(n, np.dtype(np.int32 if n.dtype.kind == "i" else np.uint32))
    bound = 1 << (info.nexp + 1)
    low = np.array(-bound if n.dtype.kind == "i" else 0, n.dtype)
    n = convert(c.minimum(c.maximum(n, low), np.array(bound, n.dtype)), np.dtype(np.int32))
    new_exp = c.add(convert(exp, np.dtype(np.int32)), n)
    shifted = c.left_shift(convert(new_exp, it), np.array(info.nmant, it))
    inf_bits = c.bitwise_or(sign, np.array(mask << info.nmant, it))
    res = c.where(
        c.less_equal(new_exp, 0),
        sign,
        c.where(
            c.greater_equal(new_exp, mask),
            inf_bits,
            c.bitwise_or(c.bitwise_or(sign, shifted), mant),
        ),
    )
    out = c.where(c.equal(exp, mask), u, c.where(c.equal(exp, 0), sign, res))
    return lax_bitcast(out, x.dtype)


def _integer_args(name: str, x1, x2):
    a, b = c.promote_args(name, x1, x2)
    if a.dtype.kind not in "iu":
        raise ValueError(f"Arguments to {name} must be integers, got {a.dtype}{_here()}")
    return a, b


def _gcd(a, b):
    def cond(carry):
        return _any(c.not_equal(carry[1], 0))

    def body(carry):
        x, y = carry
        nz = c.not_equal(y, 0)
        one = convert(1, y.dtype, weak=y.weak_type)
        y_safe = c.where(nz, y, one)
        return c.where(nz, y, x), c.where(nz, bind1("remainder", x, y_safe), y)

    x, _ = lax_control.while_loop(cond, body, (c.abs(a), c.abs(b)))
    return x


def gcd(x1, x2, /):
    """The greatest common divisor of |x1| and |x2| (integers)."""
    a, b = _integer_args("gcd", x1, x2)
    return _gcd(a, b)


def lcm(x1, x2, /):
    """The least common multiple of |x1| and |x2| (integers); 0 where either is 0."""
    a, b = _integer_args("lcm", x1, x2)
    d = _gcd(a, b)
    zero = c.equal(d, 0)
    one = convert(1, d.dtype, weak=d.weak_type)
    out = c.multiply(a, arith.floor_divide(b, c.where(zero, one, d)))
    return c.where(zero, convert(0, d.dtype, weak=d.weak_type), c.abs(out))


def _popcount(v):
    """The number of 1 bits of each element of unsigned `v` (SWAR: bits summed in pairs,
    nibbles, then bytes)."""
    dt = v.dtype
    w = 8 * dt.itemsize

    def k(pattern: int):
        return np.array(int.from_bytes(bytes([pattern]) * dt.itemsize, "little"), dt)

    def shr(x, n):
        return c.right_shift(x, np.array(n, dt))

    v = c.subtract(v, c.bitwise_and(shr(v, 1), k(0x55)))
    v = c.add(c.bitwise_and(v, k(0x33)), c.bitwise_and(shr(v, 2), k(0x33)))
    v = c.bitwise_and(c.add(v, shr(v, 4)), k(0x0F))
    if w > 8:  # sum the bytes into the top byte
        v = shr(c.multiply(v, k(0x01)), w - 8)
    return v


def bitwise_count(x, /):
    """The number of 1 bits in |x|, as uint8."""
    x = c._lift(x)
    if x.dtype.kind not in "biu":
        raise TypeError(f"bitwise_count: integer or bool input required, got {x.dtype}{_here()}")
    if x.dtype == np.bool_:
        return convert(x, np.dtype(np.uint8))
    u = np.dtype(f"uint{8 * x.dtype.itemsize}")
    v = c.abs(x) if x.dtype.kind == "i" else x
    v = lax_bitcast(v, u) if x.dtype.kind == "i" else v
    return convert(_popcount(v), np.dtype(np.uint8))


def fmax(x1, x2):
    """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
    a, b = c.promote_args("fmax", x1, x2)
    return c.where(c.logical_or(c.greater(a, b), arith.isnan(b)), a, b)


def fmin(x1, x2):
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    a, b = c.promote_args("fmin", x1, x2)
    return c.where(c.logical_or(c.less(a, b), arith.isnan(b)), a, b)


def spacing(x, /):
    """The distance from x to the next representable value away from zero (float16: toward
    +inf, as NumPy and jax.numpy)."""
    x = _inexact1(x)
    if x.dtype.kind == "c":
        raise ValueError(f"spacing is not defined for complex inputs{_here()}")
    x = convert(x, x.dtype)  # a strongly typed result, as jax.numpy's
    inf = c._strong_const(np.inf, x.dtype)
    if x.dtype == np.float16:
        return c.subtract(arith.nextafter(x, inf), x)
    out = c.subtract(arith.nextafter(x, arith.copysign(inf, x)), x)
    tiny = c._strong_const(float(_finfo(x.dtype).smallest_subnormal), x.dtype)
    return c.where(c.equal(out, 0), arith.copysign(tiny, x), out)


def _isposneginf(x, negative: bool):
    x = c._lift(x)
    if x.dtype.kind == "c":
        raise ValueError(f"isposinf/isneginf are not well defined for complex types{_here()}")
    if not pdt.is_inexact(x.dtype):
        return c.full_like_bool(x, False)
    inf = c._strong_const(-np.inf if negative else np.inf, x.dtype)
    return c.equal(x, inf)


def isposinf(x, /, out=None):
    """Whether x is +inf."""
    if out is not None:
        raise NotImplementedError("isposinf: out= is not supported (arrays are immutable)")
    return _isposneginf(x, False)


def isneginf(x, /, out=None):
    """Whether x is -inf."""
    if out is not None:
        raise NotImplementedError("isneginf: out= is not supported (arrays are immutable)")
    return _isposneginf(x, True)


def iscomplex(x):
    """Whether each element has a nonzero imaginary part."""
    return c.not_equal(arith.imag(x), 0)


def isreal(x):
    """Whether each element has a zero imaginary part."""
    return c.equal(arith.imag(x), 0)


def _dtype_of(x) -> np.dtype:
    if isinstance(x, (ConcreteArray, Tracer)):
        return x.dtype
    if isinstance(x, type) and isinstance(getattr(x, "dtype", None), np.dtype):
        return x.dtype  # purejit's scalar types (jnp.complex64) carry their dtype
    if isinstance(x, (bool, int, float, complex)):
        return pdt.python_scalar_dtype(x)
    return np.asarray(x).dtype


def iscomplexobj(x) -> bool:
    """Whether x has a complex dtype (x may be any array-like; its values are not read)."""
    return x is not None and _dtype_of(x).kind == "c"


def isrealobj(x) -> bool:
    """Whether x does not have a complex dtype."""
    return not iscomplexobj(x)


def sort_complex(a):
    """`a` sorted along its last axis, as a complex array."""
    x = sort(c._lift(a))
    dt = x.dtype if x.dtype.kind == "c" else pdt.default_complex()
    return convert(x, np.dtype(dt))


# ---- the modified Bessel function i0 ------------------------------------------------------


def _real_float(name: str, x):
    x = _inexact1(x)
    if x.dtype.kind == "c":
        raise TypeError(f"{name}: complex inputs are not supported ({x.dtype}){_here()}")
    return x


def i0(x):
    """The modified Bessel function of the first kind of order zero: exp(|x|) i0e(|x|), as
    jax.numpy's (so its bits are JAX's)."""
    x = _real_float("i0", x)
    if versions.jax_release() >= (0, 11, 2):
        # jax >= 0.11.2's custom JVP, I0' = I1 (purejit/special_gradients.py)
        return arith.DERIVATIVE_RULES["i0"](x)
    ax = lax_abs(x)
    out = lax_mul(lax_exp(ax), bessel_i0e(ax))
    # I0'(0) = I1(0) = 0, where the chain rule through |x| gives 1: JAX zeroes the tangent
    return c.where(c.equal(x, 0), stop_gradient(out), out)
