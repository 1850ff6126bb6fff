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
from purejit.ir.ops.powers import square_and_multiply


@lowering("integer_pow")
def _integer_pow(ctx, op, args):
    t = op.results[0].type

    def mul(a, b):
        return ctx.op("stablehlo.multiply", [a, b], [t, t], [t])[0]

    def div(a, b):
        return ctx.op("stablehlo.divide", [a, b], [t, t], [t])[0]

    def ones_like(_):
        scalar = TensorType((), t.dtype)
        (one,) = ctx.op(
            "stablehlo.constant", [], [], [scalar], f"value = {dense(np.ones((), t.dtype))}"
        )
        if not t.shape:
            return one
        attrs = "broadcast_dimensions = array<i64>"
        return ctx.op("stablehlo.broadcast_in_dim", [one], [scalar], [t], attrs)[0]

    return [square_and_multiply(args[0], op.attrs["y"], mul, ones_like, div)]


@lowering("square")
def _square(ctx, op, args):
    if dtypes.is_integer(op.results[0].type.dtype):
        t = op.results[0].type
        return ctx.op("stablehlo.multiply", [args[0], args[0]], [t, t], [t])
    return emit_op(ctx, op, args, "chlo.square")
