"""The mesh in context (JAX's `jax.set_mesh`, `use_abstract_mesh`): with one set, a bare
`PartitionSpec` stands for `NamedSharding(mesh, spec)` wherever a sharding is taken, and
`shard_map` may omit its mesh. The setting is this thread's, as JAX's."""

from __future__ import annotations

import threading

import numpy as np

from purejit.runtime.mesh import Mesh, NamedSharding, PartitionSpec

_state = threading.local()


class EmptyMesh:
    """What `get_mesh()` gives with no mesh set (JAX's empty `Mesh`)."""

    empty = True
    axis_names: tuple = ()
    mesh_shape: tuple = ()
    shape: dict = {}
    size = 0
    devices = np.empty((0,), dtype=object)
    device_ids: tuple = ()

    def __repr__(self):
        return "Mesh(axis_sizes=(), axis_names=())"


EMPTY = EmptyMesh()


def current() -> Mesh | None:
    """The concrete mesh set in this thread, or None."""
    return getattr(_state, "mesh", None)


def current_abstract():
    """The abstract mesh set in this thread with `use_abstract_mesh`, or None."""
    return getattr(_state, "abstract", None)


class set_mesh:  # noqa: N801 (JAX's name; a function that is also a context manager)
    """Set the mesh of this thread (as `jax.set_mesh`): at once, and, used as `with
    set_mesh(mesh):`, only for the block (the previous one comes back after it).

    Args:
        mesh: a `purejit.sharding.Mesh`, or None to unset.
    """

    def __init__(self, mesh: Mesh | None):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(f"set_mesh: expected a Mesh or None, got {type(mesh).__name__}")
        self.previous = (current(), current_abstract())
        _state.mesh = mesh
        _state.abstract = None

    def __enter__(self):
        return _state.mesh

    def __exit__(self, *exc):
        _state.mesh, _state.abstract = self.previous
        return False


class use_abstract:  # noqa: N801
    """Set this thread's abstract mesh for a `with` block."""

    def __init__(self, abstract_mesh):
        self.abstract_mesh = abstract_mesh

    def __enter__(self):
        self.previous = current_abstract()
        _state.abstract = self.abstract_mesh
        return self.abstract_mesh

    def __exit__(self, *exc):
        _state.abstract = self.previous
        return False


def resolve(sharding, what: str):
    """`sharding` as a NamedSharding: a bare PartitionSpec, or a NamedSharding over an
    AbstractMesh (axis names and sizes, no devices: what Flax builds from
    `get_abstract_mesh()`), takes the mesh in context."""
    if isinstance(sharding, NamedSharding) and not hasattr(sharding.mesh, "devices"):
        mesh, am = current(), sharding.mesh
        shape = tuple(zip(am.axis_names, am.axis_sizes))
        if mesh is None or tuple(zip(mesh.axis_names, mesh.mesh_shape)) != shape:
            raise ValueError(
                f"{what}: a NamedSharding over {am!r} needs a mesh of those axes in context "
                f"(have {mesh!r}); use `with purejit.sharding.set_mesh(mesh):`"
            )
        return NamedSharding(mesh, sharding.spec)
    if isinstance(sharding, PartitionSpec):
        mesh = current()
        if mesh is None:
            raise ValueError(
                f"{what}: a bare PartitionSpec {sharding!r} needs a mesh in context; use "
                "`with purejit.sharding.set_mesh(mesh):` or pass NamedSharding(mesh, spec)"
            )
        return NamedSharding(mesh, sharding)
    return sharding
