"""Batching rules of ops that make, move or copy data (ir/ops/shape.py).

The batch dimension stays where it is whenever the op allows (slice, reverse, pad, transpose
of the other dimensions); ops that renumber dimensions (reshape, broadcast_in_dim) take it
first.
"""

from __future__ import annotations

import numpy as np

from purejit.tracing import aval_of, bind1
from purejit.transforms.batching.core import (
    bdim_at_front,
    broadcast_batched,
    defrule,
    moveaxis,
    shift,
    unbatched_shape,
)


@defrule("constant", "iota")
def no_operands_rule(axis, args, dims, **attrs):
    """Ops without operands never vary over the batch; the interpreter binds them as they
    are, so this rule is only reached with no batched operand."""
    raise AssertionError("an op without operands has no batched operand")


@defrule("broadcast_in_dim")
def broadcast_in_dim_rule(axis, args, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    out = (axis.size, *shape)
    bdims = (0, *[b + 1 for b in broadcast_dimensions])
    return [bind1("broadcast_in_dim", x, shape=out, broadcast_dimensions=bdims)], [0]


@defrule("reshape")
def reshape_rule(axis, args, dims, *, shape):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    return [bind1("reshape", x, shape=(axis.size, *shape))], [0]


@defrule("transpose")
def transpose_rule(axis, args, dims, *, permutation):
    (x,), (d,) = args, dims
    perm = (d, *shift(permutation, d))
    return [bind1("transpose", x, permutation=perm)], [0]


@defrule("slice")
def slice_rule(axis, args, dims, *, start_indices, limit_indices, strides=None):
    (x,), (d,) = args, dims
    strides = tuple(strides) if strides is not None else (1,) * len(start_indices)
    start = (*start_indices[:d], 0, *start_indices[d:])
    limit = (*limit_indices[:d], axis.size, *limit_indices[d:])
    step = (*strides[:d], 1, *strides[d:])
    out = bind1("slice", x, start_indices=start, limit_indices=limit, strides=step)
    return [out], [d]


@defrule("reverse")
def reverse_rule(axis, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return [bind1("reverse", x, dimensions=shift(dimensions, d))], [d]


@defrule("concatenate")
def concatenate_rule(axis, args, dims, *, dimension):
    xs = [bdim_at_front(axis, x, d) for x, d in zip(args, dims)]
    return [bind1("concatenate", *xs, dimension=dimension + 1)], [0]


@defrule("pad")
def pad_rule(axis, args, dims, *, edge_padding_low, edge_padding_high, interior_padding):
    (x, v), (d, dv) = args, dims
    if dv is None:
        lo = (*edge_padding_low[:d], 0, *edge_padding_low[d:])
        hi = (*edge_padding_high[:d], 0, *edge_padding_high[d:])
        inner = (*interior_padding[:d], 0, *interior_padding[d:])
        out = bind1("pad", x, v, edge_padding_low=lo, edge_padding_high=hi, interior_padding=inner)
        return [out], [d]
    # a batched padding value: pad with anything, then select the value where padding is
    per = unbatched_shape(x, d)
    dt = aval_of(x).dtype
    x = bdim_at_front(axis, x, d)
    attrs = dict(
        edge_padding_low=(0, *edge_padding_low),
        edge_padding_high=(0, *edge_padding_high),
        interior_padding=(0, *interior_padding),
    )
    padded = bind1("pad", x, np.zeros((), dt), **attrs)
    inside = bind1(
        "pad",
        np.ones(per, np.bool_),
        np.zeros((), np.bool_),
        edge_padding_low=tuple(edge_padding_low),
        edge_padding_high=tuple(edge_padding_high),
        interior_padding=tuple(interior_padding),
    )
    full = aval_of(padded).shape
    inside = broadcast_batched(inside, axis.size, 0)
    value = bind1("broadcast_in_dim", v, shape=full, broadcast_dimensions=(0,))
    return [bind1("select", inside, padded, value)], [0]
