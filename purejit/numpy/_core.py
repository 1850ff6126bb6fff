"""The heart of purejit.numpy: lifting, dtype promotion, broadcasting and the elementwise
functions. Every function here is a thin wrapper that binds IR ops."""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.config import config
from purejit.lax._lift import (
    broadcast_arrays_named,
    broadcast_shapes_named,
    convert,
)
from purejit.lax._lift import broadcast_to as _broadcast_to
from purejit.lax._lift import lift as lift_stacked
from purejit.ir.ops.elementwise import convert_array
from purejit.lax.ops import bitcast_convert_type as lax_bitcast
from purejit.lax.ops import integer_pow as lax_integer_pow
from purejit.runtime.array import Array, as_array
from purejit.runtime.eager import eval_trace, scalar_like
from purejit.runtime.eager_fn import eager_function
from purejit.tracing import ConcreteArray, Tracer, bind1, current_trace

ArrayLike = object


def _lift(x):
    """A Tracer or Array for any array or scalar (Python scalars become weak-typed arrays).

    Lists and tuples are refused, as jax.numpy refuses them: a list of many scalars would be
    traced element by element; `asarray` converts one explicitly."""
    if isinstance(x, (Tracer, ConcreteArray)):
        return x
    if isinstance(x, (list, tuple)):
        raise TypeError(
            f"purejit.numpy functions take arrays or scalars, not a {type(x).__name__}"
            f"{errors.at(errors.user_location())}; convert it with purejit.numpy.asarray(...) "
            "first (as jax.numpy requires)"
        )
    return as_array(x)


def is_python_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _plain(x) -> bool:
    """A Python scalar, or (nested) lists of Python scalars and NumPy values only."""
    if isinstance(x, (list, tuple)):
        return all(_plain(v) for v in x)
    return is_python_scalar(x) or isinstance(x, (np.generic, np.ndarray))


def plain_as(x, dt: np.dtype) -> np.ndarray:
    """`x` (see `_plain`) as a NumPy array of `dt`: NumPy's conversion, which raises
    OverflowError for a Python int outside `dt`'s range (jax.numpy's `coerce_to_array`)."""
    try:
        return np.asarray(x, dtype=dt)
    except OverflowError as e:
        raise OverflowError(f"{e}{errors.at(errors.user_location())}") from None


def _from_sequence(x, dtype):
    items = [asarray(v) if isinstance(v, (list, tuple)) else _lift(v) for v in x]
    if not items:
        return as_array(np.zeros((0,), dtype or pdt.default_float()))
    shapes = {a.shape for a in items}
    if len(shapes) != 1:
        raise errors.PurejitTypeError(
            f"asarray: the list's elements must have one shape, got "
            f"{[list(s) for s in shapes]}{errors.at(errors.user_location())}"
        )
    if all(type(a) is Array and a._host is not None for a in items):
        # a list of host values (the common case): stack them on the host, no device op
        dt, weak = pdt.result_type_weak(*[(a.dtype, a.weak_type) for a in items])
        host = np.stack([np.asarray(a.host).astype(dt) for a in items])
        return Array(host=host)  # an array made from a list is strongly typed (JAX)
    out = lift_stacked(promote_args("asarray", *items))
    return convert(out, out.dtype)


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    """Like jnp.asarray: accepts arrays, scalars and (nested) lists of them.

    `copy=True` always copies, `copy=False` raises if a copy is needed; `device` places the
    result (outside jit)."""
    if pdt.is_key_dtype(getattr(a, "dtype", None)):
        # typed PRNG keys are arrays of their own dtype (as in JAX): asarray keeps them
        if dtype is not None and not pdt.is_key_dtype(dtype):
            raise TypeError(f"asarray: a typed key array ({a.dtype}) cannot become {dtype}")
        return a
    if dtype is not None and _plain(a):
        # NumPy converts in the requested dtype's own range, as jax.numpy does: uint32(2**32 - 1)
        # is fine, int8(128) an OverflowError (never the weak int32 range of a Python int)
        h = plain_as(a, _dtype_arg(dtype))
        out = Array(host=h.copy() if h is a else h)  # never the caller's own array
        copied = True
    elif isinstance(a, (list, tuple)):
        out = _from_sequence(a, dtype)
        copied = True
    else:
        out = _lift(a)
        copied = not isinstance(a, (ConcreteArray, Tracer))
    if dtype is not None:
        before = out
        out = astype(out, dtype)
        copied = copied or out is not before
    if copy is False and copied and not isinstance(a, (ConcreteArray, Tracer)):
        if not isinstance(a, np.ndarray) or out.dtype != a.dtype:
            raise ValueError(
                f"asarray: copy=False but converting a {type(a).__name__} needs a copy"
            )
    if copy and not copied:
        out = copy_(out)
    return _place(out, device)


