"""StableHLO lowering of the shape family (`ir/ops/shape.py`): constants, iota and the ops
that move data without arithmetic. Each maps onto the `stablehlo` op of the same name."""

from __future__ import annotations

from purejit.backend.lowering._util import dense, emit_op, i64_array, lowering


@lowering("constant")
def _constant(ctx, op, args):
    return emit_op(ctx, op, args, "stablehlo.constant", f"value = {dense(op.attrs['value'])}")


@lowering("iota")
def _iota(ctx, op, args):
    return emit_op(
        ctx, op, args, "stablehlo.iota", f"iota_dimension = {op.attrs['dimension']} : i64"
    )


@lowering("broadcast_in_dim")
def _bcast(ctx, op, args):
    dims = i64_array(op.attrs["broadcast_dimensions"])
    return emit_op(ctx, op, args, "stablehlo.broadcast_in_dim", f"broadcast_dimensions = {dims}")


@lowering("reshape")
def _reshape(ctx, op, args):
    return emit_op(ctx, op, args, "stablehlo.reshape")


@lowering("transpose")
def _transpose(ctx, op, args):
    perm = i64_array(op.attrs["permutation"])
    return emit_op(ctx, op, args, "stablehlo.transpose", f"permutation = {perm}")


@lowering("slice")
def _slice(ctx, op, args):
    a = op.attrs
    attrs = (
        f"start_indices = {i64_array(a['start_indices'])}, "
        f"limit_indices = {i64_array(a['limit_indices'])}, strides = {i64_array(a['strides'])}"
    )
    return emit_op(ctx, op, args, "stablehlo.slice", attrs)


@lowering("concatenate")
def _concat(ctx, op, args):
    return emit_op(
        ctx, op, args, "stablehlo.concatenate", f"dimension = {op.attrs['dimension']} : i64"
    )


@lowering("pad")
def _pad(ctx, op, args):
    a = op.attrs
    attrs = (
        f"edge_padding_low = {i64_array(a['edge_padding_low'])}, "
        f"edge_padding_high = {i64_array(a['edge_padding_high'])}, "
        f"interior_padding = {i64_array(a['interior_padding'])}"
    )
    return emit_op(ctx, op, args, "stablehlo.pad", attrs)


@lowering("reverse")
def _reverse(ctx, op, args):
    return emit_op(
        ctx, op, args, "stablehlo.reverse", f"dimensions = {i64_array(op.attrs['dimensions'])}"
    )
