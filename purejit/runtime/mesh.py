"""Meshes and shardings: `Mesh`, `PartitionSpec`, `NamedSharding` (placement is in
`purejit.runtime.placement`).

    mesh = Mesh(np.array(purejit.devices()).reshape(4, 2), ("x", "y"))
    xs = purejit.device_put(x, NamedSharding(mesh, PartitionSpec("x", None)))

The partition id of a device is its row-major position in `mesh.devices`; collectives and the
compiled program's device assignment use it. The index math lives in `purejit.ir.spmd` so the
IR interpreter shares it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from purejit.backend import pjrt
from purejit.backend import spmd as backend_spmd
from purejit.ir import spmd
from purejit.tree_util import PyTreeDef, tree_flatten


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


def _is_axis_types(x) -> bool:
    return isinstance(x, (tuple, list)) and all(
        getattr(t, "name", None) in ("Auto", "Explicit", "Manual") for t in x
    )


def make_mesh(
    axis_shapes: Sequence[int], axis_names: Sequence[str], devices=None, *, axis_types=None
) -> Mesh:
    """A mesh of the first `prod(axis_shapes)` devices (default: `purejit.devices()`).

    `axis_types` (JAX's `AxisType` per axis, also taken in JAX's third position): purejit's
    mesh axes are `Auto` (XLA's partitioner decides); `Explicit` (sharding in types) and
    `Manual` raise NotImplementedError."""
    if axis_types is None and _is_axis_types(devices):
        axis_types, devices = devices, None
    for t in axis_types or ():
        if getattr(t, "name", t) != "Auto":
            raise NotImplementedError(
                f"make_mesh: axis_types={tuple(axis_types)}: purejit's mesh axes are "
                "AxisType.Auto (explicit sharding in types is not supported; Manual axes "
                "come from shard_map); drop axis_types or pass AxisType.Auto"
            )
    devs = list(devices if devices is not None else pjrt.devices())
    n = int(np.prod(axis_shapes))
    if n > len(devs):
        raise ValueError(
            f"make_mesh: mesh {tuple(axis_shapes)} needs {n} devices, have {len(devs)}"
        )
    return Mesh(np.array(devs[:n], dtype=object).reshape(tuple(axis_shapes)), axis_names)


def placements_equal(a, b, ndim: int) -> bool:
    """Whether shardings `a` and `b` place every element of any rank-`ndim` array on the
    same devices (JAX's `is_equivalent_to`: a split over size-1 axes is replication). A
    probe shape with every dimension the device count divides evenly under any split."""
    if a.device_set != getattr(b, "device_set", None):
        return False
    probe = (len(a.device_set),) * ndim

    def canon(sharding):
        return {
            dev: tuple(s.indices(n)[:2] for s, n in zip(slices, probe))
            for dev, slices in sharding.devices_indices_map(probe).items()
        }

    return canon(a) == canon(b)


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

    def is_equivalent_to(self, other, ndim: int) -> bool:
        """Whether `other` puts every element of a rank-`ndim` array on the same devices."""
        return placements_equal(self, other, ndim)

    @property
    def is_fully_replicated(self) -> bool:
        return all(p is None or p == () for p in self.spec)

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


def _is_spec(x) -> bool:
    return x is None or isinstance(x, (PartitionSpec, NamedSharding))


def broadcast_prefix(prefix, treedef: PyTreeDef, what: str) -> list:
    """One entry of `prefix` per leaf of `treedef`; a spec (or None) covers a whole subtree."""
    out: list = []

    def rec(p, td: PyTreeDef):
        if _is_spec(p) or td.kind is None:
            if not _is_spec(p):
                raise TypeError(f"{what}: expected a PartitionSpec or None, got {p!r}")
            out.extend([p] * td.num_leaves)
            return
        _, sub = tree_flatten(p, is_leaf=_is_spec)
        if sub.kind is not None and (sub.kind != td.kind or len(sub.children) != len(td.children)):
            raise ValueError(f"{what}: {sub} is not a prefix of the argument structure {td}")
        items = _children(p)
        for c, t in zip(items, td.children):
            rec(c, t)

    rec(prefix, treedef)
    return out


def _children(p):
    if isinstance(p, dict):
        return [p[k] for k in sorted(p)]
    return list(p)


class SingleDeviceSharding:
    """An array wholly on one device (what `device_put(x, device)` gives)."""

    def __init__(self, device, *, memory_kind: str | None = None):
        self._device = device
        self.memory_kind = memory_kind

    @property
    def device_set(self) -> set:
        return {self._device}

    is_fully_replicated = True
    is_fully_addressable = True
    num_devices = 1

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(global_shape)

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def is_equivalent_to(self, other, ndim: int) -> bool:
        """Whether `other` puts every element of a rank-`ndim` array on the same devices."""
        return placements_equal(self, other, ndim)

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self):
        return hash(("SingleDeviceSharding", self._device))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r})"


def named_sharding_of(buf) -> NamedSharding | None:
    """The NamedSharding of a device buffer split over several devices, else None."""
    parts = backend_spmd.sharding_parts(buf)
    if parts is None:
        return None
    devices, axis_names, spec = parts
    return NamedSharding(Mesh(devices, axis_names), PartitionSpec(*spec))
