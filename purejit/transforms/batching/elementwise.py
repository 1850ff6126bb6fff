"""Batching rules of elementwise ops (ir/ops/elementwise.py, and any op with the trait).

An elementwise op maps over the batch as over any other dimension: operands are brought to
one batch dimension (the first batched operand's, so nothing moves in the common case) and
unbatched operands are broadcast to the batched shape. `select`'s predicate and `clamp`'s
bounds may be scalars next to an array: an unbatched scalar stays a scalar, a batched one is
broadcast to the full shape.
"""

from __future__ import annotations

from purejit.ir import all_ops
from purejit.tracing import bind
from purejit.transforms.batching.core import (
    RULES,
    broadcast_batched,
    moveaxis,
    shape,
    unbatched_shape,
)


def elementwise_rule(name: str):
    """The batching rule of the elementwise op `name`."""

    def rule(axis, args, dims, **attrs):
        per = [unbatched_shape(x, d) for x, d in zip(args, dims)]
        target = max(per, key=len)
        # the batch dimension of the result: that of the first full-shaped batched operand
        bd = next((d for p, d in zip(per, dims) if d is not None and p == target), None)
        if bd is None:  # only scalar operands are batched (a batched select predicate)
            bd = 0
        full = (*target[:bd], axis.size, *target[bd:])
        moved = []
        for x, d, p in zip(args, dims, per):
            if d is None:
                if p == target:
                    x = broadcast_batched(x, axis.size, bd)
                elif p != ():
                    raise ValueError(f"vmap: {name} operand {shape(x)} does not match {target}")
                # an unbatched scalar next to arrays (select, clamp) stays a scalar
            elif p == target:
                x = moveaxis(x, d, bd)
            else:  # a batched scalar next to arrays: broadcast to the full shape
                x = bind("broadcast_in_dim", x, shape=full, broadcast_dimensions=(bd,))[0]
            moved.append(x)
        outs = bind(name, *moved, **attrs)
        return outs, [bd] * len(outs)

    rule.__name__ = f"{name}_batching_rule"
    return rule


for _name, _opdef in all_ops().items():
    if "elementwise" in _opdef.traits and _name not in RULES:
        RULES[_name] = elementwise_rule(_name)
