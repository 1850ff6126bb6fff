"""Where a dot_general's operand dimensions go in its result (the collective-matmul pass's
rewrites, `collective_matmul` and `_chunked`, read them)."""

from __future__ import annotations

from purejit.ir import Op

_DOT = (
    "lhs_batching_dimensions",
    "rhs_batching_dimensions",
    "lhs_contracting_dimensions",
    "rhs_contracting_dimensions",
)


def dot_dims(op: Op):
    """(lhs batch, rhs batch, lhs contracting, rhs contracting) dimensions of `op`."""
    lb, rb, lc, rc = (tuple(op.attrs[k]) for k in _DOT)
    return lb, rb, lc, rc


def free_dims(rank: int, batch, contract) -> list[int]:
    """The dimensions of an operand of `rank` that are neither batch nor contracting."""
    return [i for i in range(rank) if i not in batch and i not in contract]


def output_dim(op: Op, side: int, d: int) -> int | None:
    """The result dimension of dot_general `op` that free dimension `d` of operand `side`
    (0 = lhs, 1 = rhs) becomes; None when `d` is a batch or contracting dimension."""
    lb, rb, lc, rc = dot_dims(op)
    lhs, rhs = (v.type.rank for v in op.operands)
    lfree, rfree = free_dims(lhs, lb, lc), free_dims(rhs, rb, rc)
    if side == 0:
        return len(lb) + lfree.index(d) if d in lfree else None
    return len(lb) + len(lfree) + rfree.index(d) if d in rfree else None


def source_dim(op: Op, od: int) -> tuple[int, int] | None:
    """(side, dimension) of the operand free dimension that result dimension `od` comes from."""
    for side in (0, 1):
        for d in range(op.operands[side].type.rank):
            if output_dim(op, side, d) == od:
                return side, d
    return None
