"""Fusion: groups ops into `fusion` ops, each one kernel that moves fewer bytes.

Which ops may join a group (asked by trait):
    core    `elementwise` ops and `reduction`s with one result: the group's work
    cheap   one-operand `shape_only` ops (broadcast, reshape, transpose, slice, ...) and
            `iota`: index arithmetic only, so they are copied into every group that reads
            them instead of being materialised
    leaves  constants of at most `max_constant_elements` elements are copied in as well
    copies  a cheap elementwise op (trait `cheap`: add, multiply, compare, ...)
            read by several groups is copied into each of them when the cost model says
            recomputing it moves fewer bytes than writing it once and reading it back
Everything else (contractions, control flow, effects, collectives, multi-result ops) stays
a kernel of its own, and its results are group inputs.

How groups form (a greedy pass over the cost model of `purejit.passes.cost`):
    1. producer into consumer: visiting ops from last to first, an op joins the group of
       its consumers when all of them are in that one group, its result is not needed
       elsewhere, and no path from it to the group grows the element count (a broadcast
       would make the kernel recompute it per copy: expensive work is never duplicated).
       This fuses elementwise chains, broadcasts/reshapes feeding them, reductions with
       their elementwise producers (input fusion) and elementwise consumers of a reduction
       on the reduced shape.
    2. siblings (`multi_output=True`): two groups that read the same input and produce the
       same shape merge into one kernel with two results when the merged kernel moves fewer
       bytes and neither group depends on the other.
A group becomes a `fusion` op when it holds at least `min_group_ops` (2) ops that are not
constants.

Guarantees: the result computes the same numbers (every live op is kept, moved into a
region or left in place; ops left dead by copying are removed); no work is done twice except
index ops, constants and cheap elementwise copies (never along a growing path); groups have
one result unless `multi_output`. Looks into `control_flow` regions. Never touches: ops it
cannot fuse, parameters, the function's results.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from purejit.ir import Function, Op, Value
from purejit.passes import cost
from purejit.passes.cse import mergeable
from purejit.passes.dce import _dce
from purejit.passes.base import PassResult


def _single(op: Op) -> bool:
    return len(op.results) == 1 and mergeable(op)


def is_cheap(op: Op) -> bool:
    """Index-only ops that may be copied into each group reading them."""
    if not _single(op) or op.has_trait("constant") or not op.has_trait("shape_only"):
        return False
    return len(op.operands) <= 1


def is_core(op: Op) -> bool:
    """Ops that do a group's work."""
    if not _single(op):
        return False
    if op.has_trait("elementwise"):
        return True
    return op.has_trait("reduction") and len(op.operands) == 2


class _Graph:
    """Positions, users and group membership of one function's ops."""

    def __init__(self, fn: Function, opts: Fusion):
        self.fn = fn
        self.opts = opts
        max_const = opts.max_constant_elements
        allowed = {id(op) for op in fn.ops if op.name not in opts.exclude_ops}
        self.ops = fn.ops
        self.pos = {id(op): i for i, op in enumerate(fn.ops)}
        self.defs: dict[Value, Op] = {r: op for op in fn.ops for r in op.results}
        self.users: dict[Value, list[Op]] = {}
        for op in fn.ops:
            for v in op.operands:
                self.users.setdefault(v, []).append(op)
        self.returned = set(fn.results)
        self.max_const = max_const
        self.group: dict[int, int] = {}  # id(core op) -> group id
        self.members: dict[int, list[Op]] = {}
        self.copied: set[int] = set()  # ids of cheap elementwise ops copied into their users
        self.cheap = {id(op) for op in fn.ops if is_cheap(op) and id(op) in allowed}
        self.core = {id(op) for op in fn.ops if is_core(op) and id(op) in allowed}
        self._uses: dict[Value, list] = {}

    def is_leaf_const(self, op: Op | None) -> bool:
        return (
            op is not None
            and op.has_trait("constant")
            and op.results[0].type.size <= self.max_const
        )

    def copies(self, op: Op | None) -> bool:
        """Whether `op` is copied into each group that reads it rather than materialised."""
        return op is not None and (id(op) in self.cheap or id(op) in self.copied)

    def effective_uses(self, v: Value):
        """(consumer, grows) for each use of `v`, looking through copied ops; `grows` says
        the path multiplies elements; a `None` consumer means the value is needed outside
        any group (returned, or read by an op that is not fused). Computed once per value:
        every consumer is grouped (or copied) before its producers are visited."""
        hit = self._uses.get(v)
        if hit is not None:
            return hit
        out, stack = [], [(v, v.type.size, False)]
        while stack:
            val, size, grows = stack.pop()
            if val in self.returned:
                out.append((None, grows))
            for u in self.users.get(val, ()):
                r = u.results[0] if u.results else None
                g = grows or (r is not None and r.type.size > size)
                if self.copies(u):
                    stack.append((r, size, g))
                elif id(u) in self.group:
                    out.append((u, g))
                else:
                    out.append((None, g))
        self._uses[v] = out
        return out

    def only_elementwise_after(self, op: Op, gid: int) -> bool:
        """Whether everything in group `gid` downstream of `op` is elementwise (copied
        index ops that lead into the group are not)."""
        stack, seen = [op.results[0]], set()
        while stack:
            v = stack.pop()
            for u in self.users.get(v, ()):
                if id(u) in seen:
                    continue
                seen.add(id(u))
                if id(u) in self.cheap:
                    if any(
                        c is not None and self.group[id(c)] == gid
                        for c, _ in self.effective_uses(u.results[0])
                    ):
                        return False
                elif id(u) in self.copied or self.group.get(id(u)) == gid:
                    if not u.has_trait("elementwise"):
                        return False
                    stack.append(u.results[0])
        return True


