"""Batching rule of `dot_general` (ir/ops/contraction.py): batch dimensions, never a loop.

Both operands batched: the batch joins the dot's batch dimensions (first in the result).
One batched operand: the batch is one of its free dimensions, and the result keeps it at
the matching position (the layout pass then picks the best dimension order).
"""

from __future__ import annotations

from purejit.tracing import bind1
from purejit.transforms.batching.core import defrule, moveaxis, shape, shift


@defrule("dot_general")
def dot_general_rule(
    axis,
    args,
    dims,
    *,
    lhs_batching_dimensions,
    rhs_batching_dimensions,
    lhs_contracting_dimensions,
    rhs_contracting_dimensions,
    preferred_element_type=None,
    precision=None,
    algorithm=None,
):
    (lhs, rhs), (dl, dr) = args, dims
    lb, rb = tuple(lhs_batching_dimensions), tuple(rhs_batching_dimensions)
    lc, rc = tuple(lhs_contracting_dimensions), tuple(rhs_contracting_dimensions)
    extra = {}
    if preferred_element_type is not None:
        extra["preferred_element_type"] = preferred_element_type
    if precision is not None:
        extra["precision"] = precision
    if algorithm is not None:
        extra["algorithm"] = algorithm
    if dl is not None and dr is not None:
        lhs, rhs = moveaxis(lhs, dl, 0), moveaxis(rhs, dr, 0)
        attrs = dict(
            lhs_batching_dimensions=(0, *shift(lb, 0)),
            rhs_batching_dimensions=(0, *shift(rb, 0)),
            lhs_contracting_dimensions=shift(lc, 0),
            rhs_contracting_dimensions=shift(rc, 0),
        )
        return [bind1("dot_general", lhs, rhs, **attrs, **extra)], [0]
    if dl is not None:
        lb2, lc2 = shift(lb, dl), shift(lc, dl)
        free_l = [i for i in range(len(shape(lhs))) if i not in lb2 + lc2]
        out_dim = len(lb) + free_l.index(dl)
        attrs = dict(
            lhs_batching_dimensions=lb2,
            rhs_batching_dimensions=rb,
            lhs_contracting_dimensions=lc2,
            rhs_contracting_dimensions=rc,
        )
        return [bind1("dot_general", lhs, rhs, **attrs, **extra)], [out_dim]
    rb2, rc2 = shift(rb, dr), shift(rc, dr)
    rank_r = len(shape(rhs))
    free_r = [i for i in range(rank_r) if i not in rb2 + rc2]
    n_lhs_free = len(shape(lhs)) - len(lb) - len(lc)
    out_dim = len(rb) + n_lhs_free + free_r.index(dr)
    attrs = dict(
        lhs_batching_dimensions=lb,
        rhs_batching_dimensions=rb2,
        lhs_contracting_dimensions=lc,
        rhs_contracting_dimensions=rc2,
    )
    return [bind1("dot_general", lhs, rhs, **attrs, **extra)], [out_dim]
