"""Collective ops and manual SPMD computations.

Devices are named by partition id (`0..N-1`, the row-major position in the mesh).

    all_reduce(x) {replica_groups, computation}            reduce over each group, everywhere
    all_gather(x) {replica_groups, all_gather_dim}         concatenate the group's values
    reduce_scatter(x) {replica_groups, scatter_dimension, computation}
    collective_permute(x) {source_target_pairs}            send to targets; others get zeros
    all_to_all(x) {replica_groups, split_dimension, concat_dimension, split_count}
    partition_id() -> u32[]                                this device's partition id
    pvary(x) {axes, replica_groups}                        x, now typed varying over `axes`
    manual_computation(xs...) {axis_names, mesh_shape, device_ids, in_specs, out_specs}
        region(local xs...) -> local ys...                 shard_map's per-device body

`computation` is the name of the binary op that reduces (`add`, `multiply`, `maximum`,
`minimum`, `and`, `or`). Collectives have the `collective` trait (never removed or merged by
DCE/CSE); they and `partition_id` have the `per_device` trait: their reference rules take
values with a leading device axis when run by `purejit.ir.spmd.interpret_spmd`. Under the
plain interpreter, a program is one device (partition 0 of 1). `manual_computation`'s
reference splits its operands over the mesh, runs the body with `interpret_spmd` and joins
the results, so whole programs with shard_map run in `interpret`.

Under shard_map's `check_vma` typing (`purejit.ir.vma`) collectives bound by `purejit.lax`
carry `axes` (the mesh axes they communicate over); an `all_reduce` with `invariant=True` is
JAX's `psum_invariant` (a varying operand, an invariant result: its transpose is `pvary`),
one without it is the untyped psum (its transpose is a psum). `pvary` is the identity that
marks its result as varying over `axes` (its transpose sums over them); `partition_id`'s
`axes` are the mesh axes `axis_index` reads from it. `manual_computation {check_vma}` says
whether its body is so typed.
"""

from __future__ import annotations

import numpy as np
from purejit.ir import dtypes, spmd
from purejit.ir.core import TensorType
from purejit.ir.interpreter import InterpretError
from purejit.ir.ops._util import compute_dtype, nargs
from purejit.ir.registry import OpDef, fail, register

_COLLECTIVE = frozenset({"collective", "per_device"})

REDUCTIONS = {
    "add": np.add,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
}


def _groups(op, attrs):
    try:
        return spmd.check_groups(op, attrs["replica_groups"])
    except spmd.SpmdError as e:
        fail(op, str(e).split(": ", 1)[-1])


def _check_computation(op, attrs, t: TensorType):
    c = attrs["computation"]
    if c not in REDUCTIONS:
        fail(op, f"computation {c!r} is not one of {sorted(REDUCTIONS)}")
    if c in ("and", "or") and not (dtypes.is_integer(t.dtype) or t.dtype == np.bool_):
        fail(op, f"computation {c!r} needs an integer or bool operand, got {t}")
    if c not in ("and", "or") and t.dtype == np.bool_:
        fail(op, f"computation {c!r} does not accept {t}")


def _check_dim(op, name, d, t: TensorType):
    if not 0 <= int(d) < t.rank:
        fail(op, f"{name}={d} out of range for {t}")
    return int(d)


def _stacked(op, args, run, attrs):
    """Operands with a leading device axis, the device count, and whether to unstack."""
    if getattr(run, "spmd", False):
        return [np.asarray(a) for a in args], run.num_devices, False
    return [np.asarray(a)[None] for a in args], 1, True


def _cover(op, groups, n):
    try:
        return spmd.check_groups(op, groups, n)
    except spmd.SpmdError as e:
        hint = "" if n > 1 else " (collectives run under interpret_spmd or a manual_computation)"
        raise InterpretError(f"{e}{hint}") from None


def _reduce(op, xs: np.ndarray, computation: str) -> np.ndarray:
    """Fold `xs[0], xs[1], ...` in group order, in the compute dtype."""
    cdt = compute_dtype(xs.dtype)
    ufunc = REDUCTIONS[computation]
    acc = xs[0].astype(cdt)
    for x in xs[1:]:
        acc = ufunc(acc, x.astype(cdt))
    return acc.astype(xs.dtype)


