"""StableHLO lowering of the indexing family (`ir/ops/indexing.py`): slices at run-time
offsets, which map onto `stablehlo.dynamic_slice` and `stablehlo.dynamic_update_slice`."""

from __future__ import annotations

from purejit.backend.lowering._util import emit_op, i64_array, lowering


@lowering("dynamic_slice")
def _dynamic_slice(ctx, op, args):
    attrs = f"slice_sizes = {i64_array(op.attrs['slice_sizes'])}"
    return emit_op(ctx, op, args, "stablehlo.dynamic_slice", attrs)


@lowering("dynamic_update_slice")
def _dynamic_update_slice(ctx, op, args):
    return emit_op(ctx, op, args, "stablehlo.dynamic_update_slice")
