"""`purejit.shard_map`: write the per-device program, run it on every device of a mesh.

    @partial(purejit.shard_map, mesh=mesh, in_specs=(P("x", None), P()), out_specs=P("x"))
    def f(x_block, w):
        return purejit.lax.psum(x_block @ w, "x")

The body is traced once on per-device shapes into an IR region; the call becomes one
`manual_computation` op (Shardy's `sdy.manual_computation`, every mesh axis manual). Outside
jit the call is compiled and run as a one-op jitted program. Values the body closes over are
replicated inputs. Collectives (`purejit.lax.psum`, `all_gather`, `ppermute`, ...) look their
axis names up in the mesh of the innermost shard_map being traced.

With `check_vma=True` (the default, as in JAX) the body's values are typed by the mesh axes
they vary over (`purejit.ir.vma`): an input varies over the axes its in_spec names, and
JAX's implicit `pvary`s are made explicit in the body, so reverse mode transposes the
collectives as JAX does; an output whose out_spec leaves out an axis it varies over is
JAX's error.
"""

from __future__ import annotations

import functools
from typing import Callable

from purejit import errors
from purejit.api import disable_jit, jit
from purejit.tracing import ShapedArray, aval_of, bind, current_trace, trace_to_function
from purejit.runtime.eager import EvalTrace
from purejit.ir import print_function, spmd, vma
from purejit.ir.printer import format_attr
from purejit.lax.parallel import axis_env, in_axis_env
from purejit.runtime import mesh_context
from purejit.runtime.mesh import Mesh, NamedSharding, broadcast_prefix
from purejit.transforms.autodiff import collective as _ad_collective
from purejit.tree_util import tree_flatten, tree_paths, tree_unflatten


_eager_programs: dict = {}


def _run_eagerly(operands, region, attrs):
    """Run one manual computation outside jit (differentiation rules bind new ones): as a
    jitted program of its own, cached by its body's text."""
    key = (print_function(region), tuple((k, format_attr(v)) for k, v in attrs.items()))
    run = _eager_programs.get(key)
    if run is None:
        if len(_eager_programs) > 256:
            _eager_programs.clear()
        run = _eager_programs[key] = jit(
            lambda *xs: bind("manual_computation", *xs, regions=[region], **attrs)
        )
    with disable_jit(False):
        return run(*operands)


_ad_collective.set_eager_runner(_run_eagerly)


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

    def __init__(self, f: Callable, mesh: Mesh, in_specs, out_specs, check_vma: bool = True):
        functools.update_wrapper(self, f)
        self.f = f
        self.mesh = mesh
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.check_vma = bool(check_vma)
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
            frame.trace = current_trace()  # for differentiation inside the body (vma)
            frame.in_vma = [vma.spec_axes(d) for d in in_dims]
            out = self.f(*tree_unflatten(in_tree, list(tracers)))
            out_leaves, out_tree = tree_flatten(out)
            out_tree_box.append(out_tree)
            return out_leaves

        with axis_env(mesh, self.check_vma) as frame:
            traced = trace_to_function(body, local, name=f"{name}_body")
        out_tree = out_tree_box[0]
        out_specs = broadcast_prefix(self.out_specs, out_tree, f"shard_map {name} out_specs")
        out_dims = [
            _dims(s, a.ndim, f"shard_map {name} out_specs[{i}]")
            for i, (s, a) in enumerate(zip(out_specs, traced.out_avals))
        ]
        for c in traced.captures:  # closed-over values are replicated inputs
            in_dims.append(((),) * c.aval.ndim)
        region = traced.fn
        if self.check_vma:
            region = _typed_body(name, region, in_dims, out_dims, out_specs, out_tree, mesh)
        outs = bind(
            "manual_computation",
            *leaves,
            *traced.captures,
            regions=[region],
            weak=tuple(a.weak_type for a in traced.out_avals),
            axis_names=mesh.axis_names,
            mesh_shape=mesh.mesh_shape,
            device_ids=mesh.device_ids,
            in_specs=tuple(in_dims),
            out_specs=tuple(out_dims),
            check_vma=self.check_vma,
        )
        return tree_unflatten(out_tree, outs)


def _jax_spec(spec) -> str:
    if isinstance(spec, NamedSharding):
        spec = spec.spec
    return "P()" if spec is None else "P" + tuple.__repr__(tuple(spec))