_MAX_COPIES = 4


def _worth_copying(g: _Graph, op: Op, uses, targets) -> bool:
    """Copy a cheap elementwise op into each reading group when that moves fewer bytes than
    materialising it (written once, read by each group) and never multiplies its work."""
    if not cost.is_cheap_elementwise(op) or None in targets or len(targets) > _MAX_COPIES:
        return False
    if any(grows for _, grows in uses):
        return False
    n = len(targets)
    ins = cost.value_bytes(op.operands)
    out = op.results[0].type.nbytes
    return n * ins <= out * (1 + n) + ins


def _form_groups(g: _Graph):
    """Step 1: producer-into-consumer merging, last op first."""
    next_id = 0
    for op in reversed(g.ops):
        if id(op) not in g.core:
            continue
        uses = g.effective_uses(op.results[0])
        targets = {g.group[id(u)] if u is not None else None for u, _ in uses}
        if (
            len(targets) == 1
            and None not in targets
            and not any(gr for _, gr in uses)
            and _after_reduction_ok(g, op, next(iter(targets)))
        ):
            (gid,) = targets
        elif len(targets) > 1 and _worth_copying(g, op, uses, targets):
            g.copied.add(id(op))
            continue
        else:
            gid, next_id = next_id, next_id + 1
            g.members[gid] = []
        g.group[id(op)] = gid
        g.members[gid].append(op)


def _after_reduction_ok(g: _Graph, op: Op, gid: int) -> bool:
    if not g.opts.elementwise_after_reduction or not op.has_trait("reduction"):
        return True
    return g.only_elementwise_after(op, gid)


def _roots(g: _Graph, gid: int) -> list[Op]:
    """Members whose result is needed outside the group."""
    out = []
    for op in g.members[gid]:
        uses = g.effective_uses(op.results[0])
        if any(u is None or g.group[id(u)] != gid for u, _ in uses):
            out.append(op)
    return out


def _inputs(g: _Graph, gid: int) -> list[Value]:
    """External values a group reads (copied ops and small constants looked through)."""
    seen, out = set(), []
    inside = {id(op) for op in g.members[gid]}

    def need(v: Value):
        if v in seen:
            return
        seen.add(v)
        d = g.defs.get(v)
        if (d is not None and id(d) in inside) or g.is_leaf_const(d):
            return
        if g.copies(d):
            for w in d.operands:
                need(w)
            return
        out.append(v)

    for op in g.members[gid]:
        for v in op.operands:
            need(v)
    return out


_REACH_BUDGET = 128  # nodes a dependence check may visit before it answers "maybe"


