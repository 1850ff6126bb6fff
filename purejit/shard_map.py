"""`purejit.shard_map`: write the per-device program, run it on every device of a mesh.

    @partial(purejit.shard_map, mesh=mesh, in_specs=(P("x", None), P()), out_specs=P("x"))
    def f(x_block, w):
        return purejit.lax.psum(x_block @ w, "x")

The body is traced once on per-device shapes into an IR region; the call becomes one
`manual_computation` op (Shardy's `sdy.manual_computation`, every mesh axis manual). Outside
jit the call is compiled and run as a one-op jitted program. Values the body closes over are
replicated inputs. Collectives (`purejit.lax.psum`, `all_gather`, `ppermute`, ...) look their
axis names up in the mesh of the innermost shard_map being traced.
"""

from __future__ import annotations

import functools
from typing import Callable

from purejit import errors
from purejit.api import disable_jit, jit
from purejit.tracing import ShapedArray, aval_of, bind, current_trace, trace_to_function
from purejit.runtime.eager import EvalTrace
from purejit.ir import spmd
from purejit.lax.parallel import axis_env, in_axis_env
from purejit.runtime.mesh import Mesh, NamedSharding, broadcast_prefix
from purejit.tree_util import tree_flatten, tree_unflatten


def _dims(spec, rank: int, what: str) -> spmd.Spec:
    if spec is None:
        return ((),) * rank
    if isinstance(spec, NamedSharding):
        spec = spec.spec
    try:
        return spec.dims(rank)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None


class ShardMapped:
    """A function wrapped by `purejit.shard_map`."""

    def __init__(self, f: Callable, mesh: Mesh, in_specs, out_specs):
        functools.update_wrapper(self, f)
        self.f = f
        self.mesh = mesh
        self.in_specs = in_specs
        self.out_specs = out_specs
        self._jitted = None

    def __call__(self, *args):
        if isinstance(current_trace(), EvalTrace):
            # outside jit: compile the one manual computation (even under disable_jit, as
            # the per-device body only exists as an SPMD program)
            if self._jitted is None:
                self._jitted = jit(self._bind)
                self._jitted.__name__ = getattr(self.f, "__name__", "shard_map")
            with disable_jit(False):
                return self._jitted(*args)
        return self._bind(*args)

    def _bind(self, *args):
        name = getattr(self.f, "__name__", "shard_map")
        if in_axis_env():
            raise NotImplementedError(f"shard_map {name}: a shard_map nested in another one")
        mesh = self.mesh
        leaves, in_tree = tree_flatten(args)
        specs = broadcast_prefix(
            tuple(self.in_specs) if isinstance(self.in_specs, list) else self.in_specs,
            in_tree,
            f"shard_map {name} in_specs",
        )
        sizes = mesh.shape
        in_dims, local = [], []
        for i, (x, s) in enumerate(zip(leaves, specs)):
            a = aval_of(x)
            d = _dims(s, a.ndim, f"shard_map {name} in_specs[{i}]")
            try:
                shape = spmd.local_shape(f"shard_map {name}", a.shape, d, sizes)
            except spmd.SpmdError as e:
                raise errors.PurejitTypeError(
                    f"{e} (argument {i}: {a}){errors.at(errors.user_location())}"
                ) from None
            in_dims.append(d)
            local.append(ShapedArray(shape, a.dtype, a.weak_type))
        out_tree_box = []

        def body(*tracers):
            out = self.f(*tree_unflatten(in_tree, list(tracers)))
            out_leaves, out_tree = tree_flatten(out)
            out_tree_box.append(out_tree)
            return out_leaves

        with axis_env(mesh):
            traced = trace_to_function(body, local, name=f"{name}_body")
        out_tree = out_tree_box[0]
        out_specs = broadcast_prefix(self.out_specs, out_tree, f"shard_map {name} out_specs")
        out_dims = [
            _dims(s, a.ndim, f"shard_map {name} out_specs[{i}]")
            for i, (s, a) in enumerate(zip(out_specs, traced.out_avals))
        ]
        for c in traced.captures:  # closed-over values are replicated inputs
            in_dims.append(((),) * c.aval.ndim)
        outs = bind(
            "manual_computation",
            *leaves,
            *traced.captures,
            regions=[traced.fn],
            weak=tuple(a.weak_type for a in traced.out_avals),
            axis_names=mesh.axis_names,
            mesh_shape=mesh.mesh_shape,
            device_ids=mesh.device_ids,
            in_specs=tuple(in_dims),
            out_specs=tuple(out_dims),
        )
        return tree_unflatten(out_tree, outs)


def shard_map(
    f: Callable | None = None, *, mesh: Mesh, in_specs, out_specs, check_rep=False, check_vma=False
):
    """Map a per-device function over the devices of `mesh`.

    Args:
        f: the per-device body; it sees each argument's shard (local shape) and may call the
            collectives of `purejit.lax` over the mesh's axis names.
        mesh: the `purejit.sharding.Mesh` to run on.
        in_specs: a PartitionSpec (or None = replicated) per argument, as a pytree prefix of
            the arguments tuple.
        out_specs: a PartitionSpec per output (pytree prefix of the outputs). Mesh axes that an
            output spec does not name are assumed replicated (not checked).
        check_rep, check_vma: accepted for JAX compatibility; replication is not checked.
    Returns:
        A function of global arrays returning global arrays.
    """
    if f is None:
        return functools.partial(shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    if not isinstance(mesh, Mesh):
        raise TypeError(
            f"shard_map: mesh must be a purejit.sharding.Mesh, got {type(mesh).__name__}"
        )
    return ShardMapped(f, mesh, in_specs, out_specs)
