"""StableHLO lowering of the contraction family (`ir/ops/contraction.py`): `dot_general`,
whose dimension lists become `#stablehlo.dot<...>` (empty lists omitted, as MLIR prints them)
and whose optional dot algorithm becomes `#stablehlo.dot_algorithm<...>`.
"""

from __future__ import annotations

from purejit.backend.lowering._lapack_ffi import platform
from purejit.backend.lowering._util import dim_fields, emit_op, lowering
from purejit.backend.lowering.conv import precision_config
from purejit.ir.ops.contraction import DOT_ATTRS


# the dot algorithms XLA's CPU backend runs, as (lhs, rhs, accumulation, counts, imprecise):
# the presets F16_F16_F16, F32_F32_F32, F64_F64_F64, BF16_BF16_F32 and its _X3 / _X6 forms
CPU_ALGORITHMS = frozenset(
    [(t, t, t, 1, 1, 1, False) for t in ("f16", "f32", "f64")]
    + [("bf16", "bf16", "f32", 1, 1, n, False) for n in (1, 3, 6)]
)


def _preset_name(alg) -> str:
    lhs, rhs, acc, lcc, rcc, ops, imprecise = alg
    if (lcc, rcc, imprecise) == (1, 1, False):
        name = "_".join(t.upper() for t in (lhs, rhs, acc)) + (f"_X{ops}" if ops > 1 else "")
        return f"'{name}'"
    return f"algorithm {tuple(alg)}"


@lowering("dot_general")
def _dot_general(ctx, op, args):
    attrs = f"dot_dimension_numbers = #stablehlo.dot<{dim_fields(op.attrs, DOT_ATTRS)}>"
    prec = precision_config(op.attrs.get("precision"))
    if prec:
        attrs += f", {prec}"
    alg = op.attrs.get("algorithm")
    if alg is not None:
        if platform(ctx) == "cpu" and tuple(alg) not in CPU_ALGORITHMS:
            raise ValueError(
                f"The precision {_preset_name(alg)} is not supported by dot_general on CPU "
                "(XLA's CPU backend would ignore it); CPU runs the presets DEFAULT, "
                "F16_F16_F16, F32_F32_F32, F64_F64_F64, BF16_BF16_F32, BF16_BF16_F32_X3 and "
                "BF16_BF16_F32_X6"
            )
        lhs, rhs, acc, lcc, rcc, ops, imprecise = alg
        attrs += (
            f", algorithm = #stablehlo.dot_algorithm<lhs_precision_type = {lhs}, "
            f"rhs_precision_type = {rhs}, accumulation_type = {acc}, "
            f"lhs_component_count = {lcc}, rhs_component_count = {rcc}, "
            f"num_primitive_operations = {ops}, "
            f"allow_imprecise_accumulation = {str(imprecise).lower()}>"
        )
    return emit_op(ctx, op, args, "stablehlo.dot_general", attrs)
