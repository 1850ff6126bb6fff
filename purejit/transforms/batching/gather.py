"""Batching rules of gather and scatter (ir/ops/gather.py), as JAX batches them.

A batched operand gains a window dimension of the batch's size (offset dim 0); batched
indices gain an index-batch dimension; when both are batched, the example number (an iota)
joins every index vector, so each example gathers from, or scatters into, its own operand.
"""

from __future__ import annotations

import numpy as np

from purejit.ir import TensorType
from purejit.ir.registry import get_op
from purejit.tracing import aval_of, bind, bind1
from purejit.transforms.batching.core import (
    bdim_at_front,
    defrule,
    iota,
    moveaxis,
    shift,
    unbatched_shape,
)


def empty_batch(name: str, args, dims, attrs: dict):
    """The batched result of `name` over 0 examples: an empty array, batched at 0.

    Gathering from a batched operand takes a size-1 window of the batch dimension per
    example, which no size-0 dimension holds, so the batched op is never built; the
    per-example result's shape comes from the op's own shape rule (JAX does the same)."""
    per = [TensorType(unbatched_shape(a, d), aval_of(a).dtype) for a, d in zip(args, dims)]
    (t,) = get_op(name).infer(per, attrs, [])
    zero = np.zeros((), t.dtype)
    return bind1("broadcast_in_dim", zero, shape=(0, *t.shape), broadcast_dimensions=())


def with_example_index(idx, ivd: int):
    """Indices batched at 0 with the example number prepended to every index vector.

    Returns `(indices, index_vector_dim)`; an implicit trailing vector dimension becomes
    explicit."""
    s = aval_of(idx).shape
    if ivd == len(s):
        idx = bind1("reshape", idx, shape=(*s, 1))
        s = (*s, 1)
    counts = iota(aval_of(idx).dtype, (*s[:ivd], 1, *s[ivd + 1 :]), 0)
    return bind1("concatenate", counts, idx, dimension=ivd), ivd


@defrule("gather")
def gather_rule(
    axis,
    args,
    dims,
    *,
    offset_dims,
    collapsed_slice_dims,
    start_index_map,
    index_vector_dim,
    slice_sizes,
    indices_are_sorted=False,
):
    (x, idx), (dx, di) = args, dims
    sorted_ = indices_are_sorted
    if dx is not None and di is not None and axis.size == 0:
        attrs = dict(
            offset_dims=offset_dims,
            collapsed_slice_dims=collapsed_slice_dims,
            start_index_map=start_index_map,
            index_vector_dim=index_vector_dim,
            slice_sizes=slice_sizes,
            indices_are_sorted=sorted_,
        )
        return [empty_batch("gather", args, dims, attrs)], [0]
    if di is None:  # the batch is a window dimension of every slice, first in the result
        x = moveaxis(x, dx, 0)
        out = bind1(
            "gather",
            x,
            idx,
            offset_dims=(0, *[d + 1 for d in offset_dims]),
            collapsed_slice_dims=shift(collapsed_slice_dims, 0),
            start_index_map=shift(start_index_map, 0),
            index_vector_dim=index_vector_dim,
            slice_sizes=(axis.size, *slice_sizes),
            indices_are_sorted=sorted_,
        )
        return [out], [0]
    idx = moveaxis(idx, di, 0)
    ivd = index_vector_dim + 1
    if dx is None:  # the batch is one more index-batch dimension, the first of the result
        out = bind1(
            "gather",
            x,
            idx,
            offset_dims=tuple(d + 1 for d in offset_dims),
            collapsed_slice_dims=tuple(collapsed_slice_dims),
            start_index_map=tuple(start_index_map),
            index_vector_dim=ivd,
            slice_sizes=tuple(slice_sizes),
            indices_are_sorted=sorted_,
        )
        return [out], [0]
    x = moveaxis(x, dx, 0)
    idx, ivd = with_example_index(idx, ivd)
    out = bind1(
        "gather",
        x,
        idx,
        offset_dims=tuple(d + 1 for d in offset_dims),
        collapsed_slice_dims=(0, *shift(collapsed_slice_dims, 0)),
        start_index_map=(0, *shift(start_index_map, 0)),
        index_vector_dim=ivd,
        slice_sizes=(1, *slice_sizes),
        indices_are_sorted=False,
    )
    return [out], [0]


@defrule("scatter")
def scatter_rule(
    axis,
    args,
    dims,
    *,
    regions,
    update_window_dims,
    inserted_window_dims,
    scatter_dims_to_operand_dims,
    index_vector_dim,
    indices_are_sorted=False,
    unique_indices=False,
):
    n = (len(args) - 1) // 2
    xs = [bdim_at_front(axis, x, d) for x, d in zip(args[:n], dims[:n])]
    idx, di = args[n], dims[n]
    ups = [bdim_at_front(axis, u, d) for u, d in zip(args[n + 1 :], dims[n + 1 :])]
    if di is None:  # the batch is a window dimension of every update
        outs = bind(
            "scatter",
            *xs,
            idx,
            *ups,
            regions=regions,
            update_window_dims=(0, *[d + 1 for d in update_window_dims]),
            inserted_window_dims=shift(inserted_window_dims, 0),
            scatter_dims_to_operand_dims=shift(scatter_dims_to_operand_dims, 0),
            index_vector_dim=index_vector_dim,
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
        )
        return outs, [0] * n
    idx = moveaxis(idx, di, 0)
    idx, ivd = with_example_index(idx, index_vector_dim + 1)
    outs = bind(
        "scatter",
        *xs,
        idx,
        *ups,
        regions=regions,
        update_window_dims=tuple(d + 1 for d in update_window_dims),
        inserted_window_dims=(0, *shift(inserted_window_dims, 0)),
        scatter_dims_to_operand_dims=(0, *shift(scatter_dims_to_operand_dims, 0)),
        index_vector_dim=ivd,
        indices_are_sorted=False,
        unique_indices=unique_indices,
    )
    return outs, [0] * n
