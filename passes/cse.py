"""Common-subexpression elimination.

Guarantees: of two ops with the same name, the same operands (in either order when the op
is `commutative`), equal attributes, equal regions and equal result types, only the first is
kept and uses of the second's results are redirected to it. Works inside regions (each region
is its own scope: regions are closed, so nothing is shared across the boundary).
Never touches: ops with the `side_effect` or `collective` trait or without `pure` (two calls
may not be merged), parameters, the order of the ops it keeps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from purejit.ir import Function, Op, Value, print_function
from purejit.passes.base import PassResult, has_effect


def mergeable(op: Op) -> bool:
    """Whether two copies of `op` may be merged into one: pure and without effects, in its
    regions too."""
    return not has_effect(op)


def _attr_key(v):
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.dtype.name, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_attr_key(x) for x in v)
    if isinstance(v, float) and math.isnan(v):
        return ("nan",)
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    return (type(v).__name__, v)


def op_key(op: Op, operands: list[Value], texts: dict | None = None):
    """A hashable key that is equal for ops computing the same values. `texts` caches the
    printed form of regions by identity (regions are often shared between ops)."""
    ins = tuple(operands)
    if op.has_trait("commutative") and len(ins) == 2 and ins[1].id < ins[0].id:
        ins = (ins[1], ins[0])
    attrs = tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items()))
    texts = {} if texts is None else texts
    regions = []
    for r in op.regions:
        if id(r) not in texts:
            texts[id(r)] = (r, print_function(r))  # keep r alive: ids stay unique
        regions.append(texts[id(r)][1])
    regions = tuple(regions)
    types = tuple(r.type for r in op.results)
    return (op.name, ins, attrs, regions, types)


def _cse(fn: Function, texts: dict, done: dict) -> tuple[Function, int]:
    """CSE over `fn`; `texts` caches printed regions and `done` CSE'd regions, both by
    identity (one region object is often shared by many ops)."""
    seen: dict = {}
    replace: dict[Value, Value] = {}
    ops: list[Op] = []
    merged = 0
    for op in fn.ops:
        operands = [replace.get(v, v) for v in op.operands]
        regions = []
        for r in op.regions:
            if id(r) not in done:
                done[id(r)] = (r, *_cse(r, texts, done))  # keep r alive: ids stay unique
            _, new_r, n = done[id(r)]
            merged += n
            regions.append(new_r if n else r)
        new = op.rebuilt(operands, regions)
        if mergeable(op):
            key = op_key(op, operands, texts)  # original regions: shared, printed once
            first = seen.get(key)
            if first is not None:
                replace.update(zip(op.results, first))
                merged += 1
                continue
            seen[key] = op.results
        ops.append(new)
    results = [replace.get(v, v) for v in fn.results]
    return Function(fn.name, fn.params, ops, results), merged


@dataclass(frozen=True)
class CSE:
    """Merge repeated pure computations (see the module docstring)."""

    name: str = "cse"
    idempotent: bool = True  # its output has nothing left for it to do

    def __call__(self, fn: Function) -> PassResult:
        new, merged = _cse(fn, {}, {})
        return PassResult(new, merged > 0, {"merged_ops": merged})
