"""Meshes and shardings: `Mesh`, `PartitionSpec`, `NamedSharding`, `device_put`.

    mesh = Mesh(np.array(purejit.devices()).reshape(4, 2), ("x", "y"))
    xs = purejit.device_put(x, NamedSharding(mesh, PartitionSpec("x", None)))

The partition id of a device is its row-major position in `mesh.devices`; collectives and the
compiled program's device assignment use it. The index math lives in `purejit.ir.spmd` so the
IR interpreter shares it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from purejit.ir import spmd


class PartitionSpec(tuple):
    """How each array dimension is split over mesh axes, as in JAX.

    Each entry is `None` (not split), an axis name, or a tuple of axis names (split over
    their product, the first one major). Missing trailing entries mean `None`.
    """

    def __new__(cls, *parts):
        for p in parts:
            ok = p is None or isinstance(p, str)
            ok = ok or (isinstance(p, tuple) and all(isinstance(a, str) for a in p))
            if not ok:
                raise TypeError(f"PartitionSpec entries are None, str or tuple of str, not {p!r}")
        return super().__new__(cls, parts)

    def __repr__(self):
        return f"PartitionSpec{tuple.__repr__(self)}"

    def dims(self, rank: int) -> spmd.Spec:
        """The spec as one tuple of axis names per dimension of a rank-`rank` array."""
        if len(self) > rank:
            raise ValueError(f"{self!r} has {len(self)} entries for an array of rank {rank}")
        out = []
        for p in tuple(self) + (None,) * (rank - len(self)):
            out.append(() if p is None else ((p,) if isinstance(p, str) else tuple(p)))
        return tuple(out)


P = PartitionSpec


class Mesh:
    """A named n-dimensional array of devices.

    Args:
        devices: an array-like of devices (from `purejit.devices()`), of shape `mesh_shape`.
        axis_names: one name per dimension of `devices`.
    """

    def __init__(self, devices, axis_names: Sequence[str]):
        arr = np.empty(np.shape(devices), dtype=object)
        arr[...] = devices if isinstance(devices, np.ndarray) else _nested(devices)
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        if arr.ndim != len(axis_names):
            raise ValueError(f"Mesh: {len(axis_names)} axis names for devices of shape {arr.shape}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: repeated axis names {axis_names}")
        ids = [d.id for d in arr.flat]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Mesh: a device appears twice ({ids})")
        self.devices = arr
        self.axis_names = axis_names
        self._ids = tuple(int(i) for i in ids)
        self._hash = hash((self._ids, tuple(arr.shape), axis_names))

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def mesh_shape(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> tuple[int, ...]:
        return self._ids

    @property
    def device_list(self) -> list:
        """Devices in partition-id order."""
        return list(self.devices.flat)

    def _key(self):
        return (self.device_ids, self.mesh_shape, self.axis_names)

    def __eq__(self, other):
        return self is other or (isinstance(other, Mesh) and self._key() == other._key())

    def __hash__(self):
        return self._hash

    def __repr__(self):
        axes = ", ".join(f"{n}={s}" for n, s in self.shape.items())
        return f"Mesh({axes}; devices {list(self.device_ids)})"


def _nested(devices):
    out = np.empty(np.shape(devices), dtype=object)
    for idx in np.ndindex(out.shape):
        d = devices
        for i in idx:
            d = d[i]
        out[idx] = d
    return out


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], devices=None) -> Mesh:
    """A mesh of the first `prod(axis_shapes)` devices (default: `purejit.devices()`)."""
    from purejit.backend import pjrt

    devs = list(devices if devices is not None else pjrt.devices())
    n = int(np.prod(axis_shapes))
    if n > len(devs):
        raise ValueError(
            f"make_mesh: mesh {tuple(axis_shapes)} needs {n} devices, have {len(devs)}"
        )
    return Mesh(np.array(devs[:n], dtype=object).reshape(tuple(axis_shapes)), axis_names)


class NamedSharding:
    """An array layout: split over `mesh` as `spec` says, replicated over the other axes."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec | None = None):
        if spec is None:
            spec = PartitionSpec()
        elif not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        for p in spec:
            for a in () if p is None else (p,) if isinstance(p, str) else p:
                if a not in mesh.axis_names:
                    raise ValueError(f"{spec!r} names axis {a!r}, not in {mesh!r}")
        self.mesh = mesh
        self.spec = spec
        self._hash = None

    def dims(self, rank: int) -> spmd.Spec:
        return self.spec.dims(rank)

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """The per-device shape; raises if a dimension does not divide evenly."""
        sizes = self.mesh.shape
        return spmd.local_shape(
            "sharding", tuple(global_shape), self.dims(len(global_shape)), sizes
        )

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        """For each device, the tuple of slices of the global array it holds."""
        shape = tuple(global_shape)
        spec = self.dims(len(shape))
        return {
            dev: spmd.shard_slices(d, shape, spec, self.mesh.mesh_shape, self.mesh.axis_names)
            for d, dev in enumerate(self.mesh.devices.flat)
        }

    @property
    def device_set(self) -> set:
        return set(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(p is None or p == () for p in self.spec)

    def normalized(self, rank: int):
        return (self.mesh, self.dims(rank))

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, NamedSharding) or other.mesh != self.mesh:
            return False
        n = max(len(self.spec), len(other.spec))
        return self.dims(n) == other.dims(n)

    def __hash__(self):
        if self._hash is None:
            spec = self.spec.dims(len(self.spec))
            while spec and spec[-1] == ():  # P("x") and P("x", None) are equal
                spec = spec[:-1]
            self._hash = hash((self.mesh, spec))
        return self._hash

    def __repr__(self):
        return f"NamedSharding({self.mesh!r}, {self.spec!r})"


def device_put(x, sharding=None):
    """Place `x` on a device, or split it over devices.

    Args:
        x: an array-like (NumPy, scalar, purejit.Array, jax.Array).
        sharding: a `NamedSharding` (each device gets its shard), a device, or None for the
            default device.
    Returns:
        A `purejit.Array` whose buffer lives where `sharding` says; it reads back (NumPy) as
        the global array.
    """
    from purejit.array import Array, as_array
    from purejit.backend import pjrt

    arr = as_array(x)
    if sharding is None or not isinstance(sharding, NamedSharding):
        return Array(buf=pjrt.to_device(arr.host, sharding), weak_type=arr.weak_type)
    from purejit.backend import spmd as backend_spmd

    buf = backend_spmd.put_sharded(arr.host, sharding)
    return Array(buf=buf, weak_type=arr.weak_type)


def sharding_of(x) -> NamedSharding | None:
    """The NamedSharding of an array split over devices, or None (one device / host)."""
    from purejit.array import Array

    if isinstance(x, Array):
        if x._buf is None:
            return None
        x = x._buf
    from purejit.backend import spmd as backend_spmd

    parts = backend_spmd.sharding_parts(x)
    if parts is None:
        return None
    devices, axis_names, spec = parts
    return NamedSharding(Mesh(devices, axis_names), PartitionSpec(*spec))


# ---- the layout of a whole SPMD program -----------------------------------------------------


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
        from purejit.backend import shardy, stablehlo

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
        from purejit.backend import spmd as backend_spmd

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
    from purejit.backend import spmd as backend_spmd

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
    from purejit.shard_map import broadcast_prefix

    out = broadcast_prefix(prefix, treedef, what)
    for s in out:
        if s is not None and not isinstance(s, NamedSharding):
            raise TypeError(f"{what}: expected NamedSharding or None, got {s!r}")
    return out
