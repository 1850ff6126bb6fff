"""What the collective-matmul pass's timed `auto` decision times: a candidate with the
elementwise ops around it, as the program has them.

A candidate timed alone (the collective and its matmul) misses what differs between the
plain program and the ring in their neighbourhood: an elementwise chain after an
all-gather's matmul (a GELU) runs as a kernel of its own after the plain matmul, and the
ring's steps may fuse it into their epilogues; the chain before a reduce-scatter's matmul
may fuse into the ring's per-step slices. So a timing unit holds

- for an all_gather->dot candidate: its matmul's elementwise consumers, forward, up to the
  next op that is not elementwise (`_forward`);
- for a dot->reduce_scatter candidate: the elementwise producers of its matmul's operands,
  backward, down to the previous op that is not elementwise (`_backward`);
- an all_gather->dot candidate and a dot->reduce_scatter candidate whose matmul reads the
  first's result through such a chain (the Megatron MLP: all-gather, matmul, GELU, matmul,
  reduce-scatter) together, as one joint unit, timed with both plain against both rings.

The unit's function (`Unit.function`) copies those ops; an operand from outside comes with
its cheap producers (constants, broadcasts, reshapes and the like, a few deep: a bias stays a
small parameter broadcast as in the program) or else becomes a parameter of its type. Its
results are the unit's values the rest of the body reads. The plain function is what the
timing runs as written; the pass's `apply` on it gives the ring variant, so the chain is in
both. `Unit.text` is what a decision is kept under: the members' signatures and the unit's
function as text, so a candidate with another epilogue is decided separately.

Only ops of the body itself are taken (never regions), and at most `MAX_CHAIN` of them per
unit; past that the chain is cut, which times less of the neighbourhood but never changes
the program.
"""

from __future__ import annotations

from dataclasses import dataclass

from purejit.ir import Function, Op, Value, print_function

MAX_CHAIN = 64  # elementwise ops taken around one unit's candidates
MAX_LEAF_DEPTH = 4  # producers copied behind one outside operand (constants, broadcasts...)
MAX_CONSTANT = 256  # elements of a constant copied into a unit's function; larger: an input

# an op copied behind an outside operand must be cheap to run again and mean the same in the
# timing program: pure, no regions, not per device, not a contraction, reduction or library call
_NOT_LEAF = (
    "collective",
    "per_device",
    "side_effect",
    "contraction",
    "reduction",
    "accumulates",
    "saved",
    "control_flow",
    "fusion",
)


def _is_all_gather(c) -> bool:
    return c.kind.startswith("all_gather")


def _chain_op(op: Op) -> bool:
    """An op a chain may hold: elementwise, pure, without regions or effects."""
    return (
        op.is_elementwise
        and op.has_trait("pure")
        and not op.regions
        and not any(op.has_trait(t) for t in ("collective", "per_device", "side_effect"))
    )


def _leaf_op(op: Op) -> bool:
    if op.has_trait("constant") and any(r.type.size > MAX_CONSTANT for r in op.results):
        return False  # a large literal is an input of the timing (its text would be the key)
    return op.has_trait("pure") and not op.regions and not any(op.has_trait(t) for t in _NOT_LEAF)


class _Index:
    """A body's producers, users and op order, computed once for all its units."""

    def __init__(self, body: Function):
        self.body = body
        self.producer = {r: op for op in body.ops for r in op.results}
        self.users: dict[Value, list[Op]] = {}
        for op in body.ops:
            for v in op.operands:
                self.users.setdefault(v, []).append(op)
        self.order = {id(op): i for i, op in enumerate(body.ops)}
        self.results = set(body.results)

    def sort(self, ops) -> list[Op]:
        return sorted(ops, key=lambda op: self.order[id(op)])


