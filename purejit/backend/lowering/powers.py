"""StableHLO lowering of the powers family (`ir/ops/powers.py`).

`integer_pow` becomes the multiplies JAX emits for it (`square_and_multiply`, shared with the
reference interpreter), so XLA sees the program JAX gives it; `square` is `chlo.square`
(XLA expands it to x*x, or CHLO's complex form), or a multiply for integers, as JAX lowers
its `square` primitive.
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._util import dense, emit_op, lowering
from purejit.ir import TensorType, dtypes
from purejit.ir.ops.powers import ONE_OVER_LN2, square_and_multiply


def _splat(ctx, value, t: TensorType) -> str:
    """`value` in `t`'s dtype, broadcast to `t`'s shape (a scalar constant and its
    `broadcast_in_dim`, as JAX's lowerings emit a constant operand)."""
    scalar = TensorType((), t.dtype)
    (c,) = ctx.op(
        "stablehlo.constant", [], [], [scalar], f"value = {dense(np.array(value, t.dtype))}"
    )
    if not t.shape:
        return c
    attrs = "broadcast_dimensions = array<i64>"
    return ctx.op("stablehlo.broadcast_in_dim", [c], [scalar], [t], attrs)[0]


@lowering("integer_pow")
def _integer_pow(ctx, op, args):
    t = op.results[0].type

    def mul(a, b):
        return ctx.op("stablehlo.multiply", [a, b], [t, t], [t])[0]

    def div(a, b):
        return ctx.op("stablehlo.divide", [a, b], [t, t], [t])[0]

    def ones_like(_):
        return _splat(ctx, 1, t)

    return [square_and_multiply(args[0], op.attrs["y"], mul, ones_like, div)]


@lowering("square")
def _square(ctx, op, args):
    if dtypes.is_integer(op.results[0].type.dtype):
        t = op.results[0].type
        return ctx.op("stablehlo.multiply", [args[0], args[0]], [t, t], [t])
    return emit_op(ctx, op, args, "chlo.square")


@lowering("one_minus_square")
def _one_minus_square(ctx, op, args):
    # JAX lowers its primitive as mul(add(1, x), sub(1, x)), in that order
    t = op.results[0].type
    (x,) = args
    plus = ctx.op("stablehlo.add", [_splat(ctx, 1, t), x], [t, t], [t])[0]
    minus = ctx.op("stablehlo.subtract", [_splat(ctx, 1, t), x], [t, t], [t])[0]
    return ctx.op("stablehlo.multiply", [plus, minus], [t, t], [t])


@lowering("log2")
def _log2(ctx, op, args):
    # JAX: log(x) times 1/ln 2 (the double rounded to the dtype); complex: both parts
    t = op.results[0].type
    (log_x,) = ctx.op("stablehlo.log", args, [t], [t])
    if not dtypes.is_complex(t.dtype):
        return ctx.op("stablehlo.multiply", [log_x, _splat(ctx, ONE_OVER_LN2, t)], [t, t], [t])
    rt = TensorType(t.shape, np.dtype(np.finfo(t.dtype).dtype))
    re = ctx.op("stablehlo.real", [log_x], [t], [rt])[0]
    im = ctx.op("stablehlo.imag", [log_x], [t], [rt])[0]
    c = _splat(ctx, ONE_OVER_LN2, rt)
    re = ctx.op("stablehlo.multiply", [re, c], [rt, rt], [rt])[0]
    im = ctx.op("stablehlo.multiply", [im, c], [rt, rt], [rt])[0]
    return ctx.op("stablehlo.complex", [re, im], [rt, rt], [t])
