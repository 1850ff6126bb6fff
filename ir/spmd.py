"""SPMD support for the IR: mesh index math and `interpret_spmd`, which simulates devices.

A mesh is a shape (`mesh_shape`, e.g. `(4, 2)`) with axis names (`("x", "y")`). Device `d` is
the row-major position in the mesh (its *partition id*); its coordinates are
`np.unravel_index(d, mesh_shape)`. A *dimension spec* says how one array dimension is split
over mesh axes: `()` keeps it whole, `("x",)` splits it in `size(x)` pieces, `("x", "y")` in
`size(x) * size(y)` pieces with `x` major (JAX's `PartitionSpec` semantics).

Per-device values are NumPy arrays with a leading device axis: `stacked[d]` is device `d`'s
value. Collective ops (and `partition_id`) have the `per_device` trait: their reference rules
take and return stacked arrays when run by `interpret_spmd`. Every other op runs once per
device with its ordinary reference rule.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from purejit.ir.core import Function, TensorType
from purejit.ir.interpreter import InterpretError, interpret
from purejit.ir.registry import get_op

DimSpec = tuple[str, ...]
Spec = tuple[DimSpec, ...]


class SpmdError(ValueError):
    """A mesh, spec or per-device value that does not fit."""


def num_devices(mesh_shape: Sequence[int]) -> int:
    return int(math.prod(mesh_shape))


def axis_sizes(mesh_shape, axis_names) -> dict[str, int]:
    return dict(zip(axis_names, (int(s) for s in mesh_shape)))


def axis_group_index(d: int, mesh_shape, axis_names, axes: Sequence[str]) -> int:
    """The index of device `d` along the combined axes `axes` (first axis major)."""
    coords = np.unravel_index(d, tuple(mesh_shape))
    pos = {n: i for i, n in enumerate(axis_names)}
    idx = 0
    for a in axes:
        idx = idx * int(mesh_shape[pos[a]]) + int(coords[pos[a]])
    return idx


def replica_groups(mesh_shape, axis_names, axes: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    """Groups of partition ids that communicate over `axes`, each ordered by axis index.

    Devices that agree on every other mesh axis form one group; inside a group they are
    ordered by their index along `axes` (the first named axis major), as JAX does.
    """
    unknown = [a for a in axes if a not in axis_names]
    if unknown:
        raise SpmdError(f"axis names {unknown} are not in the mesh axes {list(axis_names)}")
    if len(set(axes)) != len(axes):
        raise SpmdError(f"axis names {list(axes)} repeat")
    others = [a for a in axis_names if a not in axes]
    groups: dict[int, list[tuple[int, int]]] = {}
    for d in range(num_devices(mesh_shape)):
        key = axis_group_index(d, mesh_shape, axis_names, others)
        groups.setdefault(key, []).append((axis_group_index(d, mesh_shape, axis_names, axes), d))
    return tuple(tuple(d for _, d in sorted(g)) for _, g in sorted(groups.items()))


def check_groups(op: str, groups, n: int | None = None) -> tuple[tuple[int, ...], ...]:
    """Validate replica groups: equal sizes, disjoint, ids in range; returns them as tuples."""
    groups = tuple(tuple(int(i) for i in g) for g in groups)
    if not groups or not groups[0]:
        raise SpmdError(f"{op}: replica_groups must hold at least one non-empty group")
    if len({len(g) for g in groups}) != 1:
        raise SpmdError(f"{op}: replica groups have different sizes: {groups}")
    flat = [i for g in groups for i in g]
    if len(set(flat)) != len(flat) or min(flat) < 0:
        raise SpmdError(f"{op}: replica groups overlap or hold negative ids: {groups}")
    if n is not None and sorted(flat) != list(range(n)):
        raise SpmdError(f"{op}: replica groups {groups} do not cover devices 0..{n - 1} exactly")
    return groups


def dim_split(spec: DimSpec, sizes: dict[str, int]) -> int:
    return int(math.prod(sizes[a] for a in spec))


def local_shape(op: str, shape, spec: Spec, sizes: dict[str, int]) -> tuple[int, ...]:
    """The per-device shape of a global `shape` split by `spec` (one entry per dimension)."""
    if len(spec) != len(shape):
        raise SpmdError(f"{op}: spec {list(spec)} has {len(spec)} entries for shape {shape}")
    seen: list[str] = []
    out = []
    for dim, (n, axes) in enumerate(zip(shape, spec)):
        for a in axes:
            if a not in sizes:
                raise SpmdError(f"{op}: axis {a!r} is not in the mesh axes {list(sizes)}")
            if a in seen:
                raise SpmdError(f"{op}: mesh axis {a!r} splits two dimensions of {shape}")
            seen.append(a)
        k = dim_split(axes, sizes)
        if n % k:
            raise SpmdError(
                f"{op}: dimension {dim} of size {n} does not divide into {k} shards over {axes}"
            )
        out.append(n // k)
    return tuple(out)


def global_shape(shape, spec: Spec, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(n * dim_split(axes, sizes) for n, axes in zip(shape, spec))


def shard_slices(d: int, shape, spec: Spec, mesh_shape, axis_names) -> tuple[slice, ...]:
    """The slice of a global array of `shape` that device `d` holds under `spec`."""
    sizes = axis_sizes(mesh_shape, axis_names)
    loc = local_shape("shard", shape, spec, sizes)
    out = []
    for n, axes in zip(loc, spec):
        i = axis_group_index(d, mesh_shape, axis_names, axes) if axes else 0
        out.append(slice(i * n, (i + 1) * n))
    return tuple(out)


def split_global(x: np.ndarray, spec: Spec, mesh_shape, axis_names) -> np.ndarray:
    """Stack every device's shard of the global array `x`: shape `[N, *local]`."""
    n = num_devices(mesh_shape)
    return np.stack([x[shard_slices(d, x.shape, spec, mesh_shape, axis_names)] for d in range(n)])


