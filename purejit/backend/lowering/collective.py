"""StableHLO lowering of the collective family (`ir/ops/collective.py`): collectives and
SPMD regions (Shardy `sdy.manual_computation`).

Devices are partition ids; groups use global device ids (`use_global_device_ids`), as JAX
emits them under shard_map. A program with a `manual_computation` declares one Shardy mesh
`@mesh`; its body is emitted inside `sdy.manual_computation` with every mesh axis manual.
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._util import dense, emit_op, i64_array, lowering, mlir_type
from purejit.backend.shardy import declare_mesh, sdy_dims
from purejit.ir import Builder, TensorType


def _channel(ctx) -> str:
    ctx.channel_id = getattr(ctx, "channel_id", 0) + 1
    return f"channel_handle = #stablehlo.channel_handle<handle = {ctx.channel_id}, type = 1>"


def _i64_matrix(rows) -> str:
    rows = [list(r) for r in rows]
    body = "[" + ", ".join("[" + ", ".join(map(str, r)) + "]" for r in rows) + "]"
    return f"dense<{body}> : tensor<{len(rows)}x{len(rows[0]) if rows else 0}xi64>"


def _groups_attr(op) -> str:
    return f"replica_groups = {_i64_matrix(op.attrs['replica_groups'])}"


def _reducer_region(ctx, computation: str, dtype) -> str:
    """The region `(x, y) -> computation(x, y)` over scalars of `dtype`."""
    b = Builder("reducer")
    x, y = b.param(TensorType((), dtype)), b.param(TensorType((), dtype))
    (z,) = b.op(computation, [x, y])
    return ctx.region(b.finish([z]))


@lowering("all_reduce")
def _all_reduce(ctx, op, args):
    region = _reducer_region(ctx, op.attrs["computation"], op.operands[0].type.dtype)
    attrs = f"{_channel(ctx)}, {_groups_attr(op)}, use_global_device_ids"
    return emit_op(ctx, op, args, "stablehlo.all_reduce", attrs, [region])


@lowering("reduce_scatter")
def _reduce_scatter(ctx, op, args):
    region = _reducer_region(ctx, op.attrs["computation"], op.operands[0].type.dtype)
    attrs = (
        f"{_channel(ctx)}, {_groups_attr(op)}, "
        f"scatter_dimension = {op.attrs['scatter_dimension']} : i64, use_global_device_ids"
    )
    return emit_op(ctx, op, args, "stablehlo.reduce_scatter", attrs, [region])


@lowering("all_gather")
def _all_gather(ctx, op, args):
    attrs = (
        f"all_gather_dim = {op.attrs['all_gather_dim']} : i64, {_channel(ctx)}, "
        f"{_groups_attr(op)}, use_global_device_ids"
    )
    return emit_op(ctx, op, args, "stablehlo.all_gather", attrs)


@lowering("collective_permute")
def _collective_permute(ctx, op, args):
    pairs = op.attrs["source_target_pairs"]
    if not pairs:  # nothing is sent: every device receives zeros
        zero = np.zeros((), op.results[0].type.dtype)
        scalar = TensorType((), zero.dtype)
        (z,) = ctx.op("stablehlo.constant", [], [], [scalar], f"value = {dense(zero)}")
        return ctx.op(
            "stablehlo.broadcast_in_dim",
            [z],
            [scalar],
            [op.results[0].type],
            f"broadcast_dimensions = {i64_array([])}",
        )
    attrs = f"{_channel(ctx)}, source_target_pairs = {_i64_matrix(pairs)}"
    return emit_op(ctx, op, args, "stablehlo.collective_permute", attrs)


@lowering("all_to_all")
def _all_to_all(ctx, op, args):
    a = op.attrs
    attrs = (
        f"{_channel(ctx)}, concat_dimension = {a['concat_dimension']} : i64, "
        f"{_groups_attr(op)}, split_count = {a['split_count']} : i64, "
        f"split_dimension = {a['split_dimension']} : i64"
    )
    return emit_op(ctx, op, args, "stablehlo.all_to_all", attrs)


@lowering("partition_id")
def _partition_id(ctx, op, args):
    return emit_op(ctx, op, args, "stablehlo.partition_id")


@lowering("pvary")
def _pvary(ctx, op, args):  # a typing mark for differentiation: nothing runs
    return [args[0]]


@lowering("sharding_constraint")
def _sharding_constraint(ctx, op, args):
    # the program is partitioned over this mesh (compiler/spmd.plan_layout sees the op)
    a = op.attrs
    declare_mesh(ctx, a["axis_names"], a["mesh_shape"])
    res = ctx.fresh()
    t = mlir_type(op.results[0].type)
    spec = sdy_dims(a["spec"])
    ctx.lines.append(f"{ctx.indent}{res} = sdy.sharding_constraint {args[0]} {spec} : {t}")
    return [res]


@lowering("manual_computation")
def _manual_computation(ctx, op, args):
    # printed in Shardy's custom form: the body's block arguments follow the shardings
    a = op.attrs
    declare_mesh(ctx, a["axis_names"], a["mesh_shape"])
    # the body runs per device over manual axes: cuDNN's attention call may be emitted there
    # even in a partitioned program (`cudnn_fmha.enabled`)
    ctx.manual_depth = getattr(ctx, "manual_depth", 0) + 1
    try:
        params, inner = ctx.body(op.regions[0], terminator="sdy.return")
    finally:
        ctx.manual_depth -= 1
    n = len(op.results)
    res = ctx.fresh()
    head = f"{res}:{n} = " if n > 1 else (f"{res} = " if n == 1 else "")
    ins = ", ".join(sdy_dims(s) for s in a["in_specs"])
    outs = ", ".join(sdy_dims(s) for s in a["out_specs"])
    manual = ", ".join(f'"{x}"' for x in a["axis_names"])
    in_t = ", ".join(mlir_type(v.type) for v in op.operands)
    out_t = ", ".join(mlir_type(v.type) for v in op.results)
    ctx.lines.append(
        f"{ctx.indent}{head}sdy.manual_computation({', '.join(args)}) in_shardings=[{ins}] "
        f"out_shardings=[{outs}] manual_axes={{{manual}}} ({', '.join(params)}) {{"
    )
    ctx.lines.extend(inner)
    ctx.lines.append(f"{ctx.indent}}} : ({in_t}) -> ({out_t})")
    return [f"{res}#{i}" for i in range(n)] if n > 1 else [res][:n]
