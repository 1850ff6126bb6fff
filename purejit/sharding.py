"""Meshes and shardings: `Mesh`, `PartitionSpec` (`P`), `NamedSharding`, `make_mesh`,
`device_put`.

    mesh = Mesh(np.array(purejit.devices()).reshape(4, 2), ("x", "y"))
    xs = purejit.device_put(x, NamedSharding(mesh, PartitionSpec("x", None)))

The partition id of a device is its row-major position in `mesh.devices`; collectives and the
compiled program's device assignment use it. The index math lives in `purejit.ir.spmd` so the
IR interpreter shares it; the classes live in `purejit.runtime.mesh`.
"""

import enum
import functools
import math
from typing import Sequence

from purejit.compiler.spmd import ProgramLayout, plan_layout
from purejit.environment import MemorySpace
from purejit.lax.sharding_constraints import with_sharding_constraint
from purejit.runtime import mesh_context
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

    @property
    def empty(self) -> bool:
        """No axes (what `get_abstract_mesh` gives outside any mesh context)."""
        return not self.axis_sizes

    @property
    def are_all_axes_auto(self) -> bool:
        return bool(self.axis_types) and all(t is AxisType.Auto for t in self.axis_types)

    @property
    def are_all_axes_explicit(self) -> bool:
        return bool(self.axis_types) and all(t is AxisType.Explicit for t in self.axis_types)

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

    if isinstance(sharding, MemorySpace):
        if sharding is not MemorySpace.Device:
            raise NotImplementedError(
                f"device_put to {sharding}: purejit keeps every array in device memory "
                "(no pinned-host or unpinned-host memory kinds)"
            )
        sharding = None
    if isinstance(sharding, SingleDeviceSharding):
        sharding = sharding._device
    sharding = mesh_context.resolve(sharding, "device_put")
    from purejit.tracing import Tracer

    def put(leaf):
        # inside a transformation, as JAX's device_put: a NamedSharding constrains the
        # value's layout, a device or None leaves it as it is (placement is the program's)
        if isinstance(leaf, Tracer):
            if isinstance(sharding, NamedSharding):
                return with_sharding_constraint(leaf, sharding)
            return leaf
        return _device_put(leaf, sharding)

    return tree_util.tree_map(put, x)


# ---- the mesh in context, and resharding ------------------------------------------------------

set_mesh = mesh_context.set_mesh


def get_mesh():
    """The mesh set in this thread with `set_mesh` (an empty mesh, `.empty`, when none)."""
    mesh = mesh_context.current()
    return mesh_context.EMPTY if mesh is None else mesh


def use_abstract_mesh(mesh: AbstractMesh):
    """Set this thread's abstract mesh (axis names and sizes) for a `with` block, as
    `jax.sharding.use_abstract_mesh`."""
    if not isinstance(mesh, AbstractMesh):
        raise TypeError(f"use_abstract_mesh: expected an AbstractMesh, got {type(mesh).__name__}")
    return mesh_context.use_abstract(mesh)


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in context: the one `use_abstract_mesh` set, else that of the mesh
    `set_mesh` set, else an empty one (as `jax.sharding.get_abstract_mesh`)."""
    am = mesh_context.current_abstract()
    if am is not None:
        return am
    mesh = mesh_context.current()
    if mesh is None:
        return AbstractMesh((), ())
    return AbstractMesh(mesh.mesh_shape, mesh.axis_names)


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
    """The sharding of an array wholly on `device`."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def reshard(xs, out_shardings):
    """`xs` (a pytree) laid out as `out_shardings` (NamedShardings or PartitionSpecs with a
    mesh in context; a pytree prefix), as `jax.reshard`: inside a program a sharding
    constraint, outside one a `device_put`. purejit's shardings are placements, not part of
    an array's type (JAX's explicit sharding), so this is `with_sharding_constraint`."""
    return with_sharding_constraint(xs, out_shardings)


def _sharded_fn(f, name: str, axes, place, before: bool):
    if f is None:
        return lambda g: _sharded_fn(g, name, axes, place, before)

    @functools.wraps(f)
    def run(*args, **kwargs):
        if before and place is not None:
            args = reshard(args, place)
        out = f(*args, **kwargs)
        return reshard(out, place) if not before and place is not None else out

    return run


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """`f` with mesh `axes` left to XLA's partitioner, its results laid out as
    `out_sharding`, as `jax.sharding.auto_axes`. Every purejit mesh axis is automatic (no
    sharding in types), so this runs `f` and reshards its results."""
    return _sharded_fn(f, "auto_axes", axes, out_sharding, before=False)


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """`f` on arguments laid out as `in_sharding`, as `jax.sharding.explicit_axes`. purejit
    has no explicit (typed) sharding mode, in which JAX would check each op's shardings:
    the arguments are resharded and `f` runs with XLA's partitioner placing the rest."""
    return _sharded_fn(f, "explicit_axes", axes, in_sharding, before=True)


__all__ = [
    "auto_axes",
    "explicit_axes",
    "get_abstract_mesh",
    "get_mesh",
    "make_single_device_sharding",
    "reshard",
    "set_mesh",
    "use_abstract_mesh",
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