def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None):  # noqa: A002
    """Like jnp.array: a copy of `object` (a new array), with at least `ndmin` dimensions."""
    out = asarray(object, dtype, copy=copy or None, device=device)
    if out.ndim < ndmin:
        out = broadcast_to(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def copy_(a, order=None):
    """A copy of `a` (a new buffer outside jit; under jit arrays are values anyway)."""
    x = _lift(a)
    if type(x) is Array:
        return Array(host=np.array(x.host), weak_type=x.weak_type)
    return x


def _place(x, device):
    """`x` on `device` (None: where it is)."""
    if device is None:
        return x
    if isinstance(x, Tracer):
        raise NotImplementedError(
            f"device= inside jit is not supported{errors.at(errors.user_location())}; "
            "place the inputs with purejit.device_put instead"
        )
    return x.to_device(device)


def _dtype_arg(dtype):
    return pdt.canonicalize(np.dtype(dtype)) if dtype is not None else None


def astype(x, dtype, /, *, copy: bool = False, device=None):
    """`x` converted to `dtype` (a strongly typed result)."""
    x = _lift(x)
    dt = _dtype_arg(dtype)
    out = convert(x, dt)
    if copy and out is x:
        out = copy_(out)
    return _place(out, device)


def _is_struct(x) -> bool:
    """A shape and dtype without data (a ShapeDtypeStruct, an abstract value)."""
    if isinstance(x, (ConcreteArray, Tracer, np.ndarray, np.generic)):
        return False
    return isinstance(getattr(x, "dtype", None), np.dtype) and hasattr(x, "shape")


def result_type(*xs):
    """The promoted dtype of the arguments, following JAX's lattice (see purejit.dtypes)."""
    typed = []
    for x in xs:
        if isinstance(x, (np.dtype, type)) or isinstance(x, str):
            typed.append((pdt.canonicalize(np.dtype(x)), False))
        elif _is_struct(x):
            # as JAX: a ShapeDtypeStruct (or an aval) stands for an array of its dtype, a
            # strong one (JAX reads weakness from an array's `.aval` only)
            typed.append((pdt.canonicalize(x.dtype), False))
        else:
            a = _lift(x)
            typed.append((a.dtype, a.weak_type))
    return pdt.result_type_weak(*typed)[0]


def promote_args(name: str, *xs, to_inexact: bool = False, numeric: bool = False):
    """Lift, promote to a common dtype (JAX's rules) and broadcast to a common shape.
    `to_inexact`: integers and booleans become the default float; `numeric`: booleans
    become the default integer (JAX's promote_args_numeric, for arithmetic that has no
    boolean form)."""
    if len(xs) == 2:
        pair = _promote_pair(xs[0], xs[1], to_inexact)
        if pair is not None:
            return pair
    try:
        arrs = [_lift(x) for x in xs]
    except OverflowError as e:
        raise _weak_int_overflow(name, xs) or e from None
    dt, weak = pdt.result_type_weak(*[(a.dtype, a.weak_type) for a in arrs])
    if to_inexact and not pdt.is_inexact(dt):
        dt = pdt.default_float()
    elif numeric and dt == np.bool_:
        dt = pdt.default_int()
    # as in JAX, every operand takes the result's weak flag (i8 + 1.0 -> f32, weak)
    arrs = [convert(a, dt, weak=weak) for a in arrs]
    if _RANK_PROMOTION[0] != "allow":
        _check_rank_promotion(name, [a.shape for a in arrs])
    return broadcast_arrays_named(name, *arrs)


# config.numpy_rank_promotion, kept current by a watch (read on every promotion)
_RANK_PROMOTION = [config.read("numpy_rank_promotion")]
config.watch("numpy_rank_promotion", lambda v: _RANK_PROMOTION.__setitem__(0, v))


def _check_rank_promotion(name: str, shapes) -> None:
    """JAX's jax_numpy_rank_promotion: operands of two or more non-scalar ranks warn
    ("warn") or raise ("raise"); scalars broadcast freely."""
    if len({len(s) for s in shapes if s}) < 2:
        return
    desc = " ".join(str(tuple(s)) for s in shapes)
    loc = errors.at(errors.user_location())
    if _RANK_PROMOTION[0] == "warn":
        warnings.warn(
            f"Following NumPy automatic rank promotion for {name} on shapes {desc}{loc}. Set "
            "the jax_numpy_rank_promotion config option to 'allow' to disable this warning.",
            stacklevel=3,
        )
        return
    raise ValueError(
        f"Operands could not be broadcast together for {name} on shapes {desc} and with the "
        f"config option jax_numpy_rank_promotion='raise'{loc}; expand the lower-rank operand "
        "explicitly (x[None, :], jnp.expand_dims) or allow rank promotion."
    )


_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64, pdt.bfloat16))
_INT32 = (-(2**31), 2**31)


