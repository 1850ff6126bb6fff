"""StableHLO lowering of the control family (`ir/ops/control.py`): `case`, `while`, `scan`.

IR regions are closed functions whose captured values are explicit operands; StableHLO's
`case` branches take no block arguments and `while` regions take only the carry, so the
remaining region parameters are bound to the outer SSA names (XLA turns those implicit
captures into operands of the HLO conditional / while when it imports the module).

A `scan` becomes one `stablehlo.while` over a step counter carrying (step, carry...,
ys buffers...); consts and xs are read from the enclosing scope. A step slices row `idx` of
every xs with `dynamic_slice`, runs the body, and writes row `idx` of every ys buffer with
`dynamic_update_slice` (`idx` is the step, or `length - 1 - step` for a reverse scan). One
loop trip runs `unroll` steps; the `length % unroll` steps left over run after the loop,
straight-line with constant indices, so a scan never needs a second loop.
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._util import dense, i64_array, lowering
from purejit.ir import Function, TensorType
from purejit.ir.ops.control import scan_split


@lowering("case")
def _case(ctx, op, args):
    branches = [ctx.region(r, block_args=0, outer=args[1:]) for r in op.regions]
    types = [r.type for r in op.results]
    return ctx.op("stablehlo.case", args[:1], [op.operands[0].type], types, "", branches)


@lowering("while")
def _while(ctx, op, args):
    n = len(op.results)
    cond, body = (ctx.region(r, block_args=n, outer=args[n:]) for r in op.regions)
    types = [r.type for r in op.results]
    return ctx.op("stablehlo.while", args[:n], types, types, "", [cond, body])


_S32 = TensorType((), np.int32)
_PRED = TensorType((), np.bool_)


def _const(ctx, value) -> str:
    value = np.asarray(value)
    t = TensorType(value.shape, value.dtype)
    return ctx.op("stablehlo.constant", [], [], [t], f"value = {dense(value)}")[0]


def _zeros(ctx, t: TensorType) -> str:
    """A zero-filled buffer of type `t` (the ys rows no step has written yet)."""
    scalar = _const(ctx, np.zeros((), t.dtype))
    scalar_t = TensorType((), t.dtype)
    attrs = f"broadcast_dimensions = {i64_array(())}"
    return ctx.op("stablehlo.broadcast_in_dim", [scalar], [scalar_t], [t], attrs)[0]


def _step(ctx, body: Function, consts, carry, xs, x_types, ys, y_types, idx: str, zero: str):
    """Emit one scan step at row `idx` (`zero` names an s32 0 for the other dimensions);
    returns the new carry and ys buffers (MLIR names)."""
    slices = []
    for x, t in zip(xs, x_types):
        row_t = TensorType((1, *t.shape[1:]), t.dtype)
        attrs = f"slice_sizes = {i64_array(row_t.shape)}"
        operands = [x, idx] + [zero] * (t.rank - 1)
        (row,) = ctx.op("stablehlo.dynamic_slice", operands, [t] + [_S32] * t.rank, [row_t], attrs)
        slice_t = TensorType(t.shape[1:], t.dtype)
        slices.append(ctx.op("stablehlo.reshape", [row], [row_t], [slice_t])[0])
    outs = ctx.inline(body, [*consts, *carry, *slices])
    ncarry = len(carry)
    new_ys = []
    for buf, y, t in zip(ys, outs[ncarry:], y_types):
        y_t = TensorType(t.shape[1:], t.dtype)
        row_t = TensorType((1, *y_t.shape), t.dtype)
        (row,) = ctx.op("stablehlo.reshape", [y], [y_t], [row_t])
        operands = [buf, row, idx] + [zero] * y_t.rank
        types = [t, row_t] + [_S32] * t.rank
        new_ys.append(ctx.op("stablehlo.dynamic_update_slice", operands, types, [t])[0])
    return outs[:ncarry], new_ys


@lowering("scan")
def _scan(ctx, op, args):
    attrs = op.attrs
    (body,) = op.regions
    length, reverse = int(attrs["length"]), bool(attrs.get("reverse", False))
    unroll = max(int(attrs.get("unroll", 1)), 1)
    consts, carry, xs = scan_split(attrs, args)
    _, carry_t, x_types = scan_split(attrs, [v.type for v in op.operands])
    ncarry = len(carry)
    y_types = [r.type for r in op.results[ncarry:]]
    ys = [_zeros(ctx, t) for t in y_types]

    trips, rem = divmod(length, unroll)
    if trips:
        state_t = [_S32, *carry_t, *y_types]
        stop = trips * unroll

        def cond(names):
            attrs = (
                "comparison_direction = #stablehlo<comparison_direction LT>, "
                "compare_type = #stablehlo<comparison_type SIGNED>"
            )
            limit = _const(ctx, np.int32(stop))
            pred = ctx.op("stablehlo.compare", [names[0], limit], [_S32, _S32], [_PRED], attrs)
            return pred, [_PRED]

        def loop_body(names):
            step, c, bufs = names[0], names[1 : 1 + ncarry], names[1 + ncarry :]
            zero, one = _const(ctx, np.int32(0)), _const(ctx, np.int32(1))
            last = _const(ctx, np.int32(length - 1)) if reverse else None
            for _ in range(unroll):
                idx = step
                if reverse:  # row length - 1 - step
                    (idx,) = ctx.op("stablehlo.subtract", [last, step], [_S32, _S32], [_S32])
                c, bufs = _step(ctx, body, consts, c, xs, x_types, bufs, y_types, idx, zero)
                (step,) = ctx.op("stablehlo.add", [step, one], [_S32, _S32], [_S32])
            return [step, *c, *bufs], state_t

        regions = [ctx.built_region(state_t, cond), ctx.built_region(state_t, loop_body)]
        init = [_const(ctx, np.int32(0)), *carry, *ys]
        state = ctx.op("stablehlo.while", init, state_t, state_t, "", regions)
        carry, ys = state[1 : 1 + ncarry], state[1 + ncarry :]
    zero = _const(ctx, np.int32(0)) if rem else None
    for s in range(trips * unroll, length):
        idx = _const(ctx, np.int32(length - 1 - s if reverse else s))
        carry, ys = _step(ctx, body, consts, carry, xs, x_types, ys, y_types, idx, zero)
    return [*carry, *ys]
