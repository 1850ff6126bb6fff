"""Dead-code elimination.

Guarantees: removes every op none of whose results is used (transitively from the returned
values), unless the op or an op in its regions has the `side_effect` or `collective` trait;
works inside regions too.
A `scan` also loses what it computes for nobody: carries that no result uses and that the
body's other outputs do not read (to a fixed point), stacked outputs no one uses, and consts
and xs its body no longer reads.
Never touches: parameters (the signature stays), live ops, op order.
"""

from __future__ import annotations

from dataclasses import dataclass

from purejit.ir import Function, Op
from purejit.ir.ops.control import scan_split
from purejit.passes.base import PassResult, has_effect


def _keeps(op: Op) -> bool:
    return has_effect(op)


def _prune_scan(op: Op, live: set) -> tuple[Op, int, int]:
    """`op` without its dead carries, ys, consts and xs, and with its body DCE'd.

    A carry stays when its result is live or when a kept body output reads its parameter;
    keeping one can make the body read another, hence the loop. Returns the op (the same
    object when nothing changed), the ops removed from the body and the values dropped.
    """
    (body,) = op.regions
    const_ps, carry_ps, x_ps = scan_split(op.attrs, body.params)
    ncarry = len(carry_ps)
    keep_carry = [r in live for r in op.results[:ncarry]]
    keep_y = [r in live for r in op.results[ncarry:]]
    while True:
        outs = [v for v, k in zip(body.results, keep_carry + keep_y) if k]
        new_body, removed, pruned = _dce_counts(Function(body.name, body.params, body.ops, outs))
        read = set(new_body.results)
        for inner in new_body.ops:
            read.update(inner.operands)
        grown = [k or p in read for k, p in zip(keep_carry, carry_ps)]
        if grown == keep_carry:
            break
        keep_carry = grown
    keep_const = [p in read for p in const_ps]
    keep_x = [p in read for p in x_ps]
    keep_in = keep_const + keep_carry + keep_x
    dropped = keep_in.count(False) + keep_y.count(False)
    if not dropped and not removed and not pruned:
        return op, 0, 0

    def kept(items, flags):
        return [v for v, k in zip(items, flags) if k]

    params = kept(body.params, keep_in)
    region = Function(body.name, params, new_body.ops, new_body.results)
    attrs = dict(op.attrs, num_consts=sum(keep_const), num_carry=sum(keep_carry))
    results = kept(op.results, keep_carry + keep_y)
    new = Op(op.name, kept(op.operands, keep_in), attrs, results, [region], op.loc)
    return new, removed, pruned + dropped


# ops whose operands and results DCE may shrink, by the rule that knows their layout
_PRUNE = {"scan": _prune_scan}


def _dce(fn: Function) -> tuple[Function, int]:
    """(new function, ops removed); `fn` itself if nothing changed."""
    new, removed, _ = _dce_counts(fn)
    return new, removed


def _dce_counts(fn: Function) -> tuple[Function, int, int]:
    """(new function, ops removed, loop values dropped); `fn` itself if nothing changed."""
    live = set(fn.results)
    kept: list[Op] = []
    removed = pruned = 0
    for op in reversed(fn.ops):
        if _keeps(op) or any(r in live for r in op.results):
            prune = _PRUNE.get(op.name)
            if prune is not None:
                op, inner, values = prune(op, live)
                removed += inner
                pruned += values
            elif op.regions:
                regions = []
                inner = values = 0
                for r in op.regions:
                    new, n, v = _dce_counts(r)
                    inner += n
                    values += v
                    regions.append(new)
                if inner or values:  # keep the op object (and what is known about it)
                    removed += inner
                    pruned += values
                    op = Op(op.name, op.operands, op.attrs, op.results, regions, op.loc)
            live.update(op.operands)
            kept.append(op)
        else:
            removed += 1 + sum(r.op_count() for r in op.regions)
    kept.reverse()
    if not removed and not pruned:
        return fn, 0, 0
    return Function(fn.name, fn.params, kept, fn.results), removed, pruned


@dataclass(frozen=True)
class DCE:
    name: str = "dce"
    idempotent: bool = True  # its output has nothing left for it to do

    def __call__(self, fn: Function) -> PassResult:
        new, removed, pruned = _dce_counts(fn)
        report = {"removed_ops": removed}
        if pruned:
            report["pruned_loop_values"] = pruned
        return PassResult(new, new is not fn, report)
