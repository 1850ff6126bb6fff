"""Batching rule of `reduce` (ir/ops/reduce.py): the batch is one more kept dimension.

Init values must be identities of the region, so they do not vary over a batch in the
programs purejit or JAX writes; a batched init runs the op once per example.
"""

from __future__ import annotations

from purejit.tracing import bind
from purejit.transforms.batching.core import defrule, loop_rule, matchaxis, shift


@defrule("reduce")
def reduce_rule(axis, args, dims, *, regions, dimensions):
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):
        return loop_rule(
            axis,
            args,
            dims,
            _op_name="reduce",
            _reason="its init value varies over the batch",
            regions=regions,
            dimensions=dimensions,
        )
    bd = next(d for d in dims[:n] if d is not None)
    xs = [matchaxis(axis, x, d, bd) for x, d in zip(args[:n], dims[:n])]
    outs = bind("reduce", *xs, *args[n:], regions=regions, dimensions=shift(dimensions, bd))
    out_dim = bd - sum(1 for d in dimensions if d < bd)
    return outs, [out_dim] * n
