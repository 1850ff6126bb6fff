"""`purejit.vmap`: map a function over an axis of its arguments, as `jax.vmap` does.

    per_example = purejit.vmap(loss, in_axes=(None, 0, 0))  # params shared, data mapped

The function is traced once on the shapes of one example (the mapped axis removed) into an
IR function, then that function is evaluated with a batching rule per op
(`purejit/transforms/batching/`), binding the batched program into whatever trace is
current. So `jit(vmap(f))` is one program, `vmap(vmap(f))` batches a program that the inner
vmap already made, and control flow and collectives inside `f` are batched by their rules.
"""

from __future__ import annotations

import collections
import functools
import inspect
import dataclasses
from typing import Any, Callable, Hashable

import numpy as np

from purejit import errors
from purejit.lax import parallel
from purejit.runtime import as_array
from purejit.tracing import JitTrace, ShapedArray, Tracer, aval_of, bind1, current_trace
from purejit.transforms._ir_eval import trace_closed
from purejit.transforms.batching import (
    AxisData,
    batch_function,
    matchaxis,
    moveaxis,
    notes,
    reduce_batch,
)
from purejit.transforms.vmap_lowering import (
    check_lowering,
    choice_key,
    choose,
    first_example,
    loop_over_batch,
    uses_axis,
    varying_results,
)
from purejit.tree_util import PyTreeDef, tree_flatten, tree_paths, tree_unflatten

_RETURNABLE = (Tracer, np.ndarray, np.generic, bool, int, float, complex)


def _is_axis(x) -> bool:
    return x is None or (isinstance(x, (int, np.integer)) and not isinstance(x, bool))


def _check_axes_spec(spec, what: str):
    leaves, _ = tree_flatten(spec, is_leaf=lambda x: x is None)
    if not all(_is_axis(x) for x in leaves):
        raise TypeError(
            f"vmap {what} must be an int, None, or (nested) container with those types as "
            f"leaves, but got {spec}."
        )


def _children(x):
    """The immediate children of pytree node `x` and its (kind, aux, arity)."""
    leaves, td = tree_flatten(x, is_leaf=lambda c: c is not x)
    return leaves, td


def broadcast_axes(prefix, treedef: PyTreeDef, what: str) -> list:
    """One axis (int or None) per leaf of `treedef`, from the tree prefix `prefix`."""
    out: list = []

    def rec(p, td: PyTreeDef, path: str):
        if _is_axis(p):
            out.extend([None if p is None else int(p)] * td.num_leaves)
            return
        kids, ptd = _children(p)
        if (
            td.kind is None
            or ptd.kind != td.kind
            or ptd.aux != td.aux
            or len(kids) != len(td.children)
        ):
            raise ValueError(
                f"vmap {what} specification must be a tree prefix of the corresponding "
                f"value; at {path or 'the root'} the specification is {p!r} but the value "
                f"has structure {td}."
            )
        for k, (c, t) in enumerate(zip(kids, td.children)):
            rec(c, t, f"{path}[{k}]")

    rec(prefix, treedef, "")
    return out


