"""Collectives over named mesh axes, for `purejit.shard_map` bodies (JAX's `lax` names).

`axis_name` is one mesh axis name or a tuple of them (combined, the first one major). Each
function maps over a pytree of arrays and binds one IR collective per leaf, with replica
groups computed from the mesh of the enclosing shard_map.

Inside `purejit.vmap(f, axis_name=name)` the name is a vmapped axis: `f` is traced on one
example, so a collective over `name` is recorded with the attribute `axis_name=name` (and
replica groups over the axis size) for vmap's batching rules to turn into an operation
over the batch dimension.

Inside a shard_map body each collective also records the mesh axes it runs over (`axes`),
which `purejit.ir.vma` types the body with; under `check_vma=True` a psum is JAX's typed
psum (`invariant=True`: its transpose is `pvary`), and `pvary` marks a value as varying.
"""

from __future__ import annotations

import contextlib

import numpy as np

from purejit import errors
from purejit.tracing import JitTracer, Tracer, bind1, context
from purejit.ir import Function, spmd, vma
from purejit.lax._lift import lift as _lift
from purejit.lax.ops import expand_dims, squeeze
from purejit.tree_util import tree_map

# the meshes of the shard_map bodies and the vmapped axes being traced are this thread's
# (`TraceContext.axis_env`, innermost last): another thread's bindings never name an axis


class VmapAxis:
    """A vmapped axis in the axis environment, looked up like a one-axis mesh."""

    def __init__(self, name, size: int):
        self.name = name
        self.axis_names = (name,)
        self.mesh_shape = (int(size),)
        self.shape = {name: int(size)}

    def __repr__(self):
        return f"vmap axis {self.name!r} of size {self.mesh_shape[0]}"


class ManualAxes:
    """The mesh of a shard_map body being traced, and whether its values are typed by the
    mesh axes they vary over (`check_vma`)."""

    devices_bound = True  # its axes are devices (remat's default reads it)

    def __init__(self, mesh, check_vma: bool):
        self.mesh = mesh
        self.axis_names = tuple(mesh.axis_names)
        self.mesh_shape = tuple(mesh.mesh_shape)
        self.shape = dict(mesh.shape)
        self.check_vma = bool(check_vma)
        self.trace = None  # the JitTrace recording the body, once it starts
        self.in_vma: list = []  # the varying axes of the body's inputs

    def __repr__(self):
        return repr(self.mesh)


def in_axis_env() -> bool:
    """Whether a shard_map body is being traced."""
    return any(not isinstance(m, VmapAxis) for m in context.axis_env())


@contextlib.contextmanager
def vmap_axis(name, size: int):
    """Bind `name` as a vmapped axis of `size` for the collectives traced in this block
    (nothing when `name` is None)."""
    if name is None:
        yield
        return
    with context.binding_axes(VmapAxis(name, size)):
        yield


def _named(mesh, axis_name=None, reduces: bool = False) -> dict:
    """The extra attributes of a collective: the vmapped axis it runs over, or the mesh axes
    (and, for a psum under check_vma, that it is the typed one)."""
    if isinstance(mesh, VmapAxis):
        return {"axis_name": mesh.name}
    if axis_name is None:
        return {}
    out = {"axes": _axes(axis_name)}
    if reduces and getattr(mesh, "check_vma", False):
        out["invariant"] = True
    return out


@contextlib.contextmanager
def axis_env(mesh, check_vma: bool = False):
    """Bind the axis names of `mesh` for the collectives traced in this block."""
    with context.binding_axes(ManualAxes(mesh, check_vma)) as frame:
        yield frame


def current_mesh(axis_name, what: str):
    """The mesh of the innermost shard_map being traced; raises if `axis_name` is unbound."""
    names = (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)
    env = context.axis_env()
    if not env:
        raise NameError(
            f"{what}: unbound axis name {axis_name!r}{errors.at(errors.user_location())}: "
            "collectives run inside purejit.shard_map bodies"
        )
    for frame in reversed(env):  # the innermost vmap axis or mesh naming them all
        if all(a in frame.axis_names for a in names):
            return frame
    mesh = env[-1]
    missing = [a for a in names if a not in mesh.axis_names]
    if missing:
        raise NameError(
            f"{what}: axis names {missing} are not bound by the enclosing shard_map mesh or "
            f"vmap ({mesh!r}){errors.at(errors.user_location())}"
        )
    return mesh


def _axes(axis_name) -> tuple[str, ...]:
    return (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)


