"""StableHLO lowering of the elementwise family (`ir/ops/elementwise.py`).

Most ops map one-to-one onto a `stablehlo` op of the same name, a few onto `chlo` (which
XLA expands); `compare` spells out its comparison type, and complex `maximum`/`minimum`
are expanded so they order the way JAX does.
"""

from __future__ import annotations

import numpy as np

from purejit.backend import pjrt
from purejit.backend.lowering import _fast_math
from purejit.backend.lowering._integer_power import integer_power
from purejit.backend.lowering._util import dense, emit_op, lowering
from purejit.ir import TensorType, dtypes

_SAME_NAME = [
    "abs", "negate", "sign", "not", "popcnt", "count_leading_zeros", "floor", "ceil",
    "round_nearest_afz", "round_nearest_even", "is_finite", "real", "imag", "sqrt", "rsqrt",
    "cbrt", "exponential", "exponential_minus_one", "log", "log_plus_one", "tanh",
    "add", "subtract", "multiply", "divide", "remainder",
    "atan2", "and", "or", "xor", "shift_left", "shift_right_logical",
    "shift_right_arithmetic", "select", "clamp", "convert", "bitcast_convert", "complex",
]  # fmt: skip
for _n in _SAME_NAME:
    lowering(_n)(lambda ctx, op, args, _n=_n: emit_op(ctx, op, args, f"stablehlo.{_n}"))


@lowering("power")
def _power(ctx, op, args):
    """`stablehlo.power`, but integers spelled out as the op's reference computes them
    (XLA's integer power changed meaning in jaxlib 0.12: `_integer_power.py`)."""
    if op.results[0].type.dtype.kind in "iu":
        return integer_power(ctx, op, args)
    return emit_op(ctx, op, args, "stablehlo.power")


@lowering(*_fast_math.FAST_OPS)
def _trig(ctx, op, args):
    """On CPU, float32/bfloat16/float16 sine, cosine and tan become vectorisable StableHLO
    (`_fast_math`); elsewhere, and for ops marked `impl="xla"`, XLA's own op."""
    if _fast_math.applies(op, pjrt.platform()):
        return _fast_math.lower(ctx, op, args)
    return emit_op(ctx, op, args, f"stablehlo.{op.name}")


# no stablehlo op of their own: chlo ops that XLA decomposes
_CHLO = ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "lgamma"]
_CHLO += ["erf_inv", "next_after", "erfc", "digamma", "bessel_i1e", "polygamma", "zeta"]
for _n in _CHLO:
    lowering(_n)(lambda ctx, op, args, _n=_n: emit_op(ctx, op, args, f"chlo.{_n}"))


_CMP_TYPE = {"f": "FLOAT", "c": "FLOAT", "i": "SIGNED", "u": "UNSIGNED", "b": "UNSIGNED"}


@lowering("compare")
def _compare(ctx, op, args):
    dt = op.operands[0].type.dtype
    kind = "f" if dtypes.is_float(dt) else dt.kind
    direction = op.attrs["comparison_direction"]
    attrs = (
        f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
        f"compare_type = #stablehlo<comparison_type {_CMP_TYPE[kind]}>"
    )
    return emit_op(ctx, op, args, "stablehlo.compare", attrs)


@lowering("maximum", "minimum")
def _minmax(ctx, op, args):
    """Real types map to stablehlo.maximum/minimum. For complex, XLA's CPU backend compares
    only real parts, so emit JAX's lexicographic order on (real, imag) with compare+select."""
    t = op.operands[0].type
    if not dtypes.is_complex(t.dtype):
        return emit_op(ctx, op, args, f"stablehlo.{op.name}")
    real_t = TensorType(t.shape, np.float32 if t.dtype == np.complex64 else np.float64)
    pred_t = TensorType(t.shape, np.bool_)
    direction = "GT" if op.name == "maximum" else "LT"

    def cmp(x, y, d):
        attrs = (
            f"comparison_direction = #stablehlo<comparison_direction {d}>, "
            "compare_type = #stablehlo<comparison_type FLOAT>"
        )
        return ctx.op("stablehlo.compare", [x, y], [real_t, real_t], [pred_t], attrs)[0]

    (ra,) = ctx.op("stablehlo.real", [args[0]], [t], [real_t])
    (rb,) = ctx.op("stablehlo.real", [args[1]], [t], [real_t])
    (ia,) = ctx.op("stablehlo.imag", [args[0]], [t], [real_t])
    (ib,) = ctx.op("stablehlo.imag", [args[1]], [t], [real_t])
    same_real = cmp(ra, rb, "EQ")
    (take_a,) = ctx.op(
        "stablehlo.select",
        [same_real, cmp(ia, ib, direction), cmp(ra, rb, direction)],
        [pred_t] * 3,
        [pred_t],
    )
    return ctx.op("stablehlo.select", [take_a, *args], [pred_t, t, t], [t])


@lowering("logistic")
def _logistic(ctx, op, args):
    """1 / (1 + exp(-x)), as JAX lowers `logistic` (it keeps off XLA's LogisticOp, whose
    expansion rounds differently: bfloat16 results differed by an ulp)."""
    t = op.results[0].type
    scalar = TensorType((), t.dtype)
    (one,) = ctx.op(
        "stablehlo.constant", [], [], [scalar], f"value = {dense(np.array(1, t.dtype))}"
    )
    if t.shape:
        attrs = "broadcast_dimensions = array<i64>"
        (one,) = ctx.op("stablehlo.broadcast_in_dim", [one], [scalar], [t], attrs)
    (neg,) = ctx.op("stablehlo.negate", args, [t], [t])
    (e,) = ctx.op("stablehlo.exponential", [neg], [t], [t])
    (den,) = ctx.op("stablehlo.add", [one, e], [t, t], [t])
    return ctx.op("stablehlo.divide", [one, den], [t, t], [t])


@lowering("reduce_precision")
def _reduce_precision(ctx, op, args):
    e, m = op.attrs["exponent_bits"], op.attrs["mantissa_bits"]
    attrs = f"exponent_bits = {e} : i32, mantissa_bits = {m} : i32"
    return emit_op(ctx, op, args, "stablehlo.reduce_precision", attrs)