def _reaches(g: _Graph, start: list[Op], target: int, skip: int) -> bool:
    """Whether a path from the users of `start` (outside group `skip`) reaches `target`,
    with groups condensed to single nodes. Past `_REACH_BUDGET` visited nodes it answers
    True: refusing a sibling merge is always safe, and this keeps the pass linear-ish."""
    seen: set = set()
    stack = [u for op in start for r in op.results for u in g.users.get(r, [])]
    while stack:
        if len(seen) > _REACH_BUDGET:
            return True
        op = stack.pop()
        gid = g.group.get(id(op))
        if gid == target:
            return True
        if gid == skip:
            continue
        key = ("g", gid) if gid is not None else id(op)
        if key in seen:
            continue
        seen.add(key)
        for m in g.members[gid] if gid is not None else [op]:
            for r in m.results:
                stack += g.users.get(r, [])
    return False


def _merge_siblings(g: _Graph):
    """Step 2: merge groups that read the same input and have equally shaped results."""
    readers: dict[Value, list[int]] = {}
    for gid in list(g.members):
        for v in _inputs(g, gid):
            readers.setdefault(v, []).append(gid)
    merged_into: dict[int, int] = {}

    def find(gid: int) -> int:
        while gid in merged_into:
            gid = merged_into[gid]
        return gid

    for gids in readers.values():
        gids = list(dict.fromkeys(find(x) for x in gids))
        base = gids[0]
        for other in gids[1:]:
            if not _sibling_ok(g, base, other):
                continue
            for op in g.members.pop(other):
                g.group[id(op)] = base
                g.members[base].append(op)
            g.members[base].sort(key=lambda op: g.pos[id(op)])
            merged_into[other] = base


def _sibling_ok(g: _Graph, a: int, b: int) -> bool:
    ra, rb = _roots(g, a), _roots(g, b)
    if len({op.results[0].type.shape for op in ra + rb}) != 1:
        return False
    ia, ib = _inputs(g, a), _inputs(g, b)
    oa, ob = [op.results[0] for op in ra], [op.results[0] for op in rb]
    before = cost.group_traffic(ia, oa) + cost.group_traffic(ib, ob)
    if cost.group_traffic(ia + ib, oa + ob) >= before:
        return False
    return not _reaches(g, g.members[a], b, a) and not _reaches(g, g.members[b], a, b)


def _build_region(g: _Graph, gid: int) -> tuple[list[Value], list[Value], Function, str]:
    """The group's region: (inputs, outputs, region function, kind)."""
    members = sorted(g.members[gid], key=lambda op: g.pos[id(op)])
    inside = {id(op) for op in members}
    env: dict[Value, Value] = {}
    params: list[Value] = []
    inputs: list[Value] = []
    ops: list[Op] = []

    def value(v: Value) -> Value:
        if v in env:
            return env[v]
        d = g.defs.get(v)
        if d is not None and id(d) not in inside and (g.is_leaf_const(d) or g.copies(d)):
            ops.append(_clone(d, [value(w) for w in d.operands], env))
            return env[v]
        p = Value(v.type)
        params.append(p)
        inputs.append(v)
        env[v] = p
        return p

    for op in members:
        ops.append(_clone(op, [value(w) for w in op.operands], env))
    roots = _roots(g, gid)
    outputs = [r.results[0] for r in sorted(roots, key=lambda op: g.pos[id(op)])]
    region = Function("region", params, ops, [env[v] for v in outputs])
    kind = "input" if any(op.has_trait("reduction") for op in members) else "loop"
    return inputs, outputs, region, kind


def _next_to(g: _Graph, inputs: list[Value], outputs: list[Value], names) -> bool:
    """Whether a group reads a value made by, or feeds, an op named in `names`."""
    if not names:
        return False
    if any((d := g.defs.get(v)) is not None and d.name in names for v in inputs):
        return True
    return any(u.name in names for v in outputs for u in g.users.get(v, ()))


def _clone(op: Op, operands: list[Value], env: dict) -> Op:
    results = [Value(r.type) for r in op.results]
    env.update(zip(op.results, results))
    return Op(op.name, operands, op.attrs, results, op.regions, op.loc)


