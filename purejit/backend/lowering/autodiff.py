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


@lowering("custom_jvp_call", "custom_vjp_call", "checkpoint")
def _region_call(ctx, op, args):
    # the function itself; its custom rules only matter to differentiation
    return ctx.inline(op.regions[0], list(args))


@lowering("checkpoint_name")
def _checkpoint_name(ctx, op, args):
    return [args[0]]


@lowering("custom_lin")
def _custom_lin(ctx, op, args):
    raise NotImplementedError(
        "custom_lin (the linear map of a custom_vjp function) cannot be run, only transposed: "
        "forward-mode differentiation (jvp, linearize) of a custom_vjp function is not "
        "supported, as in JAX"
    )