def _arg_names(fun, args, kwargs, tree: PyTreeDef) -> list[str]:
    """A readable name per input leaf: `argument x['w']` or `kwargs['y']`."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = None
    paths = tree_paths(tree)  # "[0][k]..." for args, "[1]['name']" for kwargs
    names = []
    for p in paths:
        head, _, rest = p[1:].partition("]")
        rest = rest
        if head == "0":
            idx, _, tail = rest[1:].partition("]")
            i = int(idx)
            if params is not None and i < len(params):
                names.append(f"argument {params[i]}{tail}")
            else:
                names.append(f"args[{i}]{tail}")
        else:
            names.append(f"kwargs{rest}")
    return names


def _mapped_size(fun, args, kwargs, tree, leaves, axes, axis_size) -> int:
    sizes = [None if d is None else aval_of(x).shape[d] for x, d in zip(leaves, axes)]
    found = [s for s in sizes if s is not None]
    if axis_size is not None:
        found.append(int(axis_size))
    distinct = list(dict.fromkeys(found))
    if len(distinct) == 1:
        return distinct[0]
    if not distinct:
        raise ValueError(
            "vmap must have at least one non-None value in in_axes or axis_size must be specified"
        )
    names = _arg_names(fun, args, kwargs, tree)
    lines = ["vmap got inconsistent sizes for array axes to be mapped:"]
    if axis_size is not None:
        lines.append(f"  * the `axis_size` argument was {axis_size};")
    counts = collections.Counter(s for s in sizes if s is not None).most_common()
    for k, (sz, ct) in enumerate(counts):
        i = sizes.index(sz)
        ex = f"axis {axes[i]} of {names[i]} of type {aval_of(leaves[i]).str_short()}"
        if ct == 1:
            lines.append(f"  * one axis had size {sz}: {ex};")
        elif k == 0:
            lines.append(f"  * most axes ({ct} of them) had size {sz}, e.g. {ex};")
        else:
            lines.append(f"  * some axes ({ct} of them) had size {sz}, e.g. {ex};")
    raise ValueError("\n".join(lines) + errors.at(errors.user_location()))


def _out_axis(d, ndim: int):
    """`out_axes` entry `d` of a batched result of rank `ndim`, in [0, ndim) (JAX's check)."""
    if d is None:
        return None
    if not -ndim <= d < ndim:
        raise ValueError(
            f"axis {d} is out of bounds for array of dimension {ndim}"
            f"{errors.at(errors.user_location())}"
        )
    return d % ndim


def _leaf(x):
    return x if isinstance(x, Tracer) else as_array(x)


def vmap(
    fun: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Hashable | None = None,
    axis_size: int | None = None,
    spmd_axis_name: Hashable | tuple | None = None,
    sum_match: bool = False,
    *,
    lowering: str | None = None,
) -> Callable:
    """Vectorizing map: `fun` mapped over axes of its arguments (`jax.vmap`'s semantics).

    Args:
        fun: the function of one example.
        in_axes: an int, None, or a tuple with one entry per positional argument, each a
            pytree prefix of that argument with ints (the mapped axis, negative counts from
            the end) and Nones (not mapped). Keyword arguments are mapped over axis 0.
        out_axes: the same for the outputs: where the mapped axis goes; None for outputs
            that do not vary over the batch (an error if one does, unless `sum_match`).
        axis_name: a name for the mapped axis, for collectives in `fun`
            (`purejit.lax.psum(x, axis_name)`, `axis_index`, ...).
        axis_size: the size of the mapped axis, needed when no argument is mapped.
        spmd_axis_name: not supported: purejit has no sharding constraints inside a
            program yet (raises NotImplementedError when given).
        sum_match: an output batched where `out_axes` says None is summed over the batch.
        lowering: "batched" (a batching rule per op, as JAX), "loop" (a `scan` over the
            examples, as `lax.map`) or "auto" (the faster of the two, measured once per
            program and device kind); None takes `config.vmap_lowering` ("batched" unless
            set). See `purejit/transforms/vmap_lowering.py`; `explain` reports the choice.
    Returns:
        The batched function.
    """
    if not callable(fun):
        raise TypeError(f"vmap: expected a callable function, got {fun!r}")
    if spmd_axis_name is not None:
        raise NotImplementedError(
            "vmap: spmd_axis_name is not supported: purejit has no sharding constraint inside "
            "a program to pin the batch axis to a mesh axis; use jit's in_shardings instead"
        )
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, tuple, np.integer))) or isinstance(
        in_axes, bool
    ):
        raise TypeError(
            "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
            f"positional arguments passed to the function, but got {in_axes}."
        )
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    mode = check_lowering(lowering)
    name = getattr(fun, "__name__", "fun")

    unit_key = _unit_key(fun, in_axes, out_axes, axis_name, axis_size, sum_match, lowering)

    @errors.api_boundary
    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        if unit_key is not None and not isinstance(current_trace(), JitTrace):
            # vmap(jit(f)) outside jit: the batched program compiled as one unit
            unit = fun.derived(
                unit_key,
                _batched_maker(in_axes, out_axes, axis_name, axis_size, sum_match, lowering),
            )
            if unit is not None:
                return unit(*args, **kwargs)
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                "vmap in_axes must be an int, None, or a tuple of entries corresponding to "
                "the positional arguments passed to the function, but got "
                f"len(in_axes)={len(in_axes)}, len(args)={len(args)}"
            )
        leaves, tree = tree_flatten((args, kwargs))
        axes = broadcast_axes((in_axes, {k: 0 for k in kwargs}), tree, "in_axes")
        # only mapped leaves are traced; an unmapped one reaches `fun` as it is, as JAX's
        # batching.to_elt passes it (a Python int stays a static loop bound, a NumPy array
        # stays a NumPy array, a string or a config object stays itself)
        mapped = [k for k, d in enumerate(axes) if d is not None]
        for k in mapped:
            x = leaves[k] = _leaf(leaves[k])
            d, s = axes[k], aval_of(x).shape
            if not -len(s) <= d < len(s):
                min_rank = d + 1 if d >= 0 else -d
                raise ValueError(
                    f"vmap was requested to map its argument along axis {d}, which implies "
                    f"that its rank should be at least {min_rank}, but is only {len(s)} (its "
                    f"shape is {s}){errors.at(errors.user_location())}"
                )
            axes[k] = d % len(s)
        size = _mapped_size(fun, args, kwargs, tree, leaves, axes, axis_size)
        avals = []
        for k in mapped:
            a, d = aval_of(leaves[k]), axes[k]
            avals.append(ShapedArray(a.shape[:d] + a.shape[d + 1 :], a.dtype, a.weak_type))
        out_box = []

        def flat_fun(*xs):
            full = list(leaves)
            for k, x in zip(mapped, xs):
                full[k] = x
            a, kw = tree_unflatten(tree, full)
            with parallel.vmap_axis(axis_name, size):
                out = fun(*a, **kw)
            outs, out_tree = tree_flatten(out)
            for p, o in zip(tree_paths(out_tree, "output"), outs):
                if not isinstance(o, _RETURNABLE) and not hasattr(o, "aval"):
                    raise TypeError(
                        f"vmap {name}: {p} has type {type(o).__name__}, not an array. A "
                        "vmapped function must return a pytree of arrays."
                    )
            out_box.append(out_tree)
            return outs

        closed = trace_closed(flat_fun, avals, name=name, transform="purejit.vmap")
        out_tree = out_box[0]
        axis = AxisData(size, axis_name)
        ins = [*(leaves[k] for k in mapped), *closed.captures]
        dims = [*(axes[k] for k in mapped), *[None] * len(closed.captures)]
        dests = broadcast_axes(out_axes, out_tree, "out_axes")
        dests = [_out_axis(d, len(a.shape) + 1) for d, a in zip(dests, closed.out_avals)]
        job = _Job(name, closed.fn, closed.out_avals, out_tree, dims, dests, axis, sum_match)
        how = _pick(mode, job, ins, errors.user_location())
        return tree_unflatten(out_tree, job.run(how, ins))

    return vmapped


