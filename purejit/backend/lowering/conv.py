"""StableHLO lowering of the conv family (`ir/ops/conv.py`): `convolution`, whose dimension
numbers become `#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`.

A complex convolution is emitted as three real ones (Gauss's product), as JAX lowers it on
CPU and GPU: XLA's GPU backend has no complex convolution, and its CPU one is a slow loop.
The IR keeps one complex `convolution`, so derivatives, batching and the reference
interpreter see the op itself; only its StableHLO form is split.
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._util import emit_op, i64_array, lowering
from purejit.ir import TensorType, dtypes


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


def _conv_fields(op) -> str:
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
    return ", ".join(fields)


@lowering("convolution")
def _convolution(ctx, op, args):
    if dtypes.is_complex(op.operands[0].type.dtype):
        return _complex_convolution(ctx, op, args)
    return emit_op(ctx, op, args, "stablehlo.convolution", _conv_fields(op))


def _real_type(t: TensorType) -> TensorType:
    return TensorType(t.shape, np.float32 if t.dtype == np.complex64 else np.float64)


def _complex_convolution(ctx, op, args):
    """x = a + ib, w = c + id: k1 = conv(a + b, c), k2 = conv(a, d - c), k3 = conv(b, c + d);
    x * w = (k1 - k3) + i (k1 + k2), in JAX's order of operations so the bits agree."""
    out_t = op.results[0].type
    if not dtypes.is_complex(out_t.dtype):
        raise NotImplementedError(
            f"convolution: complex operands {op.operands[0].type} with a real result {out_t} "
            "(preferred_element_type must be complex for complex operands, as in JAX)"
        )
    lt, rt = (v.type for v in op.operands)
    lr, rr, outr = _real_type(lt), _real_type(rt), _real_type(out_t)
    fields = _conv_fields(op)

    def unary(name, v, t, rt):
        return ctx.op(f"stablehlo.{name}", [v], [t], [rt])[0]

    def binary(name, u, v, t):
        return ctx.op(f"stablehlo.{name}", [u, v], [t, t], [t])[0]

    def conv(u, v):
        return ctx.op("stablehlo.convolution", [u, v], [lr, rr], [outr], fields)[0]

    a, b = unary("real", args[0], lt, lr), unary("imag", args[0], lt, lr)
    c, d = unary("real", args[1], rt, rr), unary("imag", args[1], rt, rr)
    k1 = conv(binary("add", a, b, lr), c)
    k2 = conv(a, binary("subtract", d, c, rr))
    k3 = conv(b, binary("add", c, d, rr))
    re, im = binary("subtract", k1, k3, outr), binary("add", k1, k2, outr)
    return ctx.op("stablehlo.complex", [re, im], [outr, outr], [out_t])
