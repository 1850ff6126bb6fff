"""Batching rules of dynamic_slice and dynamic_update_slice (ir/ops/indexing.py).

With unbatched start indices the batch is one more dimension of the slice, starting at 0.
With batched starts every example slices somewhere else: the op becomes a gather (or a
scatter) whose index vectors are the example number followed by that example's starts.
"""

from __future__ import annotations

import numpy as np

from purejit.tracing import aval_of, bind1
from purejit.transforms.batching.gather import empty_batch
from purejit.transforms.batching.core import (
    bdim_at_front,
    defrule,
    iota,
    moveaxis,
    scalar_region,
    unbatched_shape,
)


def _start_vectors(axis, starts, dims, with_example: bool):
    """Starts as index vectors `[B, k]` (example number first when `with_example`)."""
    dt = aval_of(starts[0]).dtype
    cols = [iota(dt, (axis.size, 1), 0)] if with_example else []
    for s, d in zip(starts, dims):
        s = bdim_at_front(axis, s, d)
        cols.append(bind1("reshape", s, shape=(axis.size, 1)))
    return bind1("concatenate", *cols, dimension=1) if len(cols) > 1 else cols[0]


@defrule("dynamic_slice")
def dynamic_slice_rule(axis, args, dims, *, slice_sizes):
    x, starts = args[0], args[1:]
    dx, dstarts = dims[0], dims[1:]
    if all(d is None for d in dstarts):
        zero = np.zeros((), aval_of(starts[0]).dtype)
        starts = [*starts[:dx], zero, *starts[dx:]]
        sizes = (*slice_sizes[:dx], axis.size, *slice_sizes[dx:])
        return [bind1("dynamic_slice", x, *starts, slice_sizes=sizes)], [dx]
    if dx is not None and axis.size == 0:  # no example to slice (see gather.empty_batch)
        return [empty_batch("dynamic_slice", args, dims, {"slice_sizes": slice_sizes})], [0]
    rank = len(slice_sizes)
    idx = _start_vectors(axis, starts, dstarts, dx is not None)
    if dx is None:  # one operand, a slice per example
        out = bind1(
            "gather",
            x,
            idx,
            offset_dims=tuple(range(1, rank + 1)),
            collapsed_slice_dims=(),
            start_index_map=tuple(range(rank)),
            index_vector_dim=1,
            slice_sizes=tuple(slice_sizes),
            indices_are_sorted=False,
        )
        return [out], [0]
    x = moveaxis(x, dx, 0)
    out = bind1(
        "gather",
        x,
        idx,
        offset_dims=tuple(range(1, rank + 1)),
        collapsed_slice_dims=(0,),
        start_index_map=tuple(range(rank + 1)),
        index_vector_dim=1,
        slice_sizes=(1, *slice_sizes),
        indices_are_sorted=False,
    )
    return [out], [0]


@defrule("dynamic_update_slice")
def dynamic_update_slice_rule(axis, args, dims):
    x, u, starts = args[0], args[1], args[2:]
    dx, du, dstarts = dims[0], dims[1], dims[2:]
    if all(d is None for d in dstarts):
        x, u = bdim_at_front(axis, x, dx), bdim_at_front(axis, u, du)
        zero = np.zeros((), aval_of(starts[0]).dtype)
        return [bind1("dynamic_update_slice", x, u, zero, *starts)], [0]
    # dynamic_update_slice clamps its starts into range; scatter would skip the update
    xshape, ushape = unbatched_shape(x, dx), unbatched_shape(u, du)
    dt = aval_of(starts[0]).dtype
    clamped = []
    for s, n, m in zip(starts, xshape, ushape):
        lo, hi = np.zeros((), dt), np.asarray(n - m, dt)
        clamped.append(bind1("clamp", lo, s, hi))
    idx = _start_vectors(axis, clamped, dstarts, True)
    x, u = bdim_at_front(axis, x, dx), bdim_at_front(axis, u, du)
    xdt = aval_of(x).dtype
    setter = scalar_region("set", [xdt, xdt], lambda b, old, new: [new])
    rank = len(xshape)
    out = bind1(
        "scatter",
        x,
        idx,
        u,
        regions=[setter],
        update_window_dims=tuple(range(1, rank + 1)),
        inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=tuple(range(rank + 1)),
        index_vector_dim=1,
        indices_are_sorted=True,
        unique_indices=True,
    )
    return [out], [0]
