"""StableHLO lowering of the contraction family (`ir/ops/contraction.py`): `dot_general`,
whose dimension lists become `#stablehlo.dot<...>` (empty lists omitted, as MLIR prints them).
"""

from __future__ import annotations

from purejit.backend.lowering._util import dim_fields, emit_op, lowering
from purejit.backend.lowering.conv import precision_config
from purejit.ir.ops.contraction import DOT_ATTRS


@lowering("dot_general")
def _dot_general(ctx, op, args):
    attrs = f"dot_dimension_numbers = #stablehlo.dot<{dim_fields(op.attrs, DOT_ATTRS)}>"
    prec = precision_config(op.attrs.get("precision"))
    if prec:
        attrs += f", {prec}"
    return emit_op(ctx, op, args, "stablehlo.dot_general", attrs)