def _typed_body(name, body, in_dims, out_dims, out_specs, out_tree, mesh):
    """The body with its varying axes made explicit; JAX's error where an out_spec claims a
    replication the body does not have."""
    try:
        body, out_vma = vma.annotate(  # outputs vary at least where their out_specs split
            body,
            [vma.spec_axes(d) for d in in_dims],
            mesh.axis_names,
            mesh.mesh_shape,
            out_vma=[vma.spec_axes(d) for d in out_dims],
            strict=True,
        )
    except vma.VmaError as e:
        raise ValueError(f"shard_map {name}: {e}{errors.at(errors.user_location())}") from None
    names = mesh.axis_names
    msgs = []
    paths = tree_paths(out_tree, "out_specs")
    for path, spec, dims, got in zip(paths, out_specs, out_dims, out_vma):
        mentioned = vma.spec_axes(dims)
        if got <= mentioned:
            continue
        unmentioned = [a for a in names if a not in mentioned]
        if len(unmentioned) > 1:
            need = ",".join(a for a in names if a in mentioned)
            diff = ",".join(a for a in unmentioned if a in got)
            have = ",".join(a for a in names if a in got)
            msgs.append(
                f"* {path} is {_jax_spec(spec)} which implies that the corresponding output "
                f"value is only varying across mesh axes {{{need}}} and not {{{diff}}}, but "
                f"it was inferred to be possibly varying over {{{have}}}"
            )
        else:
            msgs.append(
                f"* {path} is {_jax_spec(spec)} which implies that the corresponding output "
                f"value is replicated across mesh axis '{unmentioned[0]}', but could not infer "
                "replication over any axes"
            )
    if msgs:
        if len(msgs) == 1:
            msgs = [msgs[0][2:]]
        raise ValueError(
            f"shard_map applied to the function '{name}' was given out_specs which require "
            "replication which can't be statically inferred given the mesh:\n\n"
            f"The mesh given has shape {tuple(mesh.mesh_shape)} with corresponding axis names "
            f"{tuple(names)}.\n\n" + "\n\n".join(msgs) + "\n\n"
            "Check if these output values are meant to be replicated over those mesh axes. If "
            "not, consider revising the corresponding out_specs entries. If so, consider "
            "disabling the check by passing the check_vma=False argument to "
            f"`purejit.shard_map`.{errors.at(errors.user_location())}"
        )
    return body


def shard_map(
    f: Callable | None = None,
    *,
    mesh: Mesh | None = None,
    in_specs,
    out_specs,
    check_vma: bool = True,
    check_rep: bool | None = None,
):
    """Map a per-device function over the devices of `mesh`.

    Args:
        f: the per-device body; it sees each argument's shard (local shape) and may call the
            collectives of `purejit.lax` over the mesh's axis names.
        mesh: the `purejit.sharding.Mesh` to run on (default: the mesh in context, set with
            `purejit.sharding.set_mesh`).
        in_specs: a PartitionSpec (or None = replicated) per argument, as a pytree prefix of
            the arguments tuple.
        out_specs: a PartitionSpec per output (pytree prefix of the outputs). Mesh axes that an
            output spec does not name must be ones the output is invariant over.
        check_vma: type the body's values by the mesh axes they vary over, as JAX does:
            checks `out_specs`, and makes reverse mode transpose psum to `pvary` (the
            identity) and `pvary` to psum. With False, out_specs are trusted and the
            transposes are the untyped ones (a psum transposes to a psum), as in JAX.
        check_rep: the older name of `check_vma` (it wins when given).
    Returns:
        A function of global arrays returning global arrays.
    """
    if check_rep is not None:
        check_vma = bool(check_rep)
    if f is None:
        return functools.partial(
            shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_vma
        )
    if mesh is None:
        mesh = mesh_context.current()
        if mesh is None:
            raise TypeError("shard_map: pass mesh= or set one with purejit.sharding.set_mesh")
    if not isinstance(mesh, Mesh):
        raise TypeError(
            f"shard_map: mesh must be a purejit.sharding.Mesh, got {type(mesh).__name__}"
        )
    return ShardMapped(f, mesh, in_specs, out_specs, check_vma)
