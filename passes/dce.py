"""Dead-code elimination.

Guarantees: removes every op none of whose results is used (transitively from the returned
values), unless the op has the `side_effect` or `collective` trait; works inside regions too.
Never touches: parameters (the signature stays), live ops, op order.
"""

from __future__ import annotations

from dataclasses import dataclass

from purejit.ir import Function, Op
from purejit.passes.base import PassResult


def _keeps(op: Op) -> bool:
    traits = op.opdef.traits
    return "side_effect" in traits or "collective" in traits or "pure" not in traits


def _dce(fn: Function) -> tuple[Function, int]:
    live = set(fn.results)
    kept: list[Op] = []
    removed = 0
    for op in reversed(fn.ops):
        if _keeps(op) or any(r in live for r in op.results):
            if op.regions:
                regions = []
                inner = 0
                for r in op.regions:
                    new, n = _dce(r)
                    inner += n
                    regions.append(new)
                if inner:  # keep the op object (and what is known about it) if unchanged
                    removed += inner
                    op = Op(op.name, op.operands, op.attrs, op.results, regions, op.loc)
            live.update(op.operands)
            kept.append(op)
        else:
            removed += 1 + sum(r.op_count() for r in op.regions)
    kept.reverse()
    if not removed:
        return fn, 0
    return Function(fn.name, fn.params, kept, fn.results), removed


@dataclass(frozen=True)
class DCE:
    name: str = "dce"
    idempotent: bool = True  # its output has nothing left for it to do

    def __call__(self, fn: Function) -> PassResult:
        new, removed = _dce(fn)
        return PassResult(new, removed > 0, {"removed_ops": removed})
