"""Meshes and shardings: `Mesh`, `PartitionSpec` (`P`), `NamedSharding`, `make_mesh`,
`device_put`.

    mesh = Mesh(np.array(purejit.devices()).reshape(4, 2), ("x", "y"))
    xs = purejit.device_put(x, NamedSharding(mesh, PartitionSpec("x", None)))

The partition id of a device is its row-major position in `mesh.devices`; collectives and the
compiled program's device assignment use it. The index math lives in `purejit.ir.spmd` so the
IR interpreter shares it; the classes live in `purejit.runtime.mesh`.
"""

import enum
import math
from typing import Sequence

from purejit.compiler.spmd import ProgramLayout, plan_layout
from purejit.runtime.mesh import (
    Mesh,
    NamedSharding,
    PartitionSpec,
    SingleDeviceSharding,
    make_mesh,
)
from purejit.runtime.placement import device_put as _device_put
from purejit.runtime.placement import sharding_of

P = PartitionSpec


class _ShardingMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, (NamedSharding, SingleDeviceSharding))


class Sharding(metaclass=_ShardingMeta):
    """Any purejit sharding (`NamedSharding`, `SingleDeviceSharding`), for `isinstance`."""


class AxisType(enum.Enum):
    """How a mesh axis is sharded: purejit supports `Auto` (XLA's partitioner decides, the
    default) and `Manual` (inside `shard_map`); `Explicit` (sharding in types) raises where
    a mesh asks for it."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()


class AbstractMesh:
    """A mesh's axis names and sizes without devices (for shapes and specs)."""

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str], axis_types=None):
        if len(axis_sizes) != len(axis_names):
            raise ValueError(f"AbstractMesh: {len(axis_names)} names for sizes {axis_sizes}")
        self.axis_sizes = tuple(int(s) for s in axis_sizes)
        self.axis_names = tuple(axis_names)
        self.axis_types = tuple(axis_types or (AxisType.Auto,) * len(self.axis_names))

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    def __eq__(self, other):
        return isinstance(other, AbstractMesh) and (
            (self.axis_sizes, self.axis_names, self.axis_types)
            == (other.axis_sizes, other.axis_names, other.axis_types)
        )

    def __hash__(self):
        return hash((self.axis_sizes, self.axis_names, self.axis_types))

    def __repr__(self):
        return f"AbstractMesh({self.shape})"


def device_put(x, sharding=None):
    """Place `x` (a pytree of arrays) on a device or split it over devices (see
    `purejit.runtime.placement.device_put`); a `SingleDeviceSharding` means its device."""
    from purejit import tree_util

    if isinstance(sharding, SingleDeviceSharding):
        sharding = sharding._device
    return tree_util.tree_map(lambda leaf: _device_put(leaf, sharding), x)


__all__ = [
    "AbstractMesh",
    "AxisType",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "ProgramLayout",
    "Sharding",
    "SingleDeviceSharding",
    "device_put",
    "make_mesh",
    "plan_layout",
    "sharding_of",
]
