"""StableHLO lowering of the gather family (`ir/ops/gather.py`): `gather` and `scatter`,
whose dimension numbers become `#stablehlo.gather<...>` / `#stablehlo.scatter<...>`."""

from __future__ import annotations

from purejit.backend.lowering._util import dim_fields, emit_op, flag, i64_array, lowering


@lowering("gather")
def _gather(ctx, op, args):
    a = op.attrs
    fields = dim_fields(a, ("offset_dims", "collapsed_slice_dims", "start_index_map"))
    sep = ", " if fields else ""
    attrs = (
        f"dimension_numbers = #stablehlo.gather<{fields}{sep}"
        f"index_vector_dim = {a['index_vector_dim']}>, "
        f"indices_are_sorted = {flag(a.get('indices_are_sorted', False))}, "
        f"slice_sizes = {i64_array(a['slice_sizes'])}"
    )
    return emit_op(ctx, op, args, "stablehlo.gather", attrs)


@lowering("scatter")
def _scatter(ctx, op, args):
    a = op.attrs
    fields = dim_fields(
        a, ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims")
    )
    sep = ", " if fields else ""
    attrs = (
        f"scatter_dimension_numbers = #stablehlo.scatter<{fields}{sep}"
        f"index_vector_dim = {a['index_vector_dim']}>, "
        f"indices_are_sorted = {flag(a.get('indices_are_sorted', False))}, "
        f"unique_indices = {flag(a.get('unique_indices', False))}"
    )
    region = ctx.region(op.regions[0])
    return emit_op(ctx, op, args, "stablehlo.scatter", attrs, [region])