def _fuse(fn: Function, opts: Fusion) -> tuple[Function, list[dict]]:
    # fuse inside control-flow bodies first
    groups_info: list[dict] = []
    ops = []
    for op in fn.ops:
        if op.regions and op.has_trait("control_flow"):
            regions = []
            for r in op.regions:
                new_r, info = _fuse(r, opts)
                groups_info += info
                regions.append(new_r)
            op = Op(op.name, op.operands, op.attrs, op.results, regions, op.loc)
        ops.append(op)
    fn = Function(fn.name, fn.params, ops, fn.results)
    g = _Graph(fn, opts)
    _form_groups(g)
    if opts.multi_output:
        _merge_siblings(g)

    # nodes of the new function: fusion ops and the ops left alone, in a topological order
    nodes: list[tuple[int, Op]] = []
    placed: set[int] = set()
    for gid, members in g.members.items():
        inputs, outputs, region, kind = _build_region(g, gid)
        if sum(not op.has_trait("constant") for op in region.ops) < opts.min_group_ops:
            continue
        if _next_to(g, inputs, outputs, opts.keep_apart_from):
            continue
        if not opts.bool_boundaries and any(v.type.dtype == np.bool_ for v in inputs + outputs):
            continue
        fusion = Op("fusion", inputs, {"kind": kind}, outputs, [region], members[-1].loc)
        nodes.append((max(g.pos[id(op)] for op in members), fusion))
        placed.update(id(op) for op in members)
        groups_info.append(
            {
                "kind": kind,
                "ops": [op.name for op in region.ops if not op.has_trait("constant")],
                "bytes_read": cost.value_bytes(inputs),
                "bytes_written": cost.value_bytes(outputs),
                "bytes_eager": sum(cost.kernel_bytes(op) for op in region.ops),
            }
        )
    nodes += [(g.pos[id(op)], op) for op in fn.ops if id(op) not in placed]
    new = Function(fn.name, fn.params, _topological(nodes), fn.results)
    new, _ = _dce(new)
    return new, groups_info


def _topological(nodes: list[tuple[int, Op]]) -> list[Op]:
    """Order nodes so every value is defined before use, keeping original order if possible."""
    producer: dict[Value, int] = {}
    for k, (_, op) in enumerate(nodes):
        for r in op.results:
            producer[r] = k
    deps = [{producer[v] for v in op.operands if v in producer} for _, op in nodes]
    users: list[list[int]] = [[] for _ in nodes]
    for k, ds in enumerate(deps):
        for d in ds:
            users[d].append(k)
    waiting = [len(ds) for ds in deps]
    heap = [(nodes[k][0], k) for k in range(len(nodes)) if waiting[k] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, k = heapq.heappop(heap)
        out.append(nodes[k][1])
        for u in users[k]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(heap, (nodes[u][0], u))
    if len(out) != len(nodes):
        raise AssertionError("fusion: the grouped program has a cycle")
    return out


@dataclass(frozen=True)
class Fusion:
    """Group ops into `fusion` kernels (see the module docstring).

    Attributes:
        multi_output: allow sibling fusion (kernels with several results).
        max_constant_elements: constants up to this size are copied into groups.
        exclude_ops: op names never put in a group (what a back end cannot take).
        elementwise_after_reduction: only elementwise ops may follow a reduction in a group.
        min_group_ops: the fewest ops (constants aside) a group needs to become a `fusion`
            op; 1 wraps lone ops too, so that a back end running groups as kernels cannot
            rewrite them (XLA splits a lone reduction into two kernels, for one).
        bool_boundaries: whether a group may read or write `pred` values (XLA CPU aborts
            with `has_layout()` on a pre-built fusion with a pred operand or result).
        keep_apart_from: op names whose results a group may not read and which may not read
            a group's results (the group's ops then stay unfused): XLA's layout assignment
            relays such neighbours of a pre-built fusion and then rejects it.
    """

    name: str = "fusion"
    multi_output: bool = True
    max_constant_elements: int = 16
    exclude_ops: tuple[str, ...] = ()
    elementwise_after_reduction: bool = False
    min_group_ops: int = 2
    keep_apart_from: tuple[str, ...] = ()
    bool_boundaries: bool = True

    def __call__(self, fn: Function) -> PassResult:
        if any(op.has_trait("fusion") for op in fn.walk()):
            return PassResult(fn, False, {"groups": 0, "note": "already fused"})
        new, groups = _fuse(fn, self)
        eager = sum(gr["bytes_eager"] for gr in groups)
        fused = sum(gr["bytes_read"] + gr["bytes_written"] for gr in groups)
        report = {
            "groups": len(groups),
            "fused_ops": sum(len(gr["ops"]) for gr in groups),
            "bytes_eager": eager,
            "bytes_fused": fused,
            "group_list": groups,
        }
        return PassResult(new, bool(groups), report)
