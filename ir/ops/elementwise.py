"""Elementwise ops: StableHLO's unary and binary math, compare, select, clamp, convert.

Operands of an elementwise op have equal shapes (no implicit broadcasting in the IR: the
tracer inserts `broadcast_in_dim`). References follow XLA's semantics where they differ from
NumPy's (checked against XLA on CPU by tests/backend/test_backend_ops.py):
  * integer divide truncates towards zero; `x / 0 == -1` (all bits set), `x % 0 == x`,
    `INT_MIN / -1 == INT_MIN`, `INT_MIN % -1 == 0`;
  * shift amounts are read as unsigned: >= the bit width gives 0 (the sign for arithmetic
    right shifts), so does a negative amount;
  * integer power squares over the exponent's low 6 bits; a negative exponent gives
    1 (base 1), +-1 (base -1) or 0;
  * popcnt and count_leading_zeros count the two's complement bits;
  * maximum/minimum propagate NaN and order -0.0 below +0.0; on complex numbers they order
    (real, imag) lexicographically, as JAX does;
  * round_nearest_afz and sign keep the sign of zero; lgamma is +inf at its poles;
  * complex `0 ** b` is 1 for b == 0, 0 for real b > 0, NaN otherwise;
  * narrow floats (bf16, f16) are computed in f32 and rounded back.
Complex infinities and NaNs, and subnormal numbers (XLA's CPU backend flushes them to zero),
are outside what the reference promises to match.
"""

from __future__ import annotations

import math

import numpy as np
from purejit.ir import dtypes
from purejit.ir.core import TensorType
from purejit.ir.ops import _float_bits
from purejit.ir.ops import _special_refs as _special
from purejit.ir.ops._util import (
    compute_dtype,
    dtype_attr,
    int_attr,
    nargs,
    need_attrs,
    same_types,
)
from purejit.ir.registry import OpDef, fail, register

# dtype classes an op accepts
_CLASSES = {
    "float": dtypes.is_float,
    "inexact": dtypes.is_inexact,
    "num": lambda d: dtypes.is_integer(d) or dtypes.is_inexact(d),
    "signed_num": lambda d: dtypes.is_signed(d) or dtypes.is_inexact(d),
    "int": dtypes.is_integer,
    "intbool": lambda d: dtypes.is_integer(d) or dtypes.is_bool(d),
    "real": lambda d: dtypes.is_integer(d) or dtypes.is_float(d),
    "complex": dtypes.is_complex,
    "any": lambda d: True,
}

_EW = frozenset({"pure", "elementwise"})
_APPROX = ("approximate",)  # transcendental: XLA's own polynomial, not NumPy's bits


def _check_class(name: str, cls: str, t: TensorType):
    if not _CLASSES[cls](t.dtype):
        fail(name, f"does not accept {t} (expects {cls} element type)")


def _real_dtype(dt):
    return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)


def _narrow(fn):
    """Run `fn` in f32 for bf16/f16 inputs and round the result back."""

    def run(*xs):
        dt = xs[-1].dtype
        cdt = compute_dtype(dt)
        if cdt != dt:
            out = fn(*(x.astype(cdt) for x in xs))
            return out.astype(dt) if out.dtype == cdt else out
        return fn(*xs)

    return run


def unary(name, fn, cls, *, result=None, traits=(), doc=""):
    """Register a unary elementwise op. `result(dtype)` maps the operand to the result dtype."""

    def infer(types, attrs, regions):
        nargs(name, types, 1)
        _check_class(name, cls, types[0])
        dt = result(types[0].dtype) if result else types[0].dtype
        return [TensorType(types[0].shape, dt)]

    run = _narrow(fn)

    def reference(args, attrs, regions, run_region):
        out = np.asarray(run(args[0]))
        return [out]

    register(OpDef(name, infer, reference, _EW | frozenset(traits), doc=doc))


def binary(name, fn, cls, *, traits=(), doc="", narrow=True):
    def infer(types, attrs, regions):
        nargs(name, types, 2)
        t = same_types(name, types)
        _check_class(name, cls, t)
        return [t]

    run = _narrow(fn) if narrow else fn

    def reference(args, attrs, regions, run_region):
        return [np.asarray(run(args[0], args[1])).astype(args[0].dtype)]

    register(OpDef(name, infer, reference, _EW | frozenset(traits), doc=doc))


