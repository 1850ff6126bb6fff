"""StableHLO lowering of the sort family (`ir/ops/sort.py`): `sort` and `reduce_window`
with their comparator / reducer regions, and `top_k` through `chlo.top_k`."""

from __future__ import annotations

from purejit.backend.lowering._util import emit_op, flag, i64_array, lowering


@lowering("sort")
def _sort(ctx, op, args):
    attrs = (
        f"dimension = {op.attrs['dimension']} : i64, "
        f"is_stable = {flag(op.attrs.get('is_stable', False))}"
    )
    return emit_op(ctx, op, args, "stablehlo.sort", attrs, [ctx.region(op.regions[0])])


@lowering("top_k")
def _top_k(ctx, op, args):
    return emit_op(ctx, op, args, "chlo.top_k", f"k = {op.attrs['k']} : i64")


@lowering("reduce_window")
def _reduce_window(ctx, op, args):
    a = op.attrs
    pads = ", ".join(f"[{lo}, {hi}]" for lo, hi in a["padding"])
    attrs = ", ".join(
        [f"{k} = {i64_array(a[k])}" for k in
         ("window_dimensions", "window_strides", "base_dilations", "window_dilations")]
        + [f"padding = dense<[{pads}]> : tensor<{len(a['padding'])}x2xi64>"]
    )  # fmt: skip
    return emit_op(ctx, op, args, "stablehlo.reduce_window", attrs, [ctx.region(op.regions[0])])