def _promote_pair(x, y, to_inexact: bool):
    """`promote_args` of the two commonest pairs without the dtype lattice (every op of an
    eager chain pays for it): two arrays of one type, or a strongly typed floating array
    and a Python float or int (the scalar takes the array's dtype, as in JAX). None for
    anything else."""
    xa, ya = (
        x.__class__ is Array or isinstance(x, Tracer),
        y.__class__ is Array or isinstance(y, Tracer),
    )
    if xa and ya:
        t = x.aval
        if t == y.aval and (t.dtype in _FLOATS or (not to_inexact and t.dtype.kind in "iu")):
            return [x, y]
        return None
    arr, scalar = (x, y) if xa else (y, x)
    if not (xa or ya) or scalar.__class__ not in (float, int):
        return None
    t = arr.aval
    if t.weak_type or t.dtype not in _FLOATS:
        return None
    if scalar.__class__ is int and not _INT32[0] <= scalar < _INT32[1]:
        return None
    if arr.__class__ is Array and math.prod(t.shape) <= 64 and current_trace() is eval_trace:
        c = scalar_like(scalar, t.dtype, t.shape)  # eager: one transfer per constant
    else:
        c = Array(host=convert_array(np.array(scalar), t.dtype))
        if t.shape:
            c = _broadcast_to(c, t.shape)
    return [arr, c] if xa else [c, arr]


def _weak_int_overflow(name: str, xs) -> OverflowError | None:
    """The error for a Python int outside the weak int range among `xs` (JAX raises an
    OverflowError too: a Python int is weakly typed int32, int64 with x64, whatever the other
    operand's dtype), saying how to write the value instead."""
    big = next((x for x in xs if isinstance(x, int) and not isinstance(x, bool)), None)
    if big is None:
        return None
    others = [x.dtype for x in xs if hasattr(x, "dtype") and not is_python_scalar(x)]
    fits = [d for d in others if d.kind in "iu" and np.iinfo(d).min <= big <= np.iinfo(d).max]
    hint = f"purejit.numpy.{fits[0].name}({big})" if fits else "an array of a dtype that holds it"
    return OverflowError(
        f"{name}: Python int {big} is outside {pdt.default_int().name}, the range of a weakly "
        f"typed Python int, whatever the other operand's dtype (JAX raises OverflowError here "
        f"too){errors.at(errors.user_location())}; write it as {hint}"
    )


def broadcast_shapes(*shapes):
    """The shape that arrays of the given shapes broadcast to (NumPy's rules); ValueError if
    they do not broadcast (as the Array API and jax.numpy say)."""
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    try:
        return broadcast_shapes_named("broadcast_shapes", *shapes)
    except errors.PurejitTypeError as e:
        raise ValueError(str(e)) from None


def broadcast_arrays(*xs):
    """The arrays broadcast to their common shape; ValueError if they do not broadcast."""
    try:
        return broadcast_arrays_named("broadcast_arrays", *[_lift(x) for x in xs])
    except errors.PurejitTypeError as e:
        raise ValueError(str(e)) from None


