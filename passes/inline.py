"""Inlining of `call` ops (a jitted function called under an outer jit).

Guarantees: every `call` op (at the top level and inside the regions of other ops, nested
calls included) is replaced by a copy of its function's ops, with the function's parameters
bound to the call's operands and fresh values for everything the copy defines; uses of the
call's results read the copy's results. The program computes exactly what it did: a call
is its region applied to its operands (`ir/ops/call.py`).
Never touches: other ops, parameters, the order of the ops around a call. A function called
twice is copied twice (two calls never share values).

XLA inlines `func.call` anyway (DESIGN.md, "Passes"), so inlining first lets purejit's own
passes see across the call boundary (CSE, fusion, layout); a pipeline that keeps calls (the
compile-once work) disables this pass by name ("inline").
"""

from __future__ import annotations

from dataclasses import dataclass

from purejit.ir import Function, Op, Value
from purejit.passes.base import PassResult


def _emit(fn: Function, names: dict, out: list[Op], fresh: bool) -> int:
    """Append `fn`'s ops to `out` with every call replaced by its callee's ops, operands
    renamed through `names` (which gains the values that replace each result); returns how
    many calls were inlined. `fresh`: the ops are a copy (a callee's body, which may be
    inlined more than once) and get new result values; otherwise an op keeps its results
    and is rebuilt only where an operand or a region changed."""
    count = 0
    for op in fn.ops:
        operands = [names.get(v, v) for v in op.operands]
        if op.name == "call":
            callee = op.regions[0]
            inner_names = dict(zip(callee.params, operands))
            count += 1 + _emit(callee, inner_names, out, fresh=True)
            names.update(zip(op.results, [inner_names.get(v, v) for v in callee.results]))
            continue
        regions, inner = _inline_regions(op.regions)
        count += inner
        if fresh:
            results = [Value(r.type) for r in op.results]
            names.update(zip(op.results, results))
            op = Op(op.name, operands, op.attrs, results, regions, op.loc)
        elif inner or operands != list(op.operands):
            op = Op(op.name, operands, op.attrs, op.results, regions, op.loc)
        out.append(op)
    return count


def _inline_regions(regions) -> tuple[list[Function], int]:
    new, count = [], 0
    for r in regions:
        fn, n = inline_calls(r)
        new.append(fn)
        count += n
    return new, count


def inline_calls(fn: Function) -> tuple[Function, int]:
    """`fn` with every call inlined, and how many there were (`fn` itself when none)."""
    if not any(op.name == "call" or op.regions for op in fn.ops):
        return fn, 0
    ops: list[Op] = []
    names: dict = {}
    count = _emit(fn, names, ops, fresh=False)
    if not count:
        return fn, 0
    results = [names.get(v, v) for v in fn.results]
    return Function(fn.name, fn.params, ops, results), count


@dataclass(frozen=True)
class Inline:
    """The pass: `call` ops replaced by their functions' ops (see the module docstring)."""

    name: str = "inline"

    def __call__(self, fn: Function) -> PassResult:
        new, count = inline_calls(fn)
        return PassResult(new, count > 0, {"calls_inlined": count})