def join_global(stacked: np.ndarray, spec: Spec, mesh_shape, axis_names) -> np.ndarray:
    """The global array whose shards are `stacked[d]`; replicated axes read device order 0."""
    sizes = axis_sizes(mesh_shape, axis_names)
    shape = global_shape(stacked.shape[1:], spec, sizes)
    out = np.empty(shape, stacked.dtype)
    used = {a for axes in spec for a in axes}
    free = [a for a in axis_names if a not in used]
    for d in range(stacked.shape[0]):
        if free and axis_group_index(d, mesh_shape, axis_names, free) != 0:
            continue
        out[shard_slices(d, shape, spec, mesh_shape, axis_names)] = stacked[d]
    return out


# ---- the SPMD interpreter ----------------------------------------------------------------


class _SpmdRunner:
    """The `run` callback handed to reference rules under `interpret_spmd`.

    Reference rules of `per_device` ops check `getattr(run, "spmd", False)` to know their
    operands carry a leading device axis.
    """

    spmd = True

    def __init__(self, n: int):
        self.num_devices = n

    def __call__(self, fn: Function, *stacked):
        return interpret_spmd(fn, *stacked)


def _has_per_device(fn: Function) -> bool:
    return any(op.has_trait("per_device") for op in fn.walk())


def interpret_spmd(fn: Function, *stacked) -> list[np.ndarray]:
    """Run `fn` on every device of an SPMD program at once, with NumPy.

    Args:
        fn: a per-device function (the body of a manual computation); its collectives name
            devices by partition id `0..N-1`.
        *stacked: one array per parameter with a leading device axis of size N:
            `stacked[i][d]` is parameter i on device d.
    Returns:
        The results, stacked the same way.
    """
    if len(stacked) != len(fn.params):
        raise InterpretError(f"@{fn.name} takes {len(fn.params)} arguments, got {len(stacked)}")
    sizes = {np.asarray(a).shape[0] if np.ndim(a) else None for a in stacked}
    if len(sizes) > 1 or None in sizes:
        raise InterpretError(f"@{fn.name}: per-device arguments need one leading device axis")
    n = sizes.pop() if sizes else 1
    runner = _SpmdRunner(n)
    env = {}
    for p, a in zip(fn.params, stacked):
        a = np.asarray(a)
        if a.shape[1:] != p.type.shape or a.dtype != p.type.dtype:
            raise InterpretError(
                f"@{fn.name}: per-device argument {a.dtype}{list(a.shape[1:])} for {p.type}"
            )
        env[p] = a
    with np.errstate(all="ignore"):
        for op in fn.ops:
            ins = [env[v] for v in op.operands]
            ref = get_op(op.name).reference
            if op.has_trait("per_device"):
                outs = [np.asarray(o) for o in ref(ins, op.attrs, op.regions, runner)]
            elif any(_has_per_device(r) for r in op.regions):
                outs = _uniform_control_flow(op, ins)
            else:
                per = [ref([a[d] for a in ins], op.attrs, op.regions, interpret) for d in range(n)]
                outs = [np.stack([np.asarray(p[k]) for p in per]) for k in range(len(op.results))]
            if len(outs) != len(op.results):
                raise InterpretError(f"{op.name}: reference gave {len(outs)} results")
            for r, o in zip(op.results, outs):
                if o.shape != (n,) + r.type.shape:
                    raise InterpretError(f"{op.name}: per-device shape {o.shape[1:]} for {r.type}")
                env[r] = o.astype(r.type.dtype, copy=False)
    return [env[v] for v in fn.results]


def _uniform(op, pred: np.ndarray) -> np.ndarray:
    flat = pred.reshape(len(pred), -1)
    if not (flat == flat[:1]).all():
        raise InterpretError(
            f"interpret_spmd: {op.name} around collectives takes different branches on "
            "different devices; collectives need every device on the same path"
        )
    return pred[0]


def _uniform_control_flow(op, ins) -> list[np.ndarray]:
    """`while` / `case` whose regions hold collectives: every device must take the same
    path (as on hardware, where a diverging collective hangs); regions run on all devices."""
    if op.name == "while":
        cond, body = op.regions
        n = len(body.results)
        carry, inv = list(ins[:n]), list(ins[n:])
        while bool(_uniform(op, interpret_spmd(cond, *carry, *inv)[0])):
            carry = interpret_spmd(body, *carry, *inv)
        return carry
    if op.name == "case":
        k = int(_uniform(op, ins[0]))
        k = k if 0 <= k < len(op.regions) else len(op.regions) - 1  # as XLA: last branch
        return interpret_spmd(op.regions[k], *ins[1:])
    raise NotImplementedError(
        f"interpret_spmd: op {op.name} has a region with collectives; the SPMD interpreter "
        "runs those only in while, case and manual_computation"
    )


def local_types(op: str, types: list[TensorType], specs, sizes) -> list[TensorType]:
    if len(specs) != len(types):
        raise SpmdError(f"{op}: {len(specs)} specs for {len(types)} values")
    return [TensorType(local_shape(op, t.shape, s, sizes), t.dtype) for t, s in zip(types, specs)]
