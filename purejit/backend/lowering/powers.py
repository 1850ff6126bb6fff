"""StableHLO lowering of the powers family (`ir/ops/powers.py`).

`integer_pow` becomes the multiplies JAX emits for it (`square_and_multiply`, shared with the
reference interpreter), so XLA sees the program JAX gives it; `square` is `chlo.square`
(XLA expands it to x*x, or CHLO's complex form), or a multiply for integers, as JAX lowers
its `square` primitive. `power` of integers is spelled out as the op's reference computes it
(`ir/ops/elementwise.py`): XLA's own integer power read the exponent's low 6 bits up to
jaxlib 0.11 and reads all of them from 0.12, so `stablehlo.power` would give the same
program two meanings.
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


# the exponent bits XLA's integer power read up to jaxlib 0.11, which the op's reference keeps
_POWER_BITS = 6


@lowering("power")
def _power(ctx, op, args):
    t = op.results[0].type
    if t.dtype.kind not in "iu":
        return emit_op(ctx, op, args, "stablehlo.power")
    st = TensorType(t.shape, np.dtype(f"int{8 * t.dtype.itemsize}"))
    pt = TensorType(t.shape, np.dtype(bool))

    def ew(name, *xs, ty=t, attrs=""):
        return ctx.op(f"stablehlo.{name}", list(xs), [ty] * len(xs), [ty], attrs)[0]

    def eq(x, y, ty=st, direction="EQ"):
        kind = "SIGNED" if ty.dtype.kind == "i" else "UNSIGNED"
        attrs = (
            f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
            f"compare_type = #stablehlo<comparison_type {kind}>"
        )
        return ctx.op("stablehlo.compare", [x, y], [ty, ty], [pt], attrs)[0]

    def select(c, x, y, ty):
        return ctx.op("stablehlo.select", [c, x, y], [pt, ty, ty], [ty])[0]

    def signed(x):  # the same bits as a signed integer
        if t.dtype.kind == "i":
            return x
        return ctx.op("stablehlo.bitcast_convert", [x], [t], [st])[0]

    base, e = args
    one = _splat(ctx, 1, t)
    acc, odd0 = one, None
    for _ in range(_POWER_BITS):  # square and multiply over the exponent's low bits
        odd = eq(ew("and", e, one), one, ty=t)
        odd0 = odd if odd0 is None else odd0
        acc = select(odd, ew("multiply", acc, base), acc, t)
        base = ew("multiply", base, base)
        e = ew("shift_right_logical", e, one)
    # a negative exponent (its bits read as signed): 1 for a base of 1, +-1 for -1, else 0
    sa = signed(args[0])
    s1, s0, sm1 = (_splat(ctx, v, st) for v in (1, 0, -1))
    minus = select(odd0, sm1, s1, st)
    small = select(eq(sa, s1), s1, select(eq(sa, sm1), minus, s0, st), st)
    if t.dtype.kind == "u":
        small = ctx.op("stablehlo.bitcast_convert", [small], [st], [t])[0]
    return [select(eq(signed(args[1]), s0, direction="LT"), small, acc, t)]


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
