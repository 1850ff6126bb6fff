"""jax.lax's array-building helpers, each composed from the IR's shape ops (reshape,
broadcast_in_dim, slice, concatenate, gather), so they need no rules of their own:

    tile, stack, unstack, split, slice_in_dim, index_in_dim, index_take, collapse,
    broadcast_like, broadcast_to_rank, full_like, empty, stage, dtype, shape_as_value

Static arguments (sizes, axes, indices) are Python ints, checked here with JAX's messages.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.lax.ops import (
    broadcast,
    broadcast_in_dim,
    canonical_axis,
    concatenate,
    expand_dims,
    full,
    reshape,
    select,
    slice,
)
from purejit.lax.elementwise import add, lt, rem
from purejit.lax.slicing import GatherDimensionNumbers, gather
from purejit.runtime.placement import device_put
from purejit.tracing import Tracer


def _where() -> str:
    return errors.at(errors.user_location())


def tile(operand, reps: Sequence[int]):
    """Repeat `operand` `reps[d]` times along each dimension d, as `jax.lax.tile`."""
    x = _lift(operand)
    reps = tuple(operator.index(r) for r in reps)
    if len(reps) != x.ndim:
        raise TypeError(
            f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} and "
            f"x.ndim={x.ndim}."
        )
    if any(r < 0 for r in reps):
        raise ValueError(f"lax.tile: reps must be non-negative, got {reps}{_where()}")
    # x[i] lands at (r, i) for every repeat r: broadcast a repeat axis before each dim
    shape = builtins.sum(((r, n) for r, n in zip(reps, x.shape)), ())
    dims = tuple(2 * d + 1 for d in range(x.ndim))
    return reshape(broadcast_in_dim(x, shape, dims), [r * n for r, n in zip(reps, x.shape)])


def stack(operands: Sequence, axis: int = 0):
    """Join arrays of one shape and dtype along a new `axis`, as `jax.lax.stack`."""
    xs = [_lift(x) for x in operands]
    if not xs:
        raise ValueError(f"lax.stack: needs at least one array to stack{_where()}")
    shapes = {x.shape for x in xs}
    if len(shapes) != 1:
        raise errors.PurejitTypeError(
            f"lax.stack: all arrays must have one shape, got {sorted(shapes)}{_where()}"
        )
    ax = canonical_axis(axis, xs[0].ndim + 1, "lax.stack")
    return concatenate([expand_dims(x, (ax,)) for x in xs], ax)


def unstack(x, axis: int = 0) -> tuple:
    """The slices of `x` along `axis`, as a tuple, as `jax.lax.unstack`."""
    a = _lift(x)
    ax = canonical_axis(axis, a.ndim, "lax.unstack")
    return tuple(index_in_dim(a, i, ax, keepdims=False) for i in range(a.shape[ax]))


def split(operand, sizes: Sequence[int], axis: int = 0) -> list:
    """Consecutive pieces of `operand` of `sizes` along `axis`, as `jax.lax.split`."""
    x = _lift(operand)
    ax = canonical_axis(axis, x.ndim, "lax.split")
    sizes = [operator.index(s) for s in sizes]
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes must be non-negative, got {sizes}")
    if builtins.sum(sizes) != x.shape[ax]:
        raise ValueError(
            f"Sum of sizes {builtins.sum(sizes)} must be equal to dimension {ax} of the operand "
            f"shape {list(x.shape)}"
        )
    out, start = [], 0
    for s in sizes:
        out.append(slice_in_dim(x, start, start + s, axis=ax))
        start += s
    return out


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """`operand[start:limit:stride]` along `axis` (None and negative bounds as Python's
    slices), as `jax.lax.slice_in_dim`."""
    x = _lift(operand)
    ax = canonical_axis(axis, x.ndim, "lax.slice_in_dim")
    n = x.shape[ax]
    start = 0 if start_index is None else operator.index(start_index)
    limit = n if limit_index is None else operator.index(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    stride = operator.index(stride)
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[ax], limits[ax], strides[ax] = start, limit, stride
    return slice(x, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """`operand`'s entry `index` (negative counts from the end) along `axis`, as
    `jax.lax.index_in_dim`; `keepdims=False` drops the axis."""
    x = _lift(operand)
    ax = canonical_axis(axis, x.ndim, "lax.index_in_dim")
    i, n = operator.index(index), x.shape[ax]
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n}")
    i %= n
    out = slice_in_dim(x, i, i + 1, axis=ax)
    return out if keepdims else reshape(out, x.shape[:ax] + x.shape[ax + 1 :])


def index_take(src, idxs, axes: Sequence[int]):
    """`src` indexed by the arrays `idxs` (one per axis in `axes`, taken modulo the axis
    size) along `axes`: the gather of `jax.lax.index_take`."""
    x = _lift(src)
    axes = tuple(operator.index(a) for a in axes)
    ids = [_lift(i) for i in idxs]
    if len(ids) != len(axes):
        raise ValueError(f"lax.index_take: {len(ids)} index arrays for axes {axes}{_where()}")
    cols = [reshape(i, (*i.shape, 1)) for i in ids]
    indices = concatenate(cols, 1) if len(cols) > 1 else cols[0]
    sizes = np.array([x.shape[a] for a in axes], indices.dtype)
    n = broadcast_in_dim(sizes, indices.shape, (1,))
    r = rem(indices, n)
    indices = select(lt(r, np.zeros((), r.dtype)), add(r, n), r)  # floor modulo, as `%`
    slice_sizes = [1 if d in axes else n for d, n in enumerate(x.shape)]
    dn = GatherDimensionNumbers(
        offset_dims=tuple(range(1, x.ndim - len(axes) + 1)),
        collapsed_slice_dims=axes,
        start_index_map=axes,
    )
    return gather(x, indices, dn, tuple(slice_sizes))


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """Merge dimensions [start, stop) into one (row-major), as `jax.lax.collapse`."""
    x = _lift(operand)
    lo, hi, _ = builtins.slice(start_dimension, stop_dimension).indices(x.ndim)
    if hi < lo:
        raise ValueError(
            f"Invalid dimension range passed to collapse: {x.shape}[{start_dimension}:"
            f"{stop_dimension}]"
        )
    return reshape(x, (*x.shape[:lo], math.prod(x.shape[lo:hi]), *x.shape[hi:]))


def broadcast_like(arr, like_arr):
    """`arr` broadcast (NumPy's rules) to the shape of `like_arr`, as `jax.lax.broadcast_like`."""
    x = _lift(arr)
    shape = tuple(np.shape(like_arr)) if not hasattr(like_arr, "shape") else tuple(like_arr.shape)
    if x.ndim > len(shape) or any(a not in (1, b) for a, b in zip(x.shape[::-1], shape[::-1])):
        raise ValueError(
            f"lax.broadcast_like: cannot broadcast {x.aval} to shape {shape}{_where()}"
        )
    lead = len(shape) - x.ndim
    kept = [d for d in range(x.ndim) if x.shape[d] == shape[lead + d]]
    if len(kept) != x.ndim:
        x = reshape(x, [x.shape[d] for d in kept])
    return broadcast_in_dim(x, shape, [lead + d for d in kept])


def broadcast_to_rank(x, rank: int):
    """`x` with leading size-1 dimensions added up to `rank`, as `jax.lax.broadcast_to_rank`."""
    a = _lift(x)
    rank = operator.index(rank)
    return a if a.ndim >= rank else broadcast(a, (1,) * (rank - a.ndim))


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array of `x`'s shape and dtype (or `shape`, `dtype`) filled with `fill_value`, as
    `jax.lax.full_like`; a `sharding` places it with `purejit.device_put` semantics."""
    dt = pdt.canonicalize(np.dtype(dtype)) if dtype is not None else np.dtype(x.dtype)
    shp = tuple(x.shape) if shape is None else tuple(operator.index(d) for d in shape)
    weak = dtype is None and bool(getattr(x, "weak_type", False))
    out = full(shp, convert(_lift(fill_value), dt, weak=weak))
    if sharding is not None:
        if isinstance(out, Tracer):
            raise NotImplementedError(
                f"lax.full_like: sharding= under a transformation needs a sharding constraint; "
                f"place the result with jit's out_shardings instead{_where()}"
            )
        out = device_put(out, getattr(sharding, "_device", sharding))
    return out


def empty(shape, dtype, *, out_sharding=None):
    """An array of `shape` and `dtype` whose values must not be relied on (purejit gives
    zeros, one of XLA's choices), as `jax.lax.empty`."""
    if out_sharding is not None:
        raise NotImplementedError(
            "lax.empty: out_sharding= needs JAX's explicit sharding (sharding in types), which "
            "purejit does not have; use jit's out_shardings"
        )
    shp = (operator.index(shape),) if np.ndim(shape) == 0 else tuple(shape)
    return full(shp, np.zeros((), pdt.canonicalize(np.dtype(dtype))))


def stage(x, /):
    """`x` as a value of the current trace (a purejit Array outside any), as
    `jax.lax.stage`: the identity otherwise."""
    return _lift(x)


def dtype(x):
    """The canonical dtype of a value or type (Python scalars and types get JAX's default
    widths), as `jax.lax.dtype`."""
    if x is None:
        raise ValueError(f"Invalid argument to dtype: {x}.")
    if isinstance(x, type) and x in (bool, int, float, complex):
        return pdt.canonicalize(pdt.python_scalar_dtype(x(0)))
    if isinstance(x, (bool, int, float, complex)):
        return pdt.canonicalize(pdt.python_scalar_dtype(x))
    dt = None if isinstance(x, type) else getattr(x, "dtype", None)
    return pdt.canonicalize(np.dtype(dt if dt is not None else x))


def shape_as_value(shape):
    """A static shape as an integer NumPy array (purejit shapes are always concrete), as
    `jax.lax.shape_as_value`."""
    return np.array([operator.index(d) for d in shape], pdt.canonicalize(np.dtype(np.int64)))