def _groups(axis_name, what):
    mesh = current_mesh(axis_name, what)
    axes = _axes(axis_name)
    return mesh, axes, spmd.replica_groups(mesh.mesh_shape, mesh.axis_names, axes)


def axis_size(axis_name) -> int:
    """The number of devices along `axis_name` (a product for several axes)."""
    mesh = current_mesh(axis_name, "axis_size")
    return int(np.prod([mesh.shape[a] for a in _axes(axis_name)], dtype=np.int64))


def _all_reduce(x, axis_name, computation, what):
    if not _axes(axis_name):
        return x
    mesh, _, groups = _groups(axis_name, what)

    def one(leaf):
        leaf = _lift(leaf)
        if computation == "add" and leaf.dtype == np.bool_:
            raise errors.PurejitTypeError(
                f"{what}: cannot sum a bool array{errors.at(errors.user_location())}; "
                "convert it to an integer type first"
            )
        return bind1(
            "all_reduce",
            leaf,
            replica_groups=groups,
            computation=computation,
            **_named(mesh, axis_name, reduces=True),
        )

    return tree_map(one, x)


def psum(x, axis_name):
    """Sum `x` over the devices along `axis_name`; every device gets the total."""
    return _all_reduce(x, axis_name, "add", "psum")


def pmax(x, axis_name):
    """Elementwise maximum over the devices along `axis_name`."""
    return _all_reduce(x, axis_name, "maximum", "pmax")


def pmin(x, axis_name):
    """Elementwise minimum over the devices along `axis_name`."""
    return _all_reduce(x, axis_name, "minimum", "pmin")


def pmean(x, axis_name):
    """Mean over the devices along `axis_name` (integers give floats, as in JAX)."""
    n = axis_size(axis_name)
    return tree_map(lambda s: s / n, psum(x, axis_name))


def all_gather(x, axis_name, *, axis: int = 0, tiled: bool = False):
    """Gather the shards along `axis_name`: stacked on a new `axis`, or concatenated (tiled)."""

    mesh, _, groups = _groups(axis_name, "all_gather")

    def one(leaf):
        leaf = _lift(leaf)
        ax = axis + leaf.ndim + (0 if tiled else 1) if axis < 0 else axis
        if not tiled:
            leaf = expand_dims(leaf, [ax])
        return bind1(
            "all_gather", leaf, replica_groups=groups, all_gather_dim=ax, **_named(mesh, axis_name)
        )

    return tree_map(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, tiled: bool = False):
    """Sum over `axis_name` and keep this device's piece along `scatter_dimension`.

    Untiled, that dimension's size must equal the axis size and it is removed.
    """

    mesh, _, groups = _groups(axis_name, "psum_scatter")
    n = len(groups[0])

    def one(leaf):
        leaf = _lift(leaf)
        d = scatter_dimension % max(leaf.ndim, 1)
        if not tiled and leaf.shape[d] != n:
            raise errors.PurejitTypeError(
                f"psum_scatter: dimension {d} of {leaf.aval} must equal the axis size {n} "
                f"when tiled=False{errors.at(errors.user_location())}"
            )
        out = bind1(
            "reduce_scatter",
            leaf,
            replica_groups=groups,
            scatter_dimension=d,
            computation="add",
            **_named(mesh, axis_name),
        )
        return out if tiled else squeeze(out, [d])

    return tree_map(one, x)


def ppermute(x, axis_name, perm):
    """Send each device's value to another along `axis_name`: `perm` holds (source, target)
    pairs of axis indices; devices no pair targets receive zeros."""
    mesh, _, groups = _groups(axis_name, "ppermute")
    n = len(groups[0])
    perm = [(int(s), int(t)) for s, t in perm]
    for s, t in perm:
        if not (0 <= s < n and 0 <= t < n):
            raise ValueError(f"ppermute: pair {(s, t)} out of range for axis size {n}")
    pairs = tuple((g[s], g[t]) for g in groups for s, t in perm)
    return tree_map(
        lambda leaf: bind1(
            "collective_permute", _lift(leaf), source_target_pairs=pairs, **_named(mesh, axis_name)
        ),
        x,
    )


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, tiled: bool = False):
    """Split `split_axis` in axis-size pieces, send piece k to device k, concatenate what
    arrives along `concat_axis`. Untiled: `split_axis` has the axis size and is removed, a new
    axis of that size is inserted at `concat_axis` (JAX's semantics)."""

    mesh, _, groups = _groups(axis_name, "all_to_all")
    n = len(groups[0])

    def one(leaf):
        leaf = _lift(leaf)
        s, c = split_axis % leaf.ndim, concat_axis
        if tiled:
            return bind1(
                "all_to_all",
                leaf,
                replica_groups=groups,
                split_dimension=s,
                concat_dimension=c % leaf.ndim,
                split_count=n,
                **_named(mesh, axis_name),
            )
        if leaf.shape[s] != n:
            raise errors.PurejitTypeError(
                f"all_to_all: dimension {s} of {leaf.aval} must equal the axis size {n} when "
                f"tiled=False{errors.at(errors.user_location())}"
            )
        c = c % leaf.ndim
        cx = c if c <= s else c + 1  # where the new axis goes, in the input's coordinates
        sx = s + 1 if c <= s else s
        y = bind1(
            "all_to_all",
            expand_dims(leaf, [cx]),
            replica_groups=groups,
            split_dimension=sx,
            concat_dimension=cx,
            split_count=n,
            **_named(mesh, axis_name),
        )
        return squeeze(y, [sx])

    return tree_map(one, x)