# ---- reference helpers with XLA semantics ------------------------------------------------


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
    for _ in range(6):
        acc = np.where((e & one) == one, acc * base, acc)
        base = base * base
        e = e >> one
    sa = _signed(a)
    odd = (_unsigned(b) & one) == one
    small = np.where(sa == 1, 1, np.where(sa == -1, np.where(odd, -1, 1), 0)).astype(sa.dtype)
    return np.where(_signed(b) < 0, small.view(a.dtype), acc.view(a.dtype)).astype(a.dtype)


def _shift_left(a, b):
    # the shift amount is read as unsigned: negative or >= bit width gives 0
    bits = a.dtype.itemsize * 8
    sh = _unsigned(b)
    ok = sh < bits
    out = np.left_shift(_unsigned(a), np.where(ok, sh, 0).astype(sh.dtype))
    return np.where(ok, out, 0).astype(sh.dtype).view(a.dtype)


def _shift_right_logical(a, b):
    bits = a.dtype.itemsize * 8
    sh = _unsigned(b)
    ok = sh < bits
    out = np.right_shift(_unsigned(a), np.where(ok, sh, 0).astype(sh.dtype))
    return np.where(ok, out, 0).astype(sh.dtype).view(a.dtype)


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


def _is_finite_dtype(dt):
    return np.dtype(np.bool_)


def _complex_part(dt):
    return _real_dtype(dt)


def _abs_dtype(dt):
    return _real_dtype(dt) if dtypes.is_complex(dt) else dt


# ---- unary ---------------------------------------------------------------------------------

unary("abs", _abs, "signed_num", result=_abs_dtype, traits=("cheap",))
unary("negate", np.negative, "num", traits=("involution", "cheap"))
unary("sign", _sign, "signed_num", traits=("cheap",))
unary("not", _not, "intbool", traits=("involution", "cheap"))
unary("popcnt", _popcnt, "int")
unary("count_leading_zeros", _clz, "int")
unary("floor", np.floor, "float", traits=("cheap",))
unary("ceil", np.ceil, "float", traits=("cheap",))
unary("round_nearest_afz", _round_afz, "float")
unary("round_nearest_even", np.rint, "float")
unary("is_finite", np.isfinite, "float", result=_is_finite_dtype)
unary("real", np.real, "complex", result=_complex_part)
unary("imag", np.imag, "complex", result=_complex_part)
unary("sqrt", np.sqrt, "inexact")
unary("rsqrt", lambda x: 1 / np.sqrt(x), "inexact", traits=_APPROX)
unary("cbrt", np.cbrt, "float", traits=_APPROX)
unary("exponential", np.exp, "inexact", traits=_APPROX)
unary("exponential_minus_one", np.expm1, "inexact", traits=_APPROX)
unary("log", np.log, "inexact", traits=_APPROX)
unary("log_plus_one", np.log1p, "inexact", traits=_APPROX)
unary("logistic", _logistic, "inexact", traits=_APPROX)
unary("sine", np.sin, "inexact", traits=_APPROX)
unary("cosine", np.cos, "inexact", traits=_APPROX)
unary("tan", np.tan, "inexact", traits=_APPROX)
unary("tanh", np.tanh, "inexact", traits=_APPROX)
# CHLO ops: XLA expands them into StableHLO when it compiles
unary("asin", np.arcsin, "inexact", traits=_APPROX)
unary("acos", np.arccos, "inexact", traits=_APPROX)
unary("atan", np.arctan, "inexact", traits=_APPROX)
unary("sinh", np.sinh, "inexact", traits=_APPROX)
unary("cosh", np.cosh, "inexact", traits=_APPROX)
unary("asinh", np.arcsinh, "inexact", traits=_APPROX)
unary("acosh", np.arccosh, "inexact", traits=_APPROX)
unary("atanh", np.arctanh, "inexact", traits=_APPROX)
unary("erf", _vec(math.erf), "float", traits=_APPROX)
unary("lgamma", _vec(_lgamma), "float", traits=_APPROX)
unary("erf_inv", _erf_inv, "float", traits=_APPROX)
# special functions XLA expands from CHLO (references in _special_refs)
unary("erfc", _special.erfc, "float", traits=_APPROX)
unary("digamma", _special.digamma, "float", traits=_APPROX)
unary("bessel_i1e", _special.bessel_i1e, "float", traits=_APPROX)

# ---- binary --------------------------------------------------------------------------------

