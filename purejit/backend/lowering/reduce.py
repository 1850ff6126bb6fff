"""StableHLO lowering of the reduce family (`ir/ops/reduce.py`): `reduce`, whose body
becomes the region of `stablehlo.reduce`."""

from __future__ import annotations

from purejit.backend.lowering._util import emit_op, i64_array, lowering


@lowering("reduce")
def _reduce(ctx, op, args):
    region = ctx.region(op.regions[0])
    attrs = f"dimensions = {i64_array(op.attrs['dimensions'])}"
    return emit_op(ctx, op, args, "stablehlo.reduce", attrs, [region])