def axis_index(axis_name):
    """This device's index along `axis_name` (int32; several axes combine, first major)."""
    mesh = current_mesh(axis_name, "axis_index")
    shape, names = mesh.mesh_shape, mesh.axis_names
    pid = bind1("partition_id", **_named(mesh, axis_name))
    idx = None
    for a in _axes(axis_name):
        k = names.index(a)
        stride = int(np.prod(shape[k + 1 :], dtype=np.int64))
        c = bind1("divide", pid, np.asarray(stride, np.uint32)) if stride > 1 else pid
        c = bind1("remainder", c, np.asarray(shape[k], np.uint32))
        if idx is None:
            idx = c
        else:
            idx = bind1("add", bind1("multiply", idx, np.asarray(shape[k], np.uint32)), c)
    if idx is None:
        return _lift(np.int32(0))
    return bind1("convert", idx, dtype=np.dtype(np.int32))


def pvary(x, axis_name):
    """Mark `x` as varying over the mesh axes `axis_name` (JAX's `pvary`): the identity on
    values, which makes reverse mode sum the cotangent over those axes. Outside a
    `check_vma=True` shard_map (and over vmapped axes) it returns `x`."""
    axes = _axes(axis_name)
    if not axes:
        return x
    mesh = current_mesh(axis_name, "pvary")
    if isinstance(mesh, VmapAxis) or not getattr(mesh, "check_vma", False):
        return x
    ordered = tuple(a for a in mesh.axis_names if a in axes)
    groups = spmd.replica_groups(mesh.mesh_shape, mesh.axis_names, ordered)
    return tree_map(
        lambda leaf: bind1("pvary", _lift(leaf), axes=ordered, replica_groups=groups), x
    )


def pcast(x, axis_name, *, to: str):
    """JAX's `pcast`: `to="varying"` is `pvary`; the reduced/unreduced types are not
    implemented."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
    allowed = ("varying", "reduced", "unreduced", "invarying")
    if to not in allowed:
        raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: {allowed}")
    if to != "varying":
        raise NotImplementedError(
            f"pcast(to={to!r}): purejit types shard_map values as varying or invariant only "
            "(check_vma); reduced and unreduced types are not implemented"
        )
    return pvary(x, axis_name)


def typed_in_body(fn: Function, args) -> Function:
    """`fn`, about to be differentiated on `args` inside a `check_vma` shard_map body, with
    the body's typing: the mesh axes each argument varies over (read off the body traced so
    far) and JAX's implicit `pvary`s inserted, so that reverse mode sums the cotangents of
    invariant values over devices as JAX does. Elsewhere (or when an argument comes from a
    trace other than the body's) `fn` itself."""
    env = context.axis_env()
    frame = env[-1] if env else None
    if not isinstance(frame, ManualAxes) or not frame.check_vma or frame.trace is None:
        return fn
    trace = frame.trace
    known = []
    for a in args:
        if isinstance(a, JitTracer) and a.trace is trace:
            known.append(a.value)
        elif isinstance(a, Tracer):
            return fn
        else:
            known.append(None)  # a constant: invariant
    params = trace.builder.params
    so_far = Function("body_so_far", params, trace.builder.ops, [v for v in known if v])
    in_vma = list(frame.in_vma) + [frozenset()] * (len(params) - len(frame.in_vma))
    _, got = vma.annotate(so_far, in_vma, frame.axis_names, frame.mesh_shape)
    it = iter(got)
    arg_vma = [next(it) if v is not None else frozenset() for v in known]
    typed, _ = vma.annotate(fn, arg_vma, frame.axis_names, frame.mesh_shape)
    return typed