@dataclass(frozen=True, eq=False)
class Unit:
    """One timed decision's members (one or two candidates, in body order) and the chain of
    elementwise ops around them (in body order)."""

    index: _Index
    members: tuple
    chain: tuple

    def describe(self) -> str:
        """The unit in words: its members and the op names of its chain."""
        names = sorted({op.name for op in self.chain})
        kinds = " + ".join(c.kind for c in self.members)
        return f"{kinds} with {', '.join(names)}" if names else f"{kinds} alone"

    def function(self) -> tuple[Function, list[Op]]:
        """The unit as a function of its outside inputs, and the copies of its members'
        collectives (to find the members among the function's candidates)."""
        fresh: dict[Value, Value] = {}
        params: list[Value] = []
        ops: list[Op] = []

        def outside(v: Value, depth: int) -> Value:
            if v in fresh:
                return fresh[v]
            op = self.index.producer.get(v)
            if op is not None and depth < MAX_LEAF_DEPTH and _leaf_op(op):
                operands = [outside(u, depth + 1) for u in op.operands]
                res = [Value(r.type) for r in op.results]
                ops.append(Op(op.name, operands, op.attrs, res, [], op.loc))
                fresh.update(zip(op.results, res))
            else:
                fresh[v] = Value(v.type)
                params.append(fresh[v])
            return fresh[v]

        copies = {}
        for op in self.ops():
            operands = [outside(v, 0) for v in op.operands]  # inside values are in `fresh`
            res = [Value(r.type) for r in op.results]
            new = Op(op.name, operands, op.attrs, res, op.regions, op.loc)
            ops.append(new)
            fresh.update(zip(op.results, res))
            copies[id(op)] = new
        results = [fresh[v] for v in self.exits()]
        name = "_".join(c.kind.replace("->", "_") for c in self.members)
        members = [copies[id(c.collective)] for c in self.members]
        return Function(name, params, ops, results), members

    def text(self, signature) -> str:
        """What the unit's decision is kept under: `signature(c)` of every member and the
        unit's function as text."""
        heads = "\n".join(signature(c) for c in self.members)
        fn = print_function(self.function()[0])
        return f"timing unit of {len(self.members)}\n{heads}\n{fn}"

    def ops(self) -> list[Op]:
        """The members' ops and the chain, in body order."""
        mine = [op for c in self.members for op in (c.collective, c.dot)]
        return self.index.sort(mine + list(self.chain))

    def exits(self) -> list[Value]:
        """The unit's values that the rest of the body (or its results) reads, in order."""
        taken = {id(op) for op in self.ops()}
        out = [
            r
            for op in self.ops()
            for r in op.results
            if r in self.index.results
            or any(id(u) not in taken for u in self.index.users.get(r, []))
        ]
        if not out:  # nothing read outside (dead code): the last member's result
            last = self.members[-1]
            out = [(last.dot if _is_all_gather(last) else last.collective).results[0]]
        return out


def _forward(ix: _Index, c, limit: int) -> list[Op]:
    """The elementwise consumers of all_gather->dot candidate `c`'s matmul, transitively,
    in body order (at most `limit`, the nearest first)."""
    seen, todo, out = set(), [c.dot.results[0]], []
    while todo and len(out) < limit:
        for op in ix.users.get(todo.pop(0), []):
            if id(op) not in seen and _chain_op(op) and len(out) < limit:
                seen.add(id(op))
                out.append(op)
                todo.extend(op.results)
    return ix.sort(out)


def _backward(ix: _Index, c, limit: int) -> list[Op]:
    """The elementwise producers of dot->reduce_scatter candidate `c`'s matmul operands,
    transitively, in body order (at most `limit`, the nearest first)."""
    seen, todo, out = set(), list(c.dot.operands), []
    while todo and len(out) < limit:
        op = ix.producer.get(todo.pop(0))
        if op is None or id(op) in seen or not _chain_op(op):
            continue
        seen.add(id(op))
        out.append(op)
        todo.extend(op.operands)
    return ix.sort(out)


def timing_units(body: Function, candidates: list) -> list[Unit]:
    """The timing units of `body`'s candidates (`find_candidates(body)`), each candidate in
    exactly one, in the order of their first member's candidate."""
    ix = _Index(body)
    fwd = {id(c): _forward(ix, c, MAX_CHAIN) for c in candidates if _is_all_gather(c)}
    bwd = {id(c): _backward(ix, c, MAX_CHAIN) for c in candidates if not _is_all_gather(c)}
    partner: dict[int, object] = {}
    for b in candidates:
        if _is_all_gather(b):
            continue
        # b's matmul reads an all-gather candidate's result directly or through its chain
        for a in candidates:
            if not _is_all_gather(a) or id(a) in partner:
                continue
            reach = {a.dot.results[0]} | {r for op in fwd[id(a)] for r in op.results}
            if any(v in reach for v in b.dot.operands):
                partner[id(a)], partner[id(b)] = b, a
                break
    units, done = [], set()
    for c in candidates:
        if id(c) in done:
            continue
        members = [c] if id(c) not in partner else [c, partner[id(c)]]
        members.sort(key=lambda m: ix.order[id(m.dot)])
        chain = {}
        for m in members:
            for op in fwd.get(id(m), []) + bwd.get(id(m), []):
                chain[id(op)] = op
        picked = ix.sort(chain.values())[:MAX_CHAIN]
        units.append(Unit(ix, tuple(members), tuple(picked)))
        done.update(id(m) for m in members)
    return units


def member_key(unit_text: str, index: int) -> str:
    """The decision key of a unit's `index`-th member (`Unit.text` and its position)."""
    return f"{unit_text}\nmember {index}"


def decision_keys(body: Function, candidates: list, signature) -> dict:
    """{candidate: key} for every candidate of `body`: the key its timed decision is kept
    under (`member_key` of its unit's `text(signature)`)."""
    out = {}
    for unit in timing_units(body, candidates):
        text = unit.text(signature)
        for i, c in enumerate(unit.members):
            out[c] = member_key(text, i)
    return out
