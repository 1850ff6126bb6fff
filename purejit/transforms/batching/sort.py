"""Batching rules of sort, top_k and reduce_window (ir/ops/sort.py).

sort and reduce_window treat the batch as one more dimension they do not touch (a window of
size 1); top_k works on the last dimension, so the batch goes first. Cumulative sums and
products are reduce_windows and batch the same way.
"""

from __future__ import annotations

from purejit.tracing import bind
from purejit.transforms.batching.core import defrule, loop_rule, matchaxis, moveaxis, ndim


@defrule("sort")
def sort_rule(axis, args, dims, *, regions, dimension, is_stable=False):
    bd = next(d for d in dims if d is not None)
    xs = [matchaxis(axis, x, d, bd) for x, d in zip(args, dims)]
    dim = dimension + (dimension >= bd)
    outs = bind("sort", *xs, regions=regions, dimension=dim, is_stable=is_stable)
    return outs, [bd] * len(outs)


@defrule("top_k")
def top_k_rule(axis, args, dims, *, k):
    (x,), (d,) = args, dims
    if d == ndim(x) - 1:  # the batch must not be the last dimension
        x, d = moveaxis(x, d, 0), 0
    outs = bind("top_k", x, k=k)
    return outs, [d, d]


@defrule("reduce_window")
def reduce_window_rule(
    axis,
    args,
    dims,
    *,
    regions,
    window_dimensions,
    window_strides,
    base_dilations,
    window_dilations,
    padding,
):
    n = len(args) // 2
    attrs = dict(
        window_dimensions=window_dimensions,
        window_strides=window_strides,
        base_dilations=base_dilations,
        window_dilations=window_dilations,
        padding=padding,
    )
    if any(d is not None for d in dims[n:]):
        return loop_rule(
            axis,
            args,
            dims,
            _op_name="reduce_window",
            _reason="its init value varies over the batch",
            regions=regions,
            **attrs,
        )
    bd = next(d for d in dims[:n] if d is not None)
    xs = [matchaxis(axis, x, d, bd) for x, d in zip(args[:n], dims[:n])]

    def ins(seq, v):
        seq = tuple(seq)
        return (*seq[:bd], v, *seq[bd:])

    batched = dict(
        window_dimensions=ins(window_dimensions, 1),
        window_strides=ins(window_strides, 1),
        base_dilations=ins(base_dilations, 1),
        window_dilations=ins(window_dilations, 1),
        padding=ins([tuple(p) for p in padding], (0, 0)),
    )
    outs = bind("reduce_window", *xs, *args[n:], regions=regions, **batched)
    return outs, [bd] * n