def broadcast_to(array, shape):
    """`array` broadcast to `shape`; ValueError if it cannot be."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    try:
        return _broadcast_to(array, shape)
    except errors.PurejitTypeError as e:
        raise ValueError(str(e)) from None


# ---- elementwise -------------------------------------------------------------------------


def _unary(op: str, name: str, *, inexact: bool = False, doc: str = ""):
    def f(x, /):
        x = _lift(x)
        if inexact and not pdt.is_inexact(x.dtype):
            x = convert(x, pdt.default_float(), weak=x.weak_type)
        return bind1(op, x)

    f.__name__ = name
    f.__doc__ = doc or f"Elementwise {name} (binds IR op `{op}`)."
    return eager_function(f)


def _binary(op: str, name: str, *, inexact: bool = False, doc: str = ""):
    def f(x, y, /):
        a, b = promote_args(name, x, y, to_inexact=inexact)
        return bind1(op, a, b)

    f.__name__ = name
    f.__doc__ = doc or f"Elementwise {name} with broadcasting (binds IR op `{op}`)."
    return eager_function(f)


sin = _unary("sine", "sin", inexact=True)
cos = _unary("cosine", "cos", inexact=True)
tan = _unary("tan", "tan", inexact=True)
arcsin = _unary("asin", "arcsin", inexact=True)
arccos = _unary("acos", "arccos", inexact=True)
arctan = _unary("atan", "arctan", inexact=True)
sinh = _unary("sinh", "sinh", inexact=True)
cosh = _unary("cosh", "cosh", inexact=True)
tanh = _unary("tanh", "tanh", inexact=True)
arcsinh = _unary("asinh", "arcsinh", inexact=True)
arccosh = _unary("acosh", "arccosh", inexact=True)
arctanh = _unary("atanh", "arctanh", inexact=True)
exp = _unary("exponential", "exp", inexact=True)
expm1 = _unary("exponential_minus_one", "expm1", inexact=True)
log = _unary("log", "log", inexact=True)
log1p = _unary("log_plus_one", "log1p", inexact=True)
sqrt = _unary("sqrt", "sqrt", inexact=True)
rsqrt = _unary("rsqrt", "rsqrt", inexact=True)
cbrt = _unary("cbrt", "cbrt", inexact=True)
arctan2 = _binary("atan2", "arctan2", inexact=True)
add = _binary("add", "add")
subtract = _binary("subtract", "subtract")
multiply = _binary("multiply", "multiply")
maximum = _binary("maximum", "maximum")
minimum = _binary("minimum", "minimum")
bitwise_and = _binary("and", "bitwise_and")
bitwise_or = _binary("or", "bitwise_or")
bitwise_xor = _binary("xor", "bitwise_xor")
left_shift = _binary("shift_left", "left_shift")


def _strong_const(v, dt):
    return as_array(np.array(v).astype(dt))


def exp2(x, /):
    """2**x, computed as exp(x * ln 2); weakly typed inputs stay weak (as in JAX)."""
    x = convert_inexact(x)
    return exp(multiply(x, convert(np.log(2.0), x.dtype, weak=x.weak_type)))


def log2(x, /):
    """log(x) / log(2); a weakly typed input gives a weakly typed result, as in jax >= 0.11
    (jax 0.10 divided by a strongly typed log(2) and so returned a strong type)."""
    x = convert_inexact(x)
    return true_divide(log(x), convert(np.log(2.0), x.dtype, weak=x.weak_type))


def log10(x, /):
    """log(x) / log(10) (a strongly typed result, as in JAX)."""
    x = convert_inexact(x)
    return true_divide(log(x), _strong_const(np.log(10.0), x.dtype))


def right_shift(x, y, /):
    a, b = promote_args("right_shift", x, y)
    op = "shift_right_logical" if a.dtype.kind == "u" else "shift_right_arithmetic"
    return bind1(op, a, b)


def negative(x, /):
    return bind1("negate", _lift(x))


def positive(x, /):
    return _lift(x)


def abs(x, /):  # noqa: A001
    x = _lift(x)
    if x.dtype.kind == "u" or x.dtype == np.bool_:
        return x
    return bind1("abs", x)


absolute = abs


def sign(x, /):
    x = _lift(x)
    if x.dtype.kind == "u":
        return convert(not_equal(x, 0), x.dtype)
    if x.dtype == np.bool_:
        return x
    return bind1("sign", x)


def floor(x, /):
    x = _lift(x)
    return bind1("floor", x) if pdt.is_inexact(x.dtype) else x


def ceil(x, /):
    x = _lift(x)
    return bind1("ceil", x) if pdt.is_inexact(x.dtype) else x


def trunc(x, /):
    x = _lift(x)
    if not pdt.is_inexact(x.dtype):
        return x
    return where(less(x, 0), ceil(x), floor(x))


fix = trunc


def round(x, /, decimals: int = 0):  # noqa: A001
    """Round half to even at `decimals` places; complex rounds its real and imaginary parts."""
    x = _lift(x)
    if not pdt.is_inexact(x.dtype):
        return x
    if x.dtype.kind == "c":
        return _complex_parts(round, x, decimals)
    if decimals == 0:
        return bind1("round_nearest_even", x)
    factor = 10.0**decimals
    return true_divide(bind1("round_nearest_even", multiply(x, factor)), factor)


around = round


def rint(x, /):
    """Round half to even; integer and bool inputs become the default float (as in JAX)."""
    x = _lift(x)
    if not pdt.is_inexact(x.dtype):
        return convert(x, pdt.default_float())
    if x.dtype.kind == "c":
        return _complex_parts(rint, x)
    return bind1("round_nearest_even", x)


def _complex_parts(f, x, *args):
    """complex(f(real(x)), f(imag(x))): JAX's rule for rounding a complex value."""
    re, im = bind1("real", x), bind1("imag", x)
    return bind1("complex", f(re, *args), f(im, *args))


