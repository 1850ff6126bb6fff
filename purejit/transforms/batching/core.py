"""The batching interpreter: run an IR function on values with a batch dimension.

Each value is a pair `(x, dim)`: `dim` is the position of the batch axis in `x`, or `None`
when the value does not vary over the batch (then `x` has the per-example shape). Every op
whose operands are all unbatched is bound as it is; any other op goes through its batching
rule, JAX's signature:

    rule(axis, args, dims, **attrs) -> (outs, out_dims)

`axis` is the `AxisData` of the vmap being applied (size, name, the source line of the op
being batched); ops with regions also get `regions=`. Rules bind what they produce into the
current trace, so a batched program is whatever the trace below records: eager ops, a jit
program, or the input of another transformation.

A looping fallback (`loop_rule`) runs an op once per example inside a `scan`, so the program
does not grow with the batch; it is used only for ops listed in `FALLBACKS`, and every use
is recorded for `explain`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Hashable, Sequence

import numpy as np

from purejit import errors
from purejit.ir import Builder, Function, TensorType
from purejit.lax.ops import reduction_identity
from purejit.tracing import ShapedArray, aval_of, bind, bind1
from purejit.transforms._ir_eval import trace_closed
from purejit.transforms.batching import notes

not_mapped = None


@dataclasses.dataclass(frozen=True)
class AxisData:
    """The batch axis being mapped: its size, its name (for collectives) and the op at hand."""

    size: int
    name: Hashable | None = None
    spmd_name: tuple | None = None
    loc: str | None = None  # the user's line of the op whose rule runs


Rule = Callable[..., tuple[list, list]]
RULES: dict[str, Rule] = {}

# ops without a batching rule of their own, run by `loop_rule`, with the reason
FALLBACKS: dict[str, str] = {}


def defrule(*names: str):
    """Register the decorated function as the batching rule of each op in `names`."""

    def register(rule: Rule) -> Rule:
        for name in names:
            if name in RULES:
                raise ValueError(f"batching rule for {name!r} registered twice")
            RULES[name] = rule
        return rule

    return register


def deffallback(name: str, reason: str):
    """Batch op `name` by looping over the examples (`loop_rule`), for `reason`."""
    FALLBACKS[name] = reason
    RULES[name] = functools.partial(loop_rule, _op_name=name)


# ---- moving and broadcasting batch dimensions ---------------------------------------------


def shape(x) -> tuple[int, ...]:
    return aval_of(x).shape


def ndim(x) -> int:
    return len(aval_of(x).shape)


def moveaxis(x, src: int, dst: int):
    """`x` with dimension `src` moved to position `dst`."""
    n = ndim(x)
    src, dst = src % n, dst % n
    if src == dst:
        return x
    perm = [d for d in range(n) if d != src]
    perm.insert(dst, src)
    return bind1("transpose", x, permutation=tuple(perm))


def broadcast_batched(x, size: int, dim: int = 0):
    """The unbatched `x` repeated `size` times along a new dimension `dim`."""
    s = shape(x)
    dim = dim % (len(s) + 1)
    out = (*s[:dim], size, *s[dim:])
    dims = tuple(d if d < dim else d + 1 for d in range(len(s)))
    return bind1("broadcast_in_dim", x, shape=out, broadcast_dimensions=dims)


def matchaxis(axis: AxisData, x, src: int | None, dst: int | None):
    """`x` (batched at `src`) with its batch dimension at `dst` (None: unbatched, which
    only an unbatched `x` can be)."""
    if src == dst:
        return x
    if dst is None:
        raise ValueError(f"vmap: a value batched at dimension {src} cannot be made unbatched")
    if src is None:
        return broadcast_batched(x, axis.size, dst)
    return moveaxis(x, src, dst)


def moved_aval(axis: AxisData, x, src: int | None, dst: int | None) -> ShapedArray:
    """The aval `matchaxis(axis, x, src, dst)` would have, without binding anything."""
    a = aval_of(x)
    per = unbatched_shape(x, src)
    if dst is None:
        return ShapedArray(per, a.dtype, a.weak_type)
    return ShapedArray((*per[:dst], axis.size, *per[dst:]), a.dtype, a.weak_type)


def bdim_at_front(axis: AxisData, x, dim: int | None):
    """`x` with its batch dimension first (broadcast when unbatched)."""
    return matchaxis(axis, x, dim, 0)


def unbatched_shape(x, dim: int | None) -> tuple[int, ...]:
    """The per-example shape of `x` batched at `dim`."""
    s = shape(x)
    return s if dim is None else s[:dim] + s[dim + 1 :]


def shift(dims: Sequence[int], bdim: int) -> tuple[int, ...]:
    """Per-example dimension numbers as dimensions of the value batched at `bdim`."""
    return tuple(int(d) + (int(d) >= bdim) for d in dims)


def filled(like, value, dtype=None):
    """An array shaped like `like`, every element `value` (in `like`'s dtype by default)."""
    a = aval_of(like)
    v = np.asarray(value).astype(a.dtype if dtype is None else np.dtype(dtype))
    if not a.shape:
        return v
    return bind1("broadcast_in_dim", v, shape=a.shape, broadcast_dimensions=())


def iota(dtype, shape: Sequence[int], dimension: int):
    return bind1("iota", shape=tuple(shape), dtype=np.dtype(dtype), dimension=dimension)


def scalar_region(name: str, dtypes: Sequence, fn: Callable) -> Function:
    """A region over scalars of `dtypes`, built from `fn(builder, *params) -> results`."""
    b = Builder(name)
    params = [b.param(TensorType((), np.dtype(d))) for d in dtypes]
    return b.finish(fn(b, *params))


def monoid_region(kind: str, dtype) -> Function:
    """The region `(a, b) -> kind(a, b)` on scalars of `dtype`."""
    return scalar_region(kind, [dtype, dtype], lambda b, x, y: b.op(kind, [x, y]))


# the identity of reduction `kind` in `dtype` (0, 1, -inf, +inf, ...)
identity = reduction_identity


def reduce_batch(x, dim: int, kind: str):
    """Reduce `x` over its batch dimension with monoid `kind`."""
    dt = aval_of(x).dtype
    init = identity(kind, dt)
    return bind1("reduce", x, init, dimensions=(dim,), regions=[monoid_region(kind, dt)])


# ---- the interpreter ----------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)  # holds the functions it answered for: no id is reused
def _uses_axis(fn: Function, name) -> bool:
    """Whether `fn` (regions included) holds a collective over the vmap axis `name`."""
    return any(op.attrs.get("axis_name") == name for op in fn.walk())


def op_uses_axis(op, name) -> bool:
    """Whether `op` is, or holds in a region, a collective over the vmap axis `name`."""
    if name is None:
        return False
    if op.attrs.get("axis_name") == name:
        return True
    return any(_uses_axis(r, name) for r in op.regions)


def batch_function(fn: Function, args: Sequence, dims: Sequence, axis: AxisData):
    """Evaluate `fn` on batched `args` by binding each op (or its batching rule) into the
    current trace.

    Args:
        fn: an IR function.
        args: one value per parameter of `fn` (tracers, arrays, scalars).
        dims: the batch dimension of each arg, or None.
        axis: the batch axis.
    Returns:
        `(outs, out_dims)` for `fn`'s results.
    """
    if len(args) != len(fn.params):
        raise TypeError(f"batch_function: {fn.name} takes {len(fn.params)} values, got {len(args)}")
    env = {p: (a, d) for p, a, d in zip(fn.params, args, dims)}
    for op in fn.ops:
        vals, ds = [], []
        for v in op.operands:
            x, d = env[v]
            vals.append(x)
            ds.append(d)
        if all(d is None for d in ds) and not op_uses_axis(op, axis.name):
            outs = bind(op.name, *vals, regions=op.regions, **op.attrs)
            out_dims = [None] * len(outs)
        else:
            outs, out_dims = apply_rule(op, vals, ds, axis)
        for r, o, d in zip(op.results, outs, out_dims):
            env[r] = (o, d)
    pairs = [env[v] for v in fn.results]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def apply_rule(op, vals, ds, axis: AxisData):
    """Run the batching rule of `op` on `vals` batched at `ds`."""
    rule = RULES.get(op.name)
    if rule is None:
        raise NotImplementedError(
            f"vmap: op {op.name!r} has no batching rule{errors.at(op.loc)}; add one in "
            f"purejit/transforms/batching/<family>.py"
        )
    here = dataclasses.replace(axis, loc=op.loc)
    kw = dict(op.attrs)
    if op.regions:
        kw["regions"] = op.regions
    outs, out_dims = rule(here, list(vals), list(ds), **kw)
    if len(outs) != len(op.results):
        raise AssertionError(f"batching rule of {op.name} returned {len(outs)} values")
    return list(outs), list(out_dims)


def batch_region(
    fn: Function, dims: Sequence, axis: AxisData, in_avals: Sequence[ShapedArray], want=None
):
    """`fn` batched as a new closed region.

    Args:
        fn: the region.
        dims: batch dimension of each parameter (None: unbatched).
        axis: the batch axis.
        in_avals: the batched avals of the parameters.
        want: the batch dimension each result must have (None entries: unbatched), or
            None to take what the rules give.
    Returns:
        `(region, out_dims)`.
    """
    box = []

    def body(*xs):
        outs, out_dims = batch_function(fn, xs, dims, axis)
        if want is not None:
            outs = [matchaxis(axis, o, d, w) for o, d, w in zip(outs, out_dims, want)]
            out_dims = list(want)
        box.append(out_dims)
        return outs

    closed = trace_closed(body, list(in_avals), name=fn.name)
    if closed.captures:
        raise NotImplementedError(
            f"vmap: batching region {fn.name} read values of an enclosing trace"
        )
    return closed.fn, box[0]


def region_out_dims(fn: Function, dims: Sequence, axis: AxisData, in_avals) -> list:
    """Which results of `fn` come out batched (and where) for parameters batched at `dims`."""
    return batch_region(fn, dims, axis, in_avals)[1]


# ---- the looping fallback -----------------------------------------------------------------


def loop_rule(axis: AxisData, args, dims, *, _op_name: str, _reason=None, regions=(), **attrs):
    """Run op `_op_name` once per example in a `scan` over the batch (results batched at 0);
    `_reason` (default: the op's entry in FALLBACKS) is recorded for `explain`."""
    batched = [i for i, d in enumerate(dims) if d is not None]
    xs = [bdim_at_front(axis, args[i], dims[i]) for i in batched]
    consts = [a for i, a in enumerate(args) if dims[i] is None]
    avals = [aval_of(a) for a in consts]
    avals += [ShapedArray(unbatched_shape(x, 0), aval_of(x).dtype) for x in xs]
    const_idx = [i for i, d in enumerate(dims) if d is None]

    def body(*ps):
        full = [None] * len(args)
        for i, p in zip(const_idx, ps[: len(consts)]):
            full[i] = p
        for i, p in zip(batched, ps[len(consts) :]):
            full[i] = p
        return bind(_op_name, *full, regions=regions, **attrs)

    closed = trace_closed(body, avals, name=f"{_op_name}_per_example")
    ncap = len(closed.captures)
    region = closed.fn
    # region parameters: consts, captures, x slices -> reorder to scan's (consts, xs)
    params = region.params
    nconst = len(consts)
    reordered = params[:nconst] + params[len(params) - ncap :] + params[nconst : len(params) - ncap]
    region = Function(region.name, reordered, region.ops, region.results)
    outs = bind(
        "scan",
        *consts,
        *closed.captures,
        *xs,
        regions=[region],
        length=axis.size,
        reverse=False,
        unroll=1,
        num_consts=nconst + ncap,
        num_carry=0,
    )
    reason = _reason or FALLBACKS.get(_op_name, "no batching rule")
    notes.record(
        f"{_op_name}{errors.at(axis.loc)} → loop over the {axis.size} examples (scan): {reason}"
    )
    return outs, [0] * len(outs)


__all__ = [
    "AxisData",
    "FALLBACKS",
    "RULES",
    "apply_rule",
    "batch_function",
    "batch_region",
    "bdim_at_front",
    "broadcast_batched",
    "defrule",
    "deffallback",
    "filled",
    "identity",
    "iota",
    "loop_rule",
    "matchaxis",
    "monoid_region",
    "moveaxis",
    "moved_aval",
    "ndim",
    "not_mapped",
    "reduce_batch",
    "region_out_dims",
    "scalar_region",
    "shape",
    "shift",
    "unbatched_shape",
]
