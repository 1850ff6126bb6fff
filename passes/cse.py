"""Common-subexpression elimination.

Guarantees: of two ops with the same name, the same operands (in either order when the op
is `commutative`), equal attributes, equal regions and equal result types, only the first is
kept and uses of the second's results are redirected to it. Works inside regions (each region
is its own scope: regions are closed, so nothing is shared across the boundary).
Never touches: ops with the `side_effect` or `collective` trait or without `pure` (two calls
may not be merged), parameters, the order of the ops it keeps, and a divisor's broadcast and
what that broadcast reads: XLA's algebraic simplifier turns `A / broadcast(B)` into
`A * broadcast(1 / B)`, which rounds differently, only while `B` has one user, and it runs
before XLA's own CSE; merging those here would change which divides XLA rewrites, and the
program would no longer give the bits JAX's does (measured: optax's MultiSteps, whose
`g / (n + 1)` per parameter became one shared `n + 1`, left 4 of 9 parameters 13 ulp off).
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


_PLAIN = (int, str, bool)  # (exact types) their own key, as the last case below gives


def _attr_key(v):
    t = type(v)
    if t in _PLAIN:
        return (t.__name__, v)
    if t is list and all(type(x) is int for x in v):  # shapes, dimensions, sizes
        return tuple([("int", x) for x in v])
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.dtype.name, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_attr_key(x) for x in v)
    if isinstance(v, float) and math.isnan(v):
        return ("nan",)
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    return (type(v).__name__, v)


def op_key(op: Op, operands: list[Value], texts: dict | None = None, regions: bool = True):
    """A hashable key that is equal for ops computing the same values. `texts` caches the
    printed form of regions by identity (regions are often shared between ops); with
    `regions=False` the key leaves the regions out (equal keys then still need
    `_region_texts` compared)."""
    ins = tuple(operands)
    if len(ins) == 2 and ins[1].id < ins[0].id and op.has_trait("commutative"):
        ins = (ins[1], ins[0])
    attrs = tuple(sorted([(k, _attr_key(v)) for k, v in op.attrs.items()])) if op.attrs else ()
    texts = {} if texts is None else texts
    printed = _region_texts(op, texts) if regions else ()
    types = tuple([r.type for r in op.results])
    return (op.name, ins, attrs, printed, types)


def _region_texts(op: Op, texts: dict) -> tuple:
    out = []
    for r in op.regions:
        if id(r) not in texts:
            texts[id(r)] = (r, print_function(r))  # keep r alive: ids stay unique
        out.append(texts[id(r)][1])
    return tuple(out)


# XLA rewrites that count users (one rule per op): op -> (operand, that operand's producer)
# whose result and input keep their own users; see the module docstring
_USER_COUNTED = {"divide": (1, "broadcast_in_dim")}


def _user_counted(fn: Function) -> set[Value]:
    """Values whose number of users XLA's simplifier reads: a divisor's broadcast and the
    value it broadcasts."""
    producer = {r: op for op in fn.ops for r in op.results}
    out: set[Value] = set()
    for op in fn.ops:
        rule = _USER_COUNTED.get(op.name)
        if rule is None:
            continue
        which, producer_name = rule
        b = producer.get(op.operands[which])
        if b is not None and b.name == producer_name:
            out.add(op.operands[which])
            out.update(b.operands)
    return out


def _cse(fn: Function, texts: dict, done: dict) -> tuple[Function, int]:
    """CSE over `fn`; `texts` caches printed regions and `done` CSE'd regions, both by
    identity (one region object is often shared by many ops)."""
    keep_apart = _user_counted(fn)
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
        if mergeable(op) and not (keep_apart and any(r in keep_apart for r in op.results)):
            # regions are printed only for ops alike in all else (a large region, such as
            # a case's many branches, is printed only when it may merge); the original
            # regions: shared, printed once
            key = op_key(op, operands, texts, regions=False)
            alike = seen.setdefault(key, [])
            first = None
            if alike:
                mine = _region_texts(op, texts)
                first = next((res for o, res in alike if _region_texts(o, texts) == mine), None)
            if first is not None:
                replace.update(zip(op.results, first))
                merged += 1
                continue
            alike.append((op, op.results))
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