def _done(outs, unstack):
    return [o[0] for o in outs] if unstack else outs


# all_reduce ---------------------------------------------------------------------------------


def _all_reduce_infer(types, attrs, regions):
    nargs("all_reduce", types, 1)
    _groups("all_reduce", attrs)
    _check_computation("all_reduce", attrs, types[0])
    return [types[0]]


def _all_reduce_ref(args, attrs, regions, run):
    (x,), n, unstack = _stacked("all_reduce", args, run, attrs)
    out = np.empty_like(x)
    for g in _cover("all_reduce", attrs["replica_groups"], n):
        out[list(g)] = _reduce("all_reduce", x[list(g)], attrs["computation"])
    return _done([out], unstack)


# all_gather ---------------------------------------------------------------------------------


def _all_gather_infer(types, attrs, regions):
    nargs("all_gather", types, 1)
    (t,) = types
    groups = _groups("all_gather", attrs)
    d = _check_dim("all_gather", "all_gather_dim", attrs["all_gather_dim"], t)
    shape = list(t.shape)
    shape[d] *= len(groups[0])
    return [TensorType(tuple(shape), t.dtype)]


def _all_gather_ref(args, attrs, regions, run):
    (x,), n, unstack = _stacked("all_gather", args, run, attrs)
    dim = int(attrs["all_gather_dim"])
    outs = [None] * n
    for g in _cover("all_gather", attrs["replica_groups"], n):
        joined = np.concatenate([x[i] for i in g], axis=dim)
        for i in g:
            outs[i] = joined
    return _done([np.stack(outs)], unstack)


# reduce_scatter -----------------------------------------------------------------------------


def _reduce_scatter_infer(types, attrs, regions):
    nargs("reduce_scatter", types, 1)
    (t,) = types
    groups = _groups("reduce_scatter", attrs)
    _check_computation("reduce_scatter", attrs, t)
    d = _check_dim("reduce_scatter", "scatter_dimension", attrs["scatter_dimension"], t)
    k = len(groups[0])
    if t.shape[d] % k:
        fail("reduce_scatter", f"dimension {d} of {t} does not divide into {k} pieces")
    shape = list(t.shape)
    shape[d] //= k
    return [TensorType(tuple(shape), t.dtype)]


def _reduce_scatter_ref(args, attrs, regions, run):
    (x,), n, unstack = _stacked("reduce_scatter", args, run, attrs)
    dim = int(attrs["scatter_dimension"])
    outs = [None] * n
    for g in _cover("reduce_scatter", attrs["replica_groups"], n):
        total = _reduce("reduce_scatter", x[list(g)], attrs["computation"])
        for k, piece in enumerate(np.split(total, len(g), axis=dim)):
            outs[g[k]] = piece
    return _done([np.stack(outs)], unstack)


# collective_permute -------------------------------------------------------------------------


