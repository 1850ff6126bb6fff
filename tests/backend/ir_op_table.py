"""The elementwise op table: for every elementwise op, the dtypes it is tested with, its
inputs and its expected result (see ir_op_cases.py for how expectations are computed)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from ir_op_cases import (
    BF16,
    C64,
    C128,
    F16,
    F32,
    F64,
    FLOAT_SPECIALS,
    FLOATS,
    INTS,
    PRED,
    RTOL,
    S8,
    S32,
    S64,
    U8,
    U32,
    Case,
    clz,
    complex_minmax,
    complexes,
    float_minmax,
    floats,
    int_divide,
    int_power,
    int_remainder,
    ints,
    lgamma,
    per_element,
    popcnt,
    rng_for,
    round_afz,
    shift,
    sign,
    values,
    via_f64,
    wide,
)
from ir_op_table_powers import power_cases


def _real_of(dt):
    return F32 if np.dtype(dt) == C64 else F64


def _tol(dt, scale=1.0):
    return RTOL.get(np.dtype(dt), 0.0) * scale


def unary(name, expected, dts, *, out=None, scale=1.0, atol=0.0, inputs=None, **kw):
    """Cases for a unary op: `expected` is a NumPy function (run in float64 and rounded to
    the result dtype) or, marked with `by_dtype`, a factory of the expectation per dtype."""
    cases = []
    for dt in dts:
        x = inputs(dt) if inputs else values(dt, **kw)
        o = out(dt) if out else None
        exp = expected(dt) if getattr(expected, "by_dtype", False) else via_f64(expected, o)
        t = _tol(dt, scale)
        cases.append(Case(name, [x], exp, rtol=t, atol=atol * (t > 0)))
    return cases


def by_dtype(fn):
    fn.by_dtype = True
    return fn


def _pairs(dt, *, rhs=None, nonzero_rhs=False):
    """Operand pairs: every pair of special values, then random pairs."""
    dt = np.dtype(dt)
    if dt == PRED:
        a, b = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
        return a, b
    if dt.kind in "iu":
        edge = np.unique(ints(dt)[:11])
        right = edge if rhs is None else rhs(dt)
        a, b = (g.reshape(-1) for g in np.meshgrid(edge, right, indexing="ij"))
        ra = ints(dt, rng=rng_for("a", dt))
        rb = ints(dt, rng=rng_for("b", dt), small=True) if rhs is None else np.resize(right, 48)
        return np.concatenate([a, ra]).astype(dt), np.concatenate([b, rb]).astype(dt)
    if dt.kind == "c":
        a = complexes(dt, rng=rng_for("ca", dt))
        return a, complexes(dt, rng=rng_for("cb", dt), nonzero=nonzero_rhs)
    sp = np.array(FLOAT_SPECIALS, np.float64)
    a, b = (g.reshape(-1) for g in np.meshgrid(sp, sp, indexing="ij"))
    ra = floats(dt, specials=False, rng=rng_for("fa", dt))
    rb = floats(dt, specials=False, rng=rng_for("fb", dt))
    return np.concatenate([a.astype(dt), ra]), np.concatenate([b.astype(dt), rb])


def binary(name, expected, dts, *, scale=1.0, atol=0.0, rhs=None, nonzero_rhs=False):
    cases = []
    for dt in dts:
        a, b = _pairs(dt, rhs=rhs, nonzero_rhs=nonzero_rhs)
        exp = expected(dt)
        t = _tol(dt, scale)
        cases.append(Case(name, [a, b], exp, rtol=t, atol=atol * (t > 0)))
    return cases


def _np(fn):
    return lambda dt: via_f64(fn)


def _py_or_np(py, np_fn):
    """Python per element for integers, NumPy in float64 for floats/complex."""
    return lambda dt: per_element(py(dt)) if np.dtype(dt).kind in "iu" else via_f64(np_fn)


def _bool_or(np_fn, bool_fn):
    return lambda dt: (lambda a, b: [bool_fn(a, b)]) if dt == PRED else via_f64(np_fn)


def _shift_amounts(dt):
    bits = np.dtype(dt).itemsize * 8
    amounts = [0, 1, 3, bits - 1, bits, bits + 1, 2 * bits, 255 if bits == 8 else -1, 100]
    return np.array(amounts, np.int64).astype(np.dtype(dt))


def _exponents(dt):
    v = [0, 1, 2, 3, 5, 7, 63, 64, 65, 100]
    if np.dtype(dt).kind == "i":
        v += [-1, -2, -3]
    return np.array(v, np.int64).astype(np.dtype(dt))


def _round_inputs(dt):
    x = floats(dt)
    extra = [0.49999997, -0.49999997, 3.4999998, 2.0**23 + 1, 2.0**23 + 0.5, 1e30]
    with np.errstate(over="ignore"):  # 1e30 is inf in f16/bf16: also worth rounding
        x[-len(extra) :] = np.array(extra).astype(dt)
    return x


def _next_after(a, b):
    # C's nextafter returns y when x == y (NumPy's float16 version returns x: 0 vs -0)
    return [np.where(a == b, b, np.nextafter(a, b))]


def _erf_inv(x):
    from scipy.special import erfinv

    return np.where(x == 0, x, erfinv(x))  # XLA keeps the sign of zero


@by_dtype
def _lgamma(dt):
    return per_element(lgamma)


def _precision_inputs(dt):
    """Specials, ties at the 10th and 2nd mantissa bits, and magnitudes from 2**-30 to
    2**30 (overflow and underflow of the narrow exponents), in `dt`."""
    rng = rng_for("reduce_precision", dt)
    mags = np.exp2(rng.uniform(-30, 30, 64)) * rng.choice([-1.0, 1.0], 64)
    ties = [1 + 2**-11, 1 + 3 * 2**-11, 1.125, 1.375, -1.625, 65504.0, 65519.0, 65520.0]
    edge = [2.0**-14, 2.0**-14 * (1 - 2**-12), 1.5 * 2**-15, 2.0**-126, 3.4e38]
    with np.errstate(over="ignore"):
        v = np.array(FLOAT_SPECIALS + ties + edge + list(mags)).astype(dt)
    tiny = float(ml_dtypes.finfo(dt).tiny)
    with np.errstate(invalid="ignore"):  # no subnormal inputs (XLA's CPU flushes them)
        return np.where(np.abs(v.astype(np.float64)) < tiny, 0, v).astype(dt)


def _as_format(fmt):
    """reduce_precision's expectation by an independent route: ml_dtypes' round-to-nearest
    conversion to the format of the same widths, its subnormals flushed to signed zeros."""

    def expected(x):
        with np.errstate(over="ignore", invalid="ignore"):
            y = x.astype(fmt).astype(np.float64)
            tiny = float(ml_dtypes.finfo(fmt).tiny)
            y = np.where(np.abs(y) < tiny, np.copysign(0.0, x.astype(np.float64)), y)
        return [y.astype(x.dtype)]

    return expected


def _reduce_precision_cases():
    cases = []
    for dt, fmt in [(F32, F16), (F32, BF16), (F32, ml_dtypes.float8_e5m2), (F64, F32),
                    (F64, F16), (BF16, ml_dtypes.float8_e5m2), (F16, ml_dtypes.float8_e5m2),
                    (F16, F16), (BF16, BF16)]:  # fmt: skip
        info = ml_dtypes.finfo(fmt)
        attrs = {"exponent_bits": int(info.nexp), "mantissa_bits": int(info.nmant)}
        label = f"{np.dtype(dt).name}->e{info.nexp}m{info.nmant}"
        cases.append(Case("reduce_precision", [_precision_inputs(dt)], _as_format(fmt), attrs,
                          label=label))  # fmt: skip
    return cases


def _special_function_cases():
    """erfc, digamma, bessel_i1e, polygamma and zeta (XLA's CHLO expansions) against SciPy,
    on their domains (no special values: poles and infinities are the expansions' own)."""
    import scipy.special as sp

    def inside(lo, hi):
        return lambda dt: floats(dt, lo=lo, hi=hi, specials=False)

    F = (F32, F64)
    cases = unary("erfc", sp.erfc, F, inputs=inside(-5, 9), scale=4, atol=1e-6)
    cases += unary("digamma", sp.psi, F, inputs=inside(0.05, 30), scale=8, atol=1e-6)
    cases += unary("digamma", sp.psi, (F32,), inputs=inside(-4.3, -0.2), scale=64, atol=1e-4)
    cases += unary("bessel_i1e", sp.i1e, F, inputs=inside(-40, 40), scale=4, atol=1e-6)
    for dt in F:
        x = floats(dt, lo=0.2, hi=12, specials=False)
        n = np.resize(np.array([1, 2, 3, 4], dt), x.shape)
        cases.append(Case("polygamma", [n, x], via_f64(sp.polygamma), rtol=_tol(dt, 64),
                          atol=1e-5))  # fmt: skip
        s = floats(dt, lo=1.5, hi=8, specials=False)
        cases.append(Case("zeta", [s, x], via_f64(sp.zeta), rtol=_tol(dt, 64), atol=1e-6))
    return cases


def elementwise_cases() -> list[Case]:
    F = FLOATS
    FC = FLOATS + (C64,)
    cases = []
    cases += unary(
        "abs",
        np.abs,
        (F32, BF16, F16, S32, S8, C64),
        out=lambda d: _real_of(d) if d == C64 else None,
    )
    cases += unary("negate", np.negative, (F32, BF16, S32, U8, S64, C64))
    cases += unary("sign", sign, (F32, BF16, F16, S32, S8, C64))
    cases += unary("not", np.invert, (S32, U8, PRED))
    cases += unary("popcnt", by_dtype(lambda d: per_element(popcnt(d))), (S32, U8, S8, S64))
    cases += unary(
        "count_leading_zeros", by_dtype(lambda d: per_element(clz(d))), (S32, U8, S8, S64)
    )
    cases += unary("floor", np.floor, F)
    cases += unary("ceil", np.ceil, F)
    cases += unary("round_nearest_even", np.rint, F, inputs=_round_inputs)
    cases += unary(
        "round_nearest_afz", by_dtype(lambda d: per_element(round_afz)), F, inputs=_round_inputs
    )
    cases += unary("is_finite", np.isfinite, F, out=lambda d: PRED)
    cases += unary("real", np.real, (C64, C128), out=_real_of)
    cases += unary("imag", np.imag, (C64, C128), out=_real_of)
    cases += unary("sqrt", np.sqrt, FC, lo=-1, hi=9)
    cases += unary("rsqrt", lambda x: 1 / np.sqrt(x), FC, lo=-1, hi=9, nonzero=True)
    cases += unary("cbrt", np.cbrt, F, lo=-9, hi=9)
    cases += unary("exponential", np.exp, FC, lo=-10, hi=10, atol=1e-6)
    cases += unary("exponential_minus_one", np.expm1, FC, lo=-10, hi=10, atol=1e-6)
    cases += unary("log", np.log, FC, lo=-1, hi=9, nonzero=True, atol=1e-6)
    cases += unary("log_plus_one", np.log1p, FC, lo=-2, hi=9, atol=1e-6)
    cases += unary("logistic", lambda x: 1 / (1 + np.exp(-x)), FC, lo=-8, hi=8, atol=1e-6)
    for name, fn in (("sine", np.sin), ("cosine", np.cos), ("tan", np.tan), ("tanh", np.tanh)):
        cases += unary(name, fn, FC, scale=2, atol=1e-6)
    for name, fn in (("asin", np.arcsin), ("acos", np.arccos), ("atanh", np.arctanh)):
        cases += unary(name, fn, FC, lo=-1.5, hi=1.5, scale=2, atol=1e-6)
    for name, fn in (
        ("atan", np.arctan),
        ("sinh", np.sinh),
        ("cosh", np.cosh),
        ("asinh", np.arcsinh),
    ):
        cases += unary(name, fn, FC, scale=2, atol=1e-6)
    cases += unary("acosh", np.arccosh, FC, lo=0, hi=6, scale=2, atol=1e-6)
    cases += unary(
        "erf", by_dtype(lambda d: per_element(__import__("math").erf)), F, scale=2, atol=1e-6
    )
    cases += unary("lgamma", _lgamma, F, lo=-4.5, hi=6, scale=8, atol=1e-5)
    cases += unary("erf_inv", _erf_inv, F, lo=-1, hi=1, scale=4, atol=1e-6)
    cases += _special_function_cases()

    cases += binary("add", _bool_or(np.add, np.logical_or), F + INTS + (PRED, C64))
    cases += binary("subtract", _np(np.subtract), F + INTS + (C64,))
    cases += binary(
        "multiply", _bool_or(np.multiply, np.logical_and), F + INTS + (PRED, C64), atol=1e-6
    )
    cases += binary("divide", _py_or_np(int_divide, np.divide), F + INTS + (C64,), nonzero_rhs=True)
    cases += binary("remainder", _py_or_np(int_remainder, np.fmod), F + INTS)
    cases += binary("power", _py_or_np(int_power, np.power), F + INTS, rhs=_exponents, scale=2)
    cases += binary("atan2", _np(np.arctan2), F, scale=2, atol=1e-6)
    # exact: the neighbouring float of each width (np.nextafter has no bfloat16)
    cases += binary("next_after", lambda dt: _next_after, (F32, F16, F64))
    for name, kind in (("maximum", "max"), ("minimum", "min")):

        def minmax(dt, kind=kind):
            if dt == C64:
                return complex_minmax(kind)
            if np.dtype(dt).kind == "f" or dt == BF16:
                return per_element(float_minmax(kind))
            return via_f64(np.maximum if kind == "max" else np.minimum)

        cases += binary(name, minmax, F + INTS + (PRED, C64))
    for name, fn in (("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor)):
        cases += binary(name, _np(fn), INTS + (PRED,))
    for name, kind in (
        ("shift_left", "left"),
        ("shift_right_logical", "logical"),
        ("shift_right_arithmetic", "arithmetic"),
    ):
        cases += binary(name, lambda d, k=kind: per_element(shift(k, d)), INTS, rhs=_shift_amounts)
    cases += _complex_power_cases()
    cases += _complex_next_after_cases()
    cases += compare_cases() + select_clamp_cases()
    cases += _reduce_precision_cases()
    cases += power_cases()
    return cases


def _complex_next_after_cases():
    cases = []
    for dt, out in ((F32, C64), (F64, C128)):
        a, b = _pairs(dt)
        a[:2], b[:2] = np.inf, -np.inf  # infinite parts stay apart (no NaN from inf * 1j)

        def make(re, im, out=out):
            z = np.empty(re.shape, out)
            z.real, z.imag = re, im
            return [z]

        cases.append(Case("complex", [a, b], make, label=np.dtype(dt).name))
    for dt in (F32, F64, F16, BF16):
        a, b = _pairs(dt)
        b[:3] = a[:3]  # next_after(x, x) == x
        a[3], b[3] = 0, 1  # the smallest subnormal: a bit pattern, not flushed
        cases.append(
            Case(
                "next_after",
                [a, b],
                lambda x, y: [np.where(x == y, y, np.nextafter(x, y)).astype(x.dtype)],
            )
        )
    return cases


def _complex_power_cases():
    a = complexes(C64, nonzero=True)
    b = complexes(C64, rng=rng_for("cpow"))
    zero_base = np.zeros(4, C64), np.array([0, 2, 1.5 - 1j, -1], C64)
    exp_zero = np.array([1, 0, np.nan + 1j * np.nan, np.nan + 1j * np.nan], C64)
    return [
        Case("power", [a, b], via_f64(np.power), rtol=1e-5, atol=1e-5, label="c64"),
        # XLA: 0 ** b is 1 for b == 0, 0 for real b > 0, NaN otherwise
        Case("power", list(zero_base), lambda a, b: [exp_zero], label="c64 zero base"),
    ]


COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
           "GT": np.greater, "GE": np.greater_equal}  # fmt: skip


def compare_cases() -> list[Case]:
    cases = []
    for dt in (F32, BF16, F16, S32, U8, S64, PRED, C64):
        a, b = _pairs(dt)
        for d, fn in COMPARE.items():
            if dt == C64 and d not in ("EQ", "NE"):
                continue
            if dt not in (F32, S32, U8) and d not in ("EQ", "LT", "GE"):
                continue  # every direction on one type of each compare_type; three on others
            exp = (lambda fn: lambda a, b: [fn(wide(a), wide(b))])(fn)
            cases.append(
                Case("compare", [a, b], exp, {"comparison_direction": d}, label=f"{d},{dt}")
            )
    return cases


def select_clamp_cases() -> list[Case]:
    cases = []
    for dt in (F32, BF16, S32, U8, PRED, C64):
        a, b = _pairs(dt)
        p = np.arange(a.size) % 3 == 1
        cases.append(Case("select", [p, a, b], lambda p, a, b: [np.where(p, a, b)]))
        cases.append(
            Case(
                "select",
                [np.array(False), a, b],
                lambda p, a, b: [b.copy()],
                label=f"scalar pred,{dt}",
            )
        )
    for dt in (F32, BF16, F16, S32, U8, S8):
        x = values(dt)
        lo, hi = np.sort(values(dt)[-2:]) if dt.kind in "iu" else np.array([-1.5, 2.0], dt)
        exp = lambda lo, x, hi: [np.minimum(np.maximum(x, lo), hi)]  # noqa: E731  NaN propagates
        cases.append(
            Case("clamp", [np.array(lo, dt), x, np.array(hi, dt)], exp, label=f"scalar,{dt}")
        )
        lo_a = np.resize(np.array([lo, hi], dt), x.shape)
        hi_a = np.resize(np.array([hi, hi], dt), x.shape)
        cases.append(Case("clamp", [lo_a, x, hi_a], exp, label=f"array,{dt}"))
    return cases


CONVERT_TYPES = (F32, BF16, F16, F64, S32, S8, U8, U32, S64, PRED, C64)


def convert_inputs(dt) -> np.ndarray:
    """Values that exercise truncation, saturation, NaN and rounding on conversion."""
    dt = np.dtype(dt)
    if dt.kind == "c":
        return complexes(dt)
    if dt.kind in "iub":
        return values(dt)
    v = [0.0, -0.0, 0.5, -0.5, 1.7, -1.7, 2.5, 127.9, 128.0, -128.9, 255.5, 256.0, -129.0,
         3e9, -3e9, 1e20, -1e20, 65504.0, 70000.0, np.inf, -np.inf, np.nan, 1 + 2**-12]  # fmt: skip
    with np.errstate(over="ignore"):
        return np.array(v, np.float64).astype(dt)
