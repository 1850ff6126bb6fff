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
from purejit.ir.ops._xla_refs import (
    _abs,
    _clz,
    _divide,
    _erf_inv,
    _lgamma,
    _logistic,
    _minmax,
    _next_after,
    _not,
    _popcnt,
    _power,
    _remainder,
    _round_afz,
    _shift_left,
    _shift_right_arithmetic,
    _shift_right_logical,
    _sign,
    _vec,
)
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
