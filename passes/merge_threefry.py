"""Merge independent `threefry2x32` hashes into one hash over their concatenated counters.

A program that draws from many keys (a model's initialisers, one sampler per layer) holds
many small hashes; on CPU each becomes its own 5-trip loop, and XLA's compile time grows
with the number of loops and kernels. Hashes with no data path between them can run as one:
every operand is broadcast to its hash's shape and flattened, the pieces are concatenated,
one hash runs over them, and each original result is a slice of the merged words, reshaped.
The hash is elementwise in its broadcast operands and integer, so every bit is unchanged.

Which hashes merge: the live ones of at most `max_size` counters, grouped by their height
(the longest chain of hashes that depends on them: 0 for a hash no other hash reads, such
as a sampler's, 1 for a `split` whose keys only feed samplers, ...). Two hashes of one
height never depend on each other, and every path between groups goes from a greater
height to a smaller one, so the groups merge without a cycle. A group is cut into runs of
at most `max_total` counters, in program order; runs of one hash are left alone.

Guarantees: the results, their bits and the signature are unchanged; side-effecting ops
keep their relative order. Never touches: hashes inside a group of one, hashes larger than
`max_size`, any other op (only its position may move, after the merged hash it reads).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from purejit.ir import Function, Op, Value, get_op

from purejit.passes.base import PassResult, has_effect


def _new_op(name: str, operands, attrs: dict, loc, results=None) -> Op:
    """An op of `name` whose results are fresh values of the inferred types, or `results`."""
    types = get_op(name).infer([v.type for v in operands], attrs, [])
    if results is None:
        results = [Value(t) for t in types]
    return Op(name, operands, attrs, results, (), loc)


def _stacked(values: list[Value], shape: tuple[int, ...], share: bool, ops: list, loc) -> Value:
    """One operand of the merged hash: the value itself when every member reads the same
    one and `share` (it broadcasts over the leading dimension), else the members' values
    padded to the rank of `shape` and stacked along a new leading dimension."""
    if share:
        return values[0]
    t = values[0].type
    row = (1,) * (1 + len(shape) - t.rank) + t.shape
    pieces = []
    for v in values:
        ops.append(_new_op("reshape", [v], {"shape": row}, loc))
        pieces.append(ops[-1].results[0])
    ops.append(_new_op("concatenate", pieces, {"dimension": 0}, loc))
    return ops[-1].results[0]


def _merged(members: list[Op], barrier: bool) -> list[Op]:
    """The ops computing every member's results (all of one shape `S`) from one hash of
    shape `[len(members), *S]`, row `j` being member `j`'s."""
    loc = members[0].loc
    ops: list[Op] = []
    shape = members[0].results[0].type.shape
    operands = [[m.operands[k] for m in members] for k in range(4)]
    share = [all(v is vs[0] for v in vs) for vs in operands]
    share[0] = share[0] and not all(share)  # at least one operand is stacked
    words = [_stacked(vs, shape, sh, ops, loc) for vs, sh in zip(operands, share)]
    ops.append(_new_op("threefry2x32", words, {}, loc))
    y = ops[-1].results
    if barrier:  # keep the merged words materialised (XLA must not fuse the hash into each slice)
        ops.append(_new_op("optimization_barrier", y, {}, loc))
        y = ops[-1].results
    for j, m in enumerate(members):
        for word, result in zip(y, m.results):
            attrs = {
                "start_indices": (j,) + (0,) * len(shape),
                "limit_indices": (j + 1, *shape),
                "strides": (1,) * (1 + len(shape)),
            }
            ops.append(_new_op("slice", [word], attrs, loc))
            ops.append(_new_op("reshape", ops[-1].results, {"shape": shape}, loc, [result]))
    return ops


