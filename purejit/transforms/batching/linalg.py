"""Batching rules of the linear-algebra ops (ir/ops/linalg.py).

Every linear-algebra op already maps over the leading dimensions of its operands (the same
for every operand), so the batch is one more leading dimension: batched operands take it
first, unbatched ones are broadcast to it.
"""

from __future__ import annotations

from purejit.ir import all_ops
from purejit.tracing import bind
from purejit.transforms.batching.core import bdim_at_front, defrule


def leading_batch_rule(name: str):
    """The rule that moves every batch dimension to the front and binds `name` once."""

    def rule(axis, args, dims, **attrs):
        xs = [bdim_at_front(axis, x, d) for x, d in zip(args, dims)]
        outs = bind(name, *xs, **attrs)
        return outs, [0] * len(outs)

    rule.__name__ = f"{name}_batching_rule"
    return rule


LINALG_OPS = [n for n, o in all_ops().items() if o.infer.__module__.endswith("ops.linalg")]
for _name in LINALG_OPS:
    defrule(_name)(leading_batch_rule(_name))
