"""Batching rules of the linalg ops (ir/ops/linalg.py).

Every linalg op already maps over leading (batch) dimensions, so the vmapped dimension
moves to the front and the op runs once on the bigger batch; an unbatched operand of
triangular_solve is broadcast to the batch first (the op needs equal batch dims).
"""

from __future__ import annotations

from purejit.tracing import bind
from purejit.transforms.batching.core import bdim_at_front, defrule


def front_rule(name: str):
    """The rule of an op that maps over leading dims: the batch goes first, results at 0."""

    def rule(axis, args, dims, **attrs):
        xs = [bdim_at_front(axis, x, d) for x, d in zip(args, dims)]
        outs = bind(name, *xs, **attrs)
        return outs, [0] * len(outs)

    rule.__name__ = f"{name}_rule"
    rule.__doc__ = f"{name} with the batch dimension moved first."
    return rule


for _name in ("cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "eigh",
              "svd", "eig"):  # fmt: skip
    defrule(_name)(front_rule(_name))
