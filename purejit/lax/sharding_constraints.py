"""`with_sharding_constraint`: lay a value out over a mesh inside a program, as JAX's.

Under a trace it is the `sharding_constraint` op, the identity on values that tells XLA's
partitioner how to split the value over the mesh's devices; the program it appears in is
compiled over that mesh (as JAX's `jit` partitions a function that holds a constraint).
Outside any trace a concrete array is placed with `device_put`.
"""

from __future__ import annotations

from purejit.lax._lift import lift as _lift
from purejit.runtime.mesh import NamedSharding, broadcast_prefix
from purejit.runtime.mesh_context import resolve
from purejit.runtime.placement import device_put
from purejit.tracing import Tracer, bind1
from purejit.tree_util import tree_flatten, tree_unflatten


def _constrain(x, sharding):
    if sharding is None:
        return x
    ns = resolve(sharding, "with_sharding_constraint")
    if not isinstance(ns, NamedSharding):
        if isinstance(x, Tracer):
            raise NotImplementedError(
                f"with_sharding_constraint: {type(ns).__name__} inside a program; give a "
                "NamedSharding (or a PartitionSpec with a mesh in context)"
            )
        return device_put(x, getattr(ns, "_device", ns))
    v = _lift(x)
    ns.shard_shape(v.shape)  # raises when a dimension does not split evenly
    if not isinstance(v, Tracer):
        return device_put(v, ns)
    mesh = ns.mesh
    return bind1(
        "sharding_constraint",
        v,
        axis_names=tuple(mesh.axis_names),
        mesh_shape=tuple(mesh.mesh_shape),
        device_ids=tuple(mesh.device_ids),
        spec=tuple(tuple(d) for d in ns.spec.dims(v.ndim)),
    )


def with_sharding_constraint(x, shardings):
    """`x` (a pytree) laid out as `shardings` says (NamedSharding, PartitionSpec with a mesh
    in context, or None for no constraint; a pytree prefix of x), as
    `jax.lax.with_sharding_constraint`. Values are unchanged."""
    leaves, tree = tree_flatten(x)
    per_leaf = broadcast_prefix(shardings, tree, "with_sharding_constraint")
    return tree_unflatten(tree, [_constrain(v, s) for v, s in zip(leaves, per_leaf)])
