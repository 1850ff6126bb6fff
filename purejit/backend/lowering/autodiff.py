"""StableHLO lowering of the autodiff family (`ir/ops/autodiff.py`)."""

from __future__ import annotations

from purejit.backend.lowering._util import lowering


@lowering("stop_gradient")
def _stop_gradient(ctx, op, args):
    return [args[0]]


@lowering("optimization_barrier")
def _optimization_barrier(ctx, op, args):
    if not args:
        return []
    types = [v.type for v in op.operands]
    return ctx.op("stablehlo.optimization_barrier", list(args), types, types)