def check_pairs(op, pairs) -> tuple[tuple[int, int], ...]:
    """Validate source-target pairs: each device sends at most once and receives at most once."""
    pairs = tuple((int(s), int(t)) for s, t in pairs)
    srcs, dsts = [s for s, _ in pairs], [t for _, t in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        fail(op, f"source_target_pairs {list(pairs)} send or receive twice on one device")
    if any(i < 0 for i in srcs + dsts):
        fail(op, f"source_target_pairs {list(pairs)} hold negative ids")
    return pairs


def _permute_infer(types, attrs, regions):
    nargs("collective_permute", types, 1)
    check_pairs("collective_permute", attrs["source_target_pairs"])
    return [types[0]]


def _permute_ref(args, attrs, regions, run):
    (x,), n, unstack = _stacked("collective_permute", args, run, attrs)
    out = np.zeros_like(x)
    for s, t in attrs["source_target_pairs"]:
        if max(s, t) >= n:
            raise InterpretError(f"collective_permute: pair {(s, t)} names a device >= {n}")
        out[t] = x[s]
    return _done([out], unstack)


# all_to_all ---------------------------------------------------------------------------------


def _all_to_all_infer(types, attrs, regions):
    nargs("all_to_all", types, 1)
    (t,) = types
    groups = _groups("all_to_all", attrs)
    sd = _check_dim("all_to_all", "split_dimension", attrs["split_dimension"], t)
    cd = _check_dim("all_to_all", "concat_dimension", attrs["concat_dimension"], t)
    k = int(attrs["split_count"])
    if k != len(groups[0]):
        fail("all_to_all", f"split_count={k} but replica groups have {len(groups[0])} devices")
    if t.shape[sd] % k:
        fail("all_to_all", f"dimension {sd} of {t} does not divide into {k} pieces")
    shape = list(t.shape)
    shape[sd] //= k
    shape[cd] *= k
    return [TensorType(tuple(shape), t.dtype)]


def _all_to_all_ref(args, attrs, regions, run):
    (x,), n, unstack = _stacked("all_to_all", args, run, attrs)
    sd, cd = int(attrs["split_dimension"]), int(attrs["concat_dimension"])
    outs = [None] * n
    for g in _cover("all_to_all", attrs["replica_groups"], n):
        pieces = {i: np.split(x[i], len(g), axis=sd) for i in g}
        for k, i in enumerate(g):
            outs[i] = np.concatenate([pieces[j][k] for j in g], axis=cd)
    return _done([np.stack(outs)], unstack)


# partition_id -------------------------------------------------------------------------------


def _partition_id_infer(types, attrs, regions):
    nargs("partition_id", types, 0)
    return [TensorType((), np.uint32)]


def _partition_id_ref(args, attrs, regions, run):
    n = run.num_devices if getattr(run, "spmd", False) else 1
    ids = np.arange(n, dtype=np.uint32)
    return [ids] if getattr(run, "spmd", False) else [ids[0]]


# pvary ----------------------------------------------------------------------------------------


def _pvary_infer(types, attrs, regions):
    nargs("pvary", types, 1)
    axes = attrs["axes"]
    if not isinstance(axes, (tuple, list)) or not all(isinstance(a, str) for a in axes):
        fail("pvary", f"axes must be a tuple of mesh axis names, got {axes!r}")
    _groups("pvary", attrs)
    return [types[0]]


# sharding_constraint --------------------------------------------------------------------------

CONSTRAINT_ATTRS = ("axis_names", "mesh_shape", "device_ids", "spec")


def _constraint_infer(types, attrs, regions):
    nargs("sharding_constraint", types, 1)
    names, shape = _mesh(attrs, "sharding_constraint")
    spec = attrs["spec"]
    if len(spec) != types[0].rank:
        fail("sharding_constraint", f"spec {spec} for a value of rank {types[0].rank}")
    used = [a for dim in spec for a in dim]
    if any(a not in names for a in used) or len(set(used)) != len(used):
        fail("sharding_constraint", f"spec {spec} must name distinct axes of {list(names)}")
    for d, dim in enumerate(spec):
        parts = spmd.num_devices(tuple(shape[names.index(a)] for a in dim))
        if types[0].shape[d] % parts:
            fail("sharding_constraint", f"dim {d} of {types[0]} does not split in {parts}")
    return [types[0]]


# manual_computation -------------------------------------------------------------------------

MANUAL_ATTRS = ("axis_names", "mesh_shape", "device_ids", "in_specs", "out_specs")


def _mesh(attrs, name: str = "manual_computation"):
    names = tuple(attrs["axis_names"])
    shape = tuple(int(s) for s in attrs["mesh_shape"])
    if len(names) != len(shape) or len(set(names)) != len(names):
        fail(name, f"axis_names {list(names)} do not fit mesh_shape {shape}")
    if len(attrs["device_ids"]) != spmd.num_devices(shape):
        fail(name, f"{len(attrs['device_ids'])} device_ids for mesh {shape}")
    return names, shape


def _manual_infer(types, attrs, regions):
    names, shape = _mesh(attrs)
    sizes = spmd.axis_sizes(shape, names)
    if len(regions) != 1:
        fail("manual_computation", "needs exactly one region (the per-device body)")
    (body,) = regions
    try:
        local = spmd.local_types("manual_computation", list(types), attrs["in_specs"], sizes)
        outs = body.result_types
        if len(attrs["out_specs"]) != len(outs):
            fail(
                "manual_computation", f"{len(attrs['out_specs'])} out_specs for {len(outs)} results"
            )
        result = [
            TensorType(spmd.global_shape(t.shape, s, sizes), t.dtype)
            for t, s in zip(outs, attrs["out_specs"])
        ]
        for t, s in zip(result, attrs["out_specs"]):
            spmd.local_shape("manual_computation", t.shape, s, sizes)
    except spmd.SpmdError as e:
        fail("manual_computation", str(e).split(": ", 1)[-1])
    if body.param_types != local:
        fail("manual_computation", f"body takes {body.param_types}, operands give {local}")
    return result


def _manual_ref(args, attrs, regions, run):
    names, shape = tuple(attrs["axis_names"]), tuple(attrs["mesh_shape"])
    if getattr(run, "spmd", False):
        raise NotImplementedError("interpret_spmd: manual_computation nested in another one")
    stacked = [
        spmd.split_global(np.asarray(a), s, shape, names) for a, s in zip(args, attrs["in_specs"])
    ]
    outs = spmd.interpret_spmd(regions[0], *stacked)
    return [spmd.join_global(o, s, shape, names) for o, s in zip(outs, attrs["out_specs"])]


# registration -------------------------------------------------------------------------------

register(
    OpDef(
        "all_reduce",
        _all_reduce_infer,
        _all_reduce_ref,
        _COLLECTIVE,
        attrs=("replica_groups", "computation"),
        doc="all_reduce(x) {replica_groups, computation}: reduce within each group",
    )
)
register(
    OpDef(
        "all_gather",
        _all_gather_infer,
        _all_gather_ref,
        _COLLECTIVE,
        attrs=("replica_groups", "all_gather_dim"),
        doc="all_gather(x) {replica_groups, all_gather_dim}: concatenate in group order",
    )
)
register(
    OpDef(
        "reduce_scatter",
        _reduce_scatter_infer,
        _reduce_scatter_ref,
        _COLLECTIVE,
        attrs=("replica_groups", "scatter_dimension", "computation"),
        doc="reduce_scatter(x): reduce within each group, keep this device's piece",
    )
)
register(
    OpDef(
        "collective_permute",
        _permute_infer,
        _permute_ref,
        _COLLECTIVE,
        attrs=("source_target_pairs",),
        doc="collective_permute(x) {source_target_pairs}: non-targets receive zeros",
    )
)
register(
    OpDef(
        "all_to_all",
        _all_to_all_infer,
        _all_to_all_ref,
        _COLLECTIVE,
        attrs=("replica_groups", "split_dimension", "concat_dimension", "split_count"),
        doc="all_to_all(x): split, exchange piece k with group member k, concatenate",
    )
)
register(
    OpDef(
        "partition_id",
        _partition_id_infer,
        _partition_id_ref,
        frozenset({"pure", "per_device"}),
        doc="partition_id() -> u32[]: this device's position in the mesh",
    )
)
register(
    OpDef(
        "pvary",
        _pvary_infer,
        lambda args, attrs, regions, run: [args[0]],
        frozenset({"pure"}),
        attrs=("axes", "replica_groups"),
        doc="pvary(x) {axes, replica_groups} -> x, typed as varying over the mesh axes `axes`",
    )
)
register(
    OpDef(
        "sharding_constraint",
        _constraint_infer,
        lambda args, attrs, regions, run: [args[0]],
        frozenset({"pure"}),
        attrs=CONSTRAINT_ATTRS,
        doc="sharding_constraint(x) {mesh, spec} -> x, laid out over the mesh as spec says",
    )
)
register(
    OpDef(
        "manual_computation",
        _manual_infer,
        _manual_ref,
        frozenset(),
        attrs=MANUAL_ATTRS,
        num_regions=1,
        doc="manual_computation(xs) region(local xs) -> local ys: shard_map's body",
    )
)