def _unit_key(fun, *options):
    """For a jitted `fun` (it has `derived`, see `purejit.api.Jitted`): the key of its
    batched form for these vmap options; None otherwise (or for unhashable options)."""
    if not callable(getattr(type(fun), "derived", None)):
        return None
    key = ("vmap", *options)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _batched_maker(*options):
    return lambda f: vmap(f, *options[:4], None, options[4], lowering=options[5])


@dataclasses.dataclass
class _Job:
    """One vmapped call, traced: what either lowering needs to make its results."""

    name: str
    fn: Any  # the IR function of one example (inputs, then captures)
    out_avals: list
    out_tree: PyTreeDef
    dims: list  # the mapped axis of each parameter of fn, or None
    dests: list  # where each result's mapped axis goes (None: unmapped)
    axis: AxisData
    sum_match: bool

    def run(self, how: str, ins: list) -> list:
        """The results, out_axes applied, by lowering `how` ("batched" or "loop")."""
        if how == "loop":
            vary = varying_results(self.fn, self.dims)
            outs = loop_over_batch(self.fn, ins, self.dims, self.axis.size)
            srcs = [0 if v else None for v in vary]
            outs = [o if v else first_example(o) for o, v in zip(outs, vary)]
        else:
            outs, srcs = batch_function(self.fn, ins, self.dims, self.axis)
        results = []
        for k, (o, src, dst, aval) in enumerate(zip(outs, srcs, self.dests, self.out_avals)):
            if dst is None and src is not None:
                if not self.sum_match:
                    path = tree_paths(self.out_tree, "out_axes")[k]
                    name = self.axis.name
                    raise ValueError(
                        f"vmap has mapped output but out_axes is None (at {path}): the output "
                        f"{aval.str_short()} varies over the mapped axis"
                        + (f" {name!r}" if name is not None else "")
                    )
                o, src = reduce_batch(o, src, "add"), None
            if how == "loop" and src is not None and dst is not None:
                o = moveaxis(o, src, dst)
            else:
                o = matchaxis(self.axis, o, src, dst)
            if aval_of(o).weak_type != aval.weak_type:
                o = bind1("convert", o, dtype=aval.dtype, weak=aval.weak_type)
            results.append(o)
        return results


def _pick(mode: str, job: _Job, ins: list, loc) -> str:
    """The lowering a call gets ("batched" or "loop"), reported for `explain`."""
    if mode == "batched":
        return "batched"
    where = f"vmap of {job.name}{errors.at(loc)}"
    if uses_axis(job.fn, job.axis.name):
        notes.record(
            f"{where}: batched, not a loop ({mode} asked): a collective over the vmapped axis "
            f"{job.axis.name!r} needs every example at once"
        )
        return "batched"
    if job.axis.size == 0:
        return "batched"
    if mode == "loop":
        notes.record(f"{where} → loop over the {job.axis.size} examples (scan)")
        return "loop"
    forms = {
        "batched": lambda *xs: job.run("batched", list(xs)),
        "loop": lambda *xs: job.run("loop", list(xs)),
    }
    key = choice_key(job.fn, job.dims, job.dests, job.axis.size, (job.sum_match,))
    choice = choose(key, forms, ins)
    what = f"loop over the {job.axis.size} examples (scan)" if choice.lowering == "loop" else ""
    notes.record(f"{where}: auto chose {choice.describe()}" + (f" → {what}" if what else ""))
    return choice.lowering


__all__ = ["broadcast_axes", "vmap"]