binary("add", np.add, "any", traits=("commutative", "associative", "cheap"))
binary("subtract", np.subtract, "num", traits=("cheap",))
binary("multiply", np.multiply, "any", traits=("commutative", "associative", "cheap"))
binary("divide", _divide, "num")
binary("remainder", _remainder, "real")
binary("power", _power, "num", traits=_APPROX)
binary(
    "maximum",
    _minmax(np.greater, np.maximum),
    "any",
    traits=("commutative", "associative", "idempotent", "cheap"),
)
binary(
    "minimum",
    _minmax(np.less, np.minimum),
    "any",
    traits=("commutative", "associative", "idempotent", "cheap"),
)
binary("atan2", np.arctan2, "float", traits=_APPROX)
binary("next_after", _next_after, "float", narrow=False)  # exact on the bits of each width
binary("polygamma", _special.polygamma, "float", traits=_APPROX)  # (n, x)
binary("zeta", _special.zeta, "float", traits=_APPROX)  # Hurwitz: (s, q)
binary(
    "and", np.bitwise_and, "intbool", traits=("commutative", "associative", "idempotent", "cheap")
)
binary("or", np.bitwise_or, "intbool", traits=("commutative", "associative", "idempotent", "cheap"))
binary("xor", np.bitwise_xor, "intbool", traits=("commutative", "associative", "cheap"))
binary("shift_left", _shift_left, "int")
binary("shift_right_logical", _shift_right_logical, "int")
binary("shift_right_arithmetic", _shift_right_arithmetic, "int")

# ---- compare, select, clamp, convert -------------------------------------------------------

COMPARISONS = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


def _compare_infer(types, attrs, regions):
    nargs("compare", types, 2)
    t = same_types("compare", types)
    direction = attrs.get("comparison_direction")
    if direction not in COMPARISONS:
        known = list(COMPARISONS)
        fail("compare", f"comparison_direction={direction!r} for {t} is not one of {known}")
    if dtypes.is_complex(t.dtype) and direction not in ("EQ", "NE"):
        fail("compare", f"{direction} is not defined for complex {t}")
    return [TensorType(t.shape, np.bool_)]


def _compare_ref(args, attrs, regions, run_region):
    a, b = args
    cdt = compute_dtype(a.dtype)
    return [np.asarray(COMPARISONS[attrs["comparison_direction"]](a.astype(cdt), b.astype(cdt)))]


register(
    OpDef(
        "compare",
        _compare_infer,
        _compare_ref,
        _EW | {"cheap"},
        attrs=("comparison_direction",),
        doc="compare(a, b) {comparison_direction=EQ|NE|LT|LE|GT|GE} -> pred",
    )
)


def _select_infer(types, attrs, regions):
    nargs("select", types, 3)
    p, a, b = types
    same_types("select", [a, b])
    if p.dtype != np.bool_:
        fail("select", f"predicate must be pred, got {p}")
    if p.shape not in ((), a.shape):
        fail("select", f"predicate {p} must be a scalar or match {a}")
    return [a]


def _select_ref(args, attrs, regions, run_region):
    p, a, b = args
    return [np.where(p, a, b).astype(a.dtype)]


register(
    OpDef(
        "select", _select_infer, _select_ref, _EW | {"cheap"}, doc="select(pred, on_true, on_false)"
    )
)


def _clamp_infer(types, attrs, regions):
    nargs("clamp", types, 3)
    lo, x, hi = types
    for bound in (lo, hi):
        if bound.dtype != x.dtype or bound.shape not in ((), x.shape):
            fail("clamp", f"bound {bound} must be a scalar or match {x}")
    if dtypes.is_complex(x.dtype):
        fail("clamp", f"is not defined for complex {x} (no order)")
    return [x]


def _clamp_ref(args, attrs, regions, run_region):
    lo, x, hi = args
    return [np.minimum(np.maximum(x, lo), hi).astype(x.dtype)]


register(OpDef("clamp", _clamp_infer, _clamp_ref, _EW | {"cheap"}, doc="clamp(min, x, max)"))


def _convert_infer(types, attrs, regions):
    nargs("convert", types, 1)
    need_attrs("convert", attrs, "dtype")
    return [TensorType(types[0].shape, dtype_attr("convert", "dtype", attrs["dtype"]))]