def invert(x, /):
    return bind1("not", _lift(x))


bitwise_not = invert


def logical_not(x, /):
    return bind1("not", convert(_lift(x), np.bool_))


def _logical(op, name):
    def f(x, y, /):
        a, b = broadcast_arrays_named(name, convert(x, np.bool_), convert(y, np.bool_))
        return bind1(op, a, b)

    f.__name__ = name
    return f


logical_and = _logical("and", "logical_and")
logical_or = _logical("or", "logical_or")
logical_xor = _logical("xor", "logical_xor")


def true_divide(x, y, /):
    a, b = promote_args("true_divide", x, y, to_inexact=True)
    return bind1("divide", a, b)


divide = true_divide


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
    return bind1("power", a, b)


pow = power  # noqa: A001


def square(x, /):
    """x * x, as JAX's `square` (CHLO's form for complex x); booleans become integers."""
    (x,) = promote_args("square", x, numeric=True)
    return bind1("square", x)


def reciprocal(x, /):
    """1 / x in x's inexact type, as JAX's `integer_pow(x, -1)` (and its derivative)."""
    (x,) = promote_args("reciprocal", x, to_inexact=True)
    return lax_integer_pow(x, -1)


def _compare(direction, name):
    def f(x, y, /):
        a, b = promote_args(name, x, y)
        if direction not in ("EQ", "NE") and a.dtype.kind == "c":
            # JAX orders complex numbers lexicographically: by real part, ties by imaginary
            ra, rb = bind1("real", a), bind1("real", b)
            by_imag = bind1("compare", bind1("imag", a), bind1("imag", b),
                            comparison_direction=direction)  # fmt: skip
            by_real = bind1("compare", ra, rb, comparison_direction=direction)
            ties = bind1("compare", ra, rb, comparison_direction="EQ")
            return bind1("select", ties, by_imag, by_real)
        return bind1("compare", a, b, comparison_direction=direction)

    f.__name__ = name
    return f


equal = _compare("EQ", "equal")
not_equal = _compare("NE", "not_equal")
less = _compare("LT", "less")
less_equal = _compare("LE", "less_equal")
greater = _compare("GT", "greater")
greater_equal = _compare("GE", "greater_equal")


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


arccos, arccosh = _nan_with_nonzero_finite(arccos), _nan_with_nonzero_finite(arccosh)
arcsin, arcsinh = _nan_with_nonzero_finite(arcsin), _nan_with_nonzero_finite(arcsinh)


def full_like_bool(x, value: bool):
    return broadcast_to(as_array(np.array(value)), x.shape)


def where(condition, x=None, y=None, /):
    """Elementwise choice; the one-argument form (nonzero) is not shape-static."""
    if x is None or y is None:
        raise NotImplementedError(
            "purejit.numpy.where(condition) with one argument has a data-dependent shape; "
            "pass x and y"
        )
    c = convert(_lift(condition), np.bool_)
    a, b = promote_args("where", x, y)
    c, a, b = broadcast_arrays_named("where", c, a, b)
    # weak iff both branches are (the strong bool condition does not decide it), as in JAX
    return bind1("select", c, a, b, weak=a.weak_type and b.weak_type)


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
    """sqrt(x**2 + y**2) without overflow: big * sqrt(1 + (small / big)**2)."""
    a, b = promote_args("hypot", x, y, to_inexact=True)
    a, b = abs(a), abs(b)
    big, small = maximum(a, b), minimum(a, b)
    zero = equal(big, 0)
    one = convert(1, big.dtype, weak=big.weak_type)
    ratio = true_divide(small, where(zero, one, big))
    r = where(zero, big, multiply(big, sqrt(add(one, multiply(ratio, ratio)))))
    inf = logical_or(isinf(a), isinf(b))
    return where(inf, _strong_const(np.inf, r.dtype), r)


def deg2rad(x, /):
    return multiply(convert_inexact(x), np.pi / 180)


def rad2deg(x, /):
    return multiply(convert_inexact(x), 180 / np.pi)


radians, degrees = deg2rad, rad2deg


def convert_inexact(x):
    x = _lift(x)
    if pdt.is_inexact(x.dtype):
        return x
    return convert(x, pdt.default_float(), weak=x.weak_type)


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