@dataclass(frozen=True)
class MergeThreefry:
    """Merge independent small `threefry2x32` hashes (see the module docstring).

    Attributes:
        max_size: the largest hash (in counters) that may be merged.
        max_total: the most counters one merged hash may hold.
        barrier: put the merged words behind an `optimization_barrier`, so that XLA computes
            the merged hash once instead of fusing it into every slice that reads it.
    """

    max_size: int = 1 << 16
    max_total: int = 1 << 20
    barrier: bool = False
    name: str = "merge_threefry"

    def __call__(self, fn: Function) -> PassResult:
        counts = {"merged": 0, "into": 0}
        new = self._merge(fn, counts)
        report = {"hashes_merged": counts["merged"], "merged_hashes": counts["into"]}
        return PassResult(new, new is not fn, report if counts["merged"] else {})

    def _groups(self, fn: Function) -> list[list[int]]:
        """Indices of the hashes to merge together, one list per merged hash."""
        if not any(op.name == "threefry2x32" for op in fn.ops):
            return []  # (most functions hash nothing: no liveness walk for them)
        live = set(fn.results)
        below: dict[Value, int] = {}  # 1 + the greatest height of a hash reading the value
        height: dict[int, int] = {}
        for i in range(len(fn.ops) - 1, -1, -1):
            op = fn.ops[i]
            if not (has_effect(op) or any(r in live for r in op.results)):
                continue
            live.update(op.operands)
            b = max((below.get(r, 0) for r in op.results), default=0)
            if op.name == "threefry2x32" and op.results[0].type.size <= self.max_size:
                height[i] = b
                b += 1
            for v in op.operands:
                if below.get(v, -1) < b:
                    below[v] = b
        # hashes of one height, operand types and results merge (into one of a leading
        # dimension more)
        by_kind: dict[tuple, list[int]] = {}
        for i in sorted(height):
            op = fn.ops[i]
            kind = (height[i], op.results[0].type, *(v.type for v in op.operands))
            by_kind.setdefault(kind, []).append(i)
        groups = []
        for members in by_kind.values():
            if all(fn.ops[i].operands == fn.ops[members[0]].operands for i in members):
                continue  # the same hash again (CSE's to remove), nothing to stack
            run, total = [], 0
            for i in members:
                n = fn.ops[i].results[0].type.size
                if run and total + n > self.max_total:
                    groups.append(run)
                    run, total = [], 0
                run.append(i)
                total += n
            groups.append(run)
        return [g for g in groups if len(g) > 1]

    def _merge(self, fn: Function, counts: dict) -> Function:
        ops, changed = [], False
        for op in fn.ops:  # hashes inside loop bodies and branches merge among themselves
            if op.regions:
                new = op.rebuilt(op.operands, [self._merge(r, counts) for r in op.regions])
                changed |= new is not op
                op = new
            ops.append(op)
        if changed:
            fn = Function(fn.name, fn.params, ops, fn.results)
        groups = self._groups(fn)
        if not groups:
            return fn
        counts["merged"] += sum(len(g) for g in groups)
        counts["into"] += len(groups)
        return Function(fn.name, fn.params, self._schedule(fn, groups), fn.results)

    def _schedule(self, fn: Function, groups: list[list[int]]) -> list[Op]:
        """The ops in a topological order with each group replaced by its merged hash: the
        original order wherever the dependencies allow (Kahn's algorithm, earliest first;
        a group takes the place of its last member); side-effecting ops keep their order."""
        node_of = list(range(len(fn.ops)))  # op index -> node (a group is its last member)
        for g in groups:
            for i in g:
                node_of[i] = g[-1]
        members = {g[-1]: g for g in groups}
        producer: dict[Value, int] = {}
        for i, op in enumerate(fn.ops):
            for r in op.results:
                producer[r] = node_of[i]
        deps: dict[int, set[int]] = {}
        last_effect = None
        for i, op in enumerate(fn.ops):
            n = node_of[i]
            d = deps.setdefault(n, set())
            d.update(producer[v] for v in op.operands if v in producer)
            if has_effect(op):
                if last_effect is not None:
                    d.add(last_effect)
                last_effect = n
        users: dict[int, list[int]] = {}
        waiting = {}
        for n, d in deps.items():
            d.discard(n)
            waiting[n] = len(d)
            for p in d:
                users.setdefault(p, []).append(n)
        ready = [n for n, k in waiting.items() if k == 0]
        heapq.heapify(ready)
        out: list[Op] = []
        scheduled = 0
        while ready:
            n = heapq.heappop(ready)
            scheduled += 1
            if n in members:
                out += _merged([fn.ops[i] for i in members[n]], self.barrier)
            else:
                out.append(fn.ops[n])
            for u in users.get(n, ()):
                waiting[u] -= 1
                if not waiting[u]:
                    heapq.heappush(ready, u)
        if scheduled != len(waiting):
            raise AssertionError("merge_threefry: the merged program has a cycle")
        return out
