"""StableHLO lowering of the conv family (`ir/ops/conv.py`): `convolution`, whose dimension
numbers become `#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`."""

from __future__ import annotations

from purejit.backend.lowering._util import emit_op, i64_array, lowering


def _spec(rank: int, first: int, first_char: str, second: int, second_char: str, spatial):
    chars = [""] * rank
    chars[first], chars[second] = first_char, second_char
    for i, d in enumerate(spatial):
        chars[d] = str(i)
    return "[" + ", ".join(chars) + "]"


def precision_config(precision) -> str:
    """`precision_config = [...]` for a pair of precision names (empty text for None)."""
    if precision is None:
        return ""
    inner = ", ".join(f"#stablehlo<precision {p}>" for p in precision)
    return f"precision_config = [{inner}]"


@lowering("convolution")
def _convolution(ctx, op, args):
    a = op.attrs
    rank = op.operands[0].type.rank
    lhs = _spec(
        rank,
        a["input_batch_dimension"],
        "b",
        a["input_feature_dimension"],
        "f",
        a["input_spatial_dimensions"],
    )
    rhs = _spec(
        rank,
        a["kernel_input_feature_dimension"],
        "i",
        a["kernel_output_feature_dimension"],
        "o",
        a["kernel_spatial_dimensions"],
    )
    out = _spec(
        rank,
        a["output_batch_dimension"],
        "b",
        a["output_feature_dimension"],
        "f",
        a["output_spatial_dimensions"],
    )
    pads = ", ".join(f"[{lo}, {hi}]" for lo, hi in a["padding"])
    n = len(a["padding"])
    pad_text = f"dense<[{pads}]> : tensor<{n}x2xi64>" if n else "dense<> : tensor<0x2xi64>"
    fields = [
        f"batch_group_count = {a['batch_group_count']} : i64",
        f"dimension_numbers = #stablehlo.conv<{lhs}x{rhs}->{out}>",
        f"feature_group_count = {a['feature_group_count']} : i64",
        f"lhs_dilation = {i64_array(a['lhs_dilation'])}",
        f"padding = {pad_text}",
        f"rhs_dilation = {i64_array(a['rhs_dilation'])}",
        f"window_strides = {i64_array(a['window_strides'])}",
    ]
    prec = precision_config(a.get("precision"))
    if prec:
        fields.append(prec)
    return emit_op(ctx, op, args, "stablehlo.convolution", ", ".join(fields))
