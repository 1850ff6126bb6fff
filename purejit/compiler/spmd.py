"""The layout of a whole SPMD program: one mesh, a sharding per parameter and result.

`plan_layout` reads it off the optimised IR (the shard_map regions and the user's
`in_shardings`/`out_shardings`); `ProgramLayout.emit` writes the module with Shardy
annotations and `compile` builds the multi-device executable.
"""

from __future__ import annotations

import numpy as np

from purejit.backend import shardy, stablehlo
from purejit.backend import spmd as backend_spmd
from purejit.ir import spmd
from purejit.runtime.mesh import Mesh, NamedSharding, PartitionSpec, broadcast_prefix


class ProgramLayout:
    """Where every parameter and result of an SPMD program lives: one mesh, a sharding each.

    Made by `plan_layout`; `emit` writes the StableHLO module with Shardy annotations and
    `compile` builds the multi-device executable.
    """

    def __init__(self, mesh: Mesh, in_shardings, out_shardings):
        self.mesh = mesh
        self.in_shardings = list(in_shardings)
        self.out_shardings = list(out_shardings)

    def emit(self, fn, arg_attrs: list[str] | None = None) -> str:
        """The module text: `sdy.mesh`, `sdy.sharding` on every argument and result."""
        ctx = stablehlo.EmitContext()
        shardy.declare_mesh(ctx, self.mesh.axis_names, self.mesh.mesh_shape)
        attrs = []
        for i, (ns, p) in enumerate(zip(self.in_shardings, fn.params)):
            extra = arg_attrs[i] if arg_attrs and arg_attrs[i] else ""
            attrs.append(_merge_attrs(shardy.sdy_sharding_attr(ns.dims(p.type.rank)), extra))
        results = [
            shardy.sdy_sharding_attr(ns.dims(r.type.rank))
            for ns, r in zip(self.out_shardings, fn.results)
        ]
        return stablehlo.emit(
            fn, arg_attrs=attrs, result_attrs=results, num_partitions=self.mesh.size, ctx=ctx
        )

    def compile(self, module: str, fn, **kw):
        return backend_spmd.compile(
            module,
            self.mesh.device_list,
            fn.param_types,
            fn.result_types,
            self.in_shardings,
            self.out_shardings,
            **kw,
        )

    def __repr__(self):
        return (
            f"ProgramLayout({self.mesh!r}, in={[s.spec for s in self.in_shardings]}, "
            f"out={[s.spec for s in self.out_shardings]})"
        )


def _merge_attrs(a: str, b: str) -> str:
    """Merge two MLIR attribute dictionaries `{x = 1}` and `{y = 2}` into `{x = 1, y = 2}`."""
    if not b:
        return a
    return "{" + a.strip()[1:-1] + ", " + b.strip()[1:-1] + "}"


def _mesh_of_op(op) -> Mesh:
    devs = [backend_spmd.device_by_id(i) for i in op.attrs["device_ids"]]
    arr = np.empty(len(devs), dtype=object)
    arr[:] = devs
    return Mesh(arr.reshape(tuple(op.attrs["mesh_shape"])), op.attrs["axis_names"])


def plan_layout(fn, in_shardings=None, out_shardings=None) -> ProgramLayout | None:
    """The layout of `fn` as an SPMD program, or None when it runs on one device.

    Args:
        fn: the optimised IR function.
        in_shardings: None, or one NamedSharding-or-None per parameter.
        out_shardings: None, or one NamedSharding-or-None per result.
    Parameters without a sharding take the in_spec of the shard_map that consumes them
    directly, else are replicated; results likewise take the out_spec of the shard_map that
    produces them, the sharding of the parameter they return, or are replicated.
    """
    in_shardings = list(in_shardings or [None] * len(fn.params))
    out_shardings = list(out_shardings or [None] * len(fn.results))
    manual = [op for op in fn.walk() if op.name == "manual_computation"]
    meshes = {_mesh_of_op(op) for op in manual}
    # a with_sharding_constraint partitions the program over its mesh, as in JAX
    meshes |= {_mesh_of_op(op) for op in fn.walk() if op.name == "sharding_constraint"}
    meshes |= {s.mesh for s in in_shardings + out_shardings if s is not None}
    if not meshes:
        return None
    if len(meshes) > 1:
        raise NotImplementedError(
            f"a program over several meshes {sorted(map(repr, meshes))}; purejit compiles one "
            "mesh per program"
        )
    (mesh,) = meshes
    replicated = NamedSharding(mesh, PartitionSpec())
    consumer, producer = {}, {}
    for op in fn.ops:
        if op.name == "manual_computation":
            for v, dims in zip(op.operands, op.attrs["in_specs"]):
                consumer.setdefault(v, NamedSharding(mesh, PartitionSpec(*dims)))
            for v, dims in zip(op.results, op.attrs["out_specs"]):
                producer[v] = NamedSharding(mesh, PartitionSpec(*dims))
        elif op.name == "sharding_constraint":  # a result keeps the layout asked for it
            producer[op.results[0]] = NamedSharding(mesh, PartitionSpec(*op.attrs["spec"]))
    ins = [
        s if s is not None else consumer.get(p, replicated) for s, p in zip(in_shardings, fn.params)
    ]
    by_param = dict(zip(fn.params, ins))
    outs = [
        s if s is not None else producer.get(r, by_param.get(r, replicated))
        for s, r in zip(out_shardings, fn.results)
    ]
    for kind, shs, vals in (("argument", ins, fn.params), ("result", outs, fn.results)):
        for i, (s, v) in enumerate(zip(shs, vals)):
            try:
                s.shard_shape(v.type.shape)
            except (spmd.SpmdError, ValueError) as e:
                raise ValueError(f"{kind} {i} ({v.type}): {e}") from None
    return ProgramLayout(mesh, ins, outs)


def leaf_shardings(prefix, treedef, what: str) -> list | None:
    """One NamedSharding-or-None per leaf of `treedef` from a pytree prefix (None: all None)."""
    if prefix is None:
        return None
    out = broadcast_prefix(prefix, treedef, what)
    for s in out:
        if s is not None and not isinstance(s, NamedSharding):
            raise TypeError(f"{what}: expected NamedSharding or None, got {s!r}")
    return out
