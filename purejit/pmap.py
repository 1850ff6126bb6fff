"""`purejit.pmap`: JAX's `pmap`, built as JAX now builds it, as `jit` of `shard_map`.

    @functools.partial(purejit.pmap, axis_name="i")
    def f(x):                       # x: one example's slice, on its own device
        return x / purejit.lax.psum(x, "i")

    f(np.arange(8.0).reshape(8, 1)) # the leading axis: one entry per local device

The mapped axis of every argument (`in_axes`) is split over a 1-D mesh of the first `n`
local devices (`devices=` picks others), `n` being that axis's size; the body sees one
entry, without the axis, and may use the collectives of `purejit.lax` over `axis_name`.
Results gain the axis back at `out_axes` (None: an unmapped result, the same on every
device). The whole call is one jitted program holding one manual computation.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from typing import Callable

import numpy as np

from purejit import errors
from purejit.api import jit
from purejit.numpy import expand_dims, moveaxis, squeeze
from purejit.platform import default_backend, local_devices
from purejit.runtime.mesh import Mesh, PartitionSpec
from purejit.shard_map import shard_map
from purejit.tracing import aval_of
from purejit.transforms.vmap import broadcast_axes
from purejit.tree_util import tree_flatten, tree_map, tree_unflatten

_names = itertools.count()


def _index_tuple(x, what: str) -> tuple[int, ...]:
    if x is None:
        return ()
    if isinstance(x, (int, np.integer)):
        return (int(x),)
    try:
        return tuple(int(i) for i in x)
    except TypeError:
        raise TypeError(f"pmap: {what} must be an int or a sequence of ints, got {x!r}") from None


def pmap(
    fun: Callable | None = None,
    axis_name=None,
    *,
    in_axes=0,
    out_axes=0,
    static_broadcasted_argnums=(),
    devices=None,
    backend: str | None = None,
    axis_size: int | None = None,
    donate_argnums=(),
    global_arg_shapes=None,
):
    """Map `fun` over an axis of its arguments, one entry per device (JAX's `pmap`).

    Args:
        fun: the per-device function.
        axis_name: the name collectives in `fun` use for the mapped axis.
        in_axes: an int or None per argument (a pytree prefix of the positional
            arguments; keyword arguments are mapped over axis 0, as in JAX).
        out_axes: where results get the mapped axis (None: unmapped), a prefix of the results.
        static_broadcasted_argnums: positional arguments passed to `fun` as Python values
            (hashable; a new value recompiles).
        devices: the devices to run on, one per entry of the mapped axis (default: the first
            local devices).
        backend: the platform name; only the default backend's is supported.
        axis_size: the mapped size when no argument is mapped.
        donate_argnums: positional arguments whose buffers the call may reuse.
        global_arg_shapes: not supported (JAX removed it).
    Returns:
        The mapped function.
    """
    if fun is None:
        return functools.partial(
            pmap,
            axis_name=axis_name,
            in_axes=in_axes,
            out_axes=out_axes,
            static_broadcasted_argnums=static_broadcasted_argnums,
            devices=devices,
            backend=backend,
            axis_size=axis_size,
            donate_argnums=donate_argnums,
            global_arg_shapes=global_arg_shapes,
        )
    if global_arg_shapes is not None:
        raise NotImplementedError("pmap(global_arg_shapes=...) is not supported (JAX removed it)")
    if backend is not None and backend != default_backend():
        raise NotImplementedError(
            f"pmap(backend={backend!r}): purejit runs on one platform per process, here "
            f"{default_backend()!r}; leave backend=None"
        )
    return Pmapped(
        fun,
        axis_name,
        in_axes,
        out_axes,
        _index_tuple(static_broadcasted_argnums, "static_broadcasted_argnums"),
        None if devices is None else list(devices),
        axis_size,
        _index_tuple(donate_argnums, "donate_argnums"),
    )


def _axis(x, a: int) -> int:
    ndim = aval_of(x).ndim
    if not -ndim <= a < ndim:
        raise ValueError(
            f"pmap was requested to map its argument along axis {a}, which implies that its "
            f"rank should be at least {max(a + 1, -a)}, but is only {ndim} (its shape is "
            f"{aval_of(x).shape}){errors.at(errors.user_location())}"
        )
    return a % ndim


class Pmapped:
    """A function wrapped by `purejit.pmap` (see `pmap`)."""

    def __init__(self, fun, axis_name, in_axes, out_axes, static, devices, axis_size, donate):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.axis_name = f"_pmap{next(_names)}" if axis_name is None else axis_name
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.static = static
        self.devices = devices
        self.axis_size = axis_size
        self.donate = donate
        self._programs: dict = {}

    @property
    def __signature__(self):
        """The wrapped function's signature, as for a jitted function."""
        return inspect.signature(self.fun)

    def __call__(self, *args, **kwargs):
        n_args = len(args)
        static = sorted({i % n_args if n_args else i for i in self.static})
        if any(i >= n_args for i in static):
            raise ValueError(
                f"pmap: static_broadcasted_argnums {self.static} out of range for "
                f"{n_args} positional arguments{errors.at(errors.user_location())}"
            )
        dyn_idx = [i for i in range(n_args) if i not in static]
        dyn = [args[i] for i in dyn_idx]
        in_axes = self.in_axes
        if isinstance(in_axes, list):
            in_axes = tuple(in_axes)
        if isinstance(in_axes, tuple):
            if len(in_axes) != n_args:
                raise ValueError(
                    f"pmap in_axes must be an int, None, or a tuple of entries corresponding "
                    f"to the positional arguments passed to the function, but got "
                    f"len(in_axes)={len(in_axes)}, len(args)={n_args}"
                    f"{errors.at(errors.user_location())}"
                )
            in_axes = tuple(in_axes[i] for i in dyn_idx)
        else:
            in_axes = (in_axes,) * len(dyn)
        leaves, treedef = tree_flatten((tuple(dyn), kwargs))
        axes = broadcast_axes((in_axes, 0), treedef, "in_axes")
        axes = [None if a is None else _axis(x, a) for x, a in zip(leaves, axes)]
        n = self._size(leaves, axes)
        devices = self._devices(n)
        statics = tuple((i, args[i]) for i in static)
        try:
            key = (treedef, tuple(axes), n, tuple(d.id for d in devices), statics)
            hash(key)
        except TypeError:
            raise ValueError(
                "pmap: static_broadcasted_argnums arguments must be hashable"
                f"{errors.at(errors.user_location())}"
            ) from None
        program = self._programs.get(key)
        if program is None:
            if len(self._programs) > 64:
                self._programs.clear()
            program = self._programs[key] = self._build(treedef, axes, devices, statics)
        return program(*leaves)

    def _size(self, leaves, axes) -> int:
        sizes = {aval_of(x).shape[a] for x, a in zip(leaves, axes) if a is not None}
        if self.axis_size is not None:
            sizes.add(int(self.axis_size))
        if len(sizes) > 1:
            raise ValueError(
                f"pmap got inconsistent sizes for array axes to be mapped: {sorted(sizes)}"
                f"{errors.at(errors.user_location())}"
            )
        if not sizes:
            raise ValueError(
                "pmap must have at least one non-None value in in_axes or axis_size must be "
                f"specified{errors.at(errors.user_location())}"
            )
        return sizes.pop()

    def _devices(self, n: int) -> list:
        if self.devices is not None:
            if len(self.devices) != n:
                raise ValueError(
                    f"pmap: the mapped axis has size {n} but devices= lists "
                    f"{len(self.devices)} devices{errors.at(errors.user_location())}"
                )
            return self.devices
        local = local_devices()
        if n > len(local):
            raise ValueError(
                f"compiling computation that requires {n} logical devices, but only "
                f"{len(local)} XLA devices are available (num_replicas={n})"
                f"{errors.at(errors.user_location())}"
            )
        return local[:n]

    def _build(self, treedef, axes, devices, statics):
        name = self.axis_name
        mesh = Mesh(np.array(devices, dtype=object), (name,))
        fun = self.fun

        def call(*block_leaves):
            vals = [b if a is None else squeeze(b, 0) for b, a in zip(block_leaves, axes)]
            dyn, kwargs = tree_unflatten(treedef, vals)
            it = iter(dyn)
            full = [v for _, v in statics]
            args, given = [], dict(statics)
            for i in range(len(dyn) + len(full)):
                args.append(given[i] if i in given else next(it))
            return fun(*args, **kwargs)

        out_axes_spec = self.out_axes

        def body(*block_leaves):
            outs, out_tree = tree_flatten(call(*block_leaves))
            out_axes = broadcast_axes(out_axes_spec, out_tree, "out_axes")
            outs = [o if a is None else expand_dims(o, 0) for o, a in zip(outs, out_axes)]
            return tree_unflatten(out_tree, outs)

        in_specs = tuple(PartitionSpec() if a is None else PartitionSpec(name) for a in axes)
        out_specs = tree_map(
            lambda a: PartitionSpec() if a is None else PartitionSpec(name),
            out_axes_spec,
            is_leaf=lambda a: a is None,
        )
        mapped = shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)

        def program(*xs):
            xs = [x if a in (None, 0) else moveaxis(x, a, 0) for x, a in zip(xs, axes)]
            outs, out_tree = tree_flatten(mapped(*xs))
            out_axes = broadcast_axes(out_axes_spec, out_tree, "out_axes")
            outs = [
                o if a in (None, 0) else moveaxis(o, 0, a % aval_of(o).ndim)
                for o, a in zip(outs, out_axes)
            ]
            return tree_unflatten(out_tree, outs)

        return jit(program, donate_argnums=self._donated_leaves(treedef, statics))

    def _donated_leaves(self, treedef, statics) -> tuple[int, ...]:
        if not self.donate:
            return ()
        (dyn, kwargs) = tree_unflatten(treedef, list(range(treedef.num_leaves)))
        static_idx = {i for i, _ in statics}
        positions = [i for i in range(len(dyn) + len(static_idx)) if i not in static_idx]
        out = []
        for k, i in enumerate(positions):
            if i in self.donate:
                out.extend(tree_flatten(dyn[k])[0])
        return tuple(out)