def convert_array(x: np.ndarray, dt) -> np.ndarray:
    """NumPy conversion with XLA's rules: complex->real drops imag, ->pred is x != 0,
    float->int truncates and saturates, NaN -> 0."""
    dt = np.dtype(dt)
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(dt):
        x = np.real(x)
    if dt == np.bool_:
        return x != 0
    if dtypes.is_float(x.dtype) and dtypes.is_integer(dt):
        info = dtypes.iinfo(dt)
        y = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
        y = np.clip(y, float(info.min), float(info.max))
        if dt in dtypes.NARROW_INTS:  # in range already: through int64, as ml_dtypes wraps
            return y.astype(np.int64).astype(dt)
        return np.where(y >= float(info.max), info.max, y.astype(dt)).astype(dt)
    if x.dtype in dtypes.NARROW_INTS and dtypes.is_float(dt):
        return x.astype(np.float64).astype(dt)
    if x.dtype.name.endswith("fnuz") and dtypes.is_inexact(dt):
        # the one NaN of an fnuz type (the bits of -0) widens to XLA's +NaN
        y = x.astype(dt)
        return np.where(np.isnan(y), np.array(np.nan, dt), y)
    return x.astype(dt)


def _convert_ref(args, attrs, regions, run_region):
    return [convert_array(args[0], attrs["dtype"])]


register(
    OpDef(
        "convert",
        _convert_infer,
        _convert_ref,
        _EW | {"cheap"},
        attrs=("dtype",),
        doc="convert {dtype}",
    )
)


def _bitcast_convert_infer(types, attrs, regions):
    nargs("bitcast_convert", types, 1)
    need_attrs("bitcast_convert", attrs, "dtype")
    t = types[0]
    dt = dtype_attr("bitcast_convert", "dtype", attrs["dtype"])
    if np.dtype(dt).itemsize != t.dtype.itemsize or dtypes.is_bool(dt) or dtypes.is_bool(t.dtype):
        fail("bitcast_convert", f"{t} to {np.dtype(dt).name}: element widths differ (or pred)")
    return [TensorType(t.shape, dt)]


def _bitcast_convert_ref(args, attrs, regions, run_region):
    # the operand's own shape: np.ascontiguousarray makes a 0-d array 1-d
    shape = np.shape(args[0])
    return [np.ascontiguousarray(args[0]).view(np.dtype(attrs["dtype"])).reshape(shape)]


register(
    OpDef(
        "bitcast_convert",
        _bitcast_convert_infer,
        _bitcast_convert_ref,
        _EW | {"cheap"},
        attrs=("dtype",),
        doc="bitcast_convert {dtype}: the same bits read as another type of the same width",
    )
)


# ---- complex: a binary op whose result is not its operands' type ------------------------


def _complex_infer(types, attrs, regions):
    nargs("complex", types, 2)
    t = same_types("complex", types)
    if t.dtype not in (np.float32, np.float64):
        fail("complex", f"parts must be f32 or f64, got {t}")
    return [TensorType(t.shape, np.complex64 if t.dtype == np.float32 else np.complex128)]


def _complex_ref(args, attrs, regions, run_region):
    re, im = args
    out = np.empty(re.shape, np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real, out.imag = re, im  # not re + 1j * im: inf * 1j would make a NaN real part
    return [out]


register(
    OpDef(
        "complex",
        _complex_infer,
        _complex_ref,
        _EW | {"cheap"},
        doc="complex(real, imag): f32 -> c64, f64 -> c128",
    )
)


# ---- reduce_precision: round to a narrower float format, keeping the type ----------------


def _reduce_precision_infer(types, attrs, regions):
    nargs("reduce_precision", types, 1)
    need_attrs("reduce_precision", attrs, "exponent_bits", "mantissa_bits")
    _check_class("reduce_precision", "float", types[0])
    e = int_attr("reduce_precision", "exponent_bits", attrs["exponent_bits"])
    m = int_attr("reduce_precision", "mantissa_bits", attrs["mantissa_bits"])
    if e < 1:
        fail("reduce_precision", f"exponent_bits must be positive, got {e}")
    if m < 0:
        fail("reduce_precision", f"mantissa_bits must be non-negative, got {m}")
    return [types[0]]


def _reduce_precision_ref(args, attrs, regions, run_region):
    x = np.asarray(args[0])
    return [_float_bits.reduce_precision(x, attrs["exponent_bits"], attrs["mantissa_bits"])]


register(
    OpDef(
        "reduce_precision",
        _reduce_precision_infer,
        _reduce_precision_ref,
        _EW,
        attrs=("exponent_bits", "mantissa_bits"),
        doc="reduce_precision {exponent_bits, mantissa_bits}: round to a narrower float "
        "format (ties to even; overflow to inf, underflow to 0), in the operand's type",
    )
)
