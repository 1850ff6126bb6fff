"""Outlining repeated stretches of a flat program into `call`s (what lets `roll_layers` roll a
Python loop that was traced without a jitted layer).

A Python loop over layers traces into the same sequence of ops once per layer: the same op
names at the same source lines with the same types, one stretch after the other. This
module finds such stretches (a period P where op i and op i + P agree on name, source line,
operand and result types, over at least two periods), cuts each into blocks of P ops and
turns every block into a `call` whose function is the block: its parameters are the values
the block reads from outside (in order of first use), its results the values something
outside reads, at the positions any block of the stretch needs (so blocks of one stretch
return alike). Nothing here proves the blocks alike: `roll_layers` proves each pair with
`_isomorphism.compare`, and `inline_marked` puts back the calls it does not roll.

Outlining keeps the program's meaning: a call runs its function on its operands, and the
ops keep their order.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from purejit.ir import Function, Op, Value

MARKER = "repeat"  # the callee name of outlined blocks starts with it


def _key(op: Op) -> tuple:
    return (
        op.name,
        op.loc,
        tuple(v.type for v in op.operands),
        tuple(v.type for v in op.results),
        len(op.regions),
    )


def _phase(ops: list[Op], start: int, p: int, last: dict) -> int:
    """Where in a period blocks should start: the cut in the second period that the fewest
    values cross (a layer boundary, where only the activations cross). A value defined at
    d and last read at l crosses the cuts b with d < b <= l and b - p <= d: a range, so the
    counts of all p cuts come from one difference array."""
    first, stop = start + p, min(start + 2 * p, len(ops) + 1)
    diff = [0] * (stop - first + 1)
    for d in range(start, min(stop, len(ops))):
        for v in ops[d].results:
            lo, hi = max(d + 1, first), min(d + p, last.get(v, -1), stop - 1)
            if lo <= hi:
                diff[lo - first] += 1
                diff[hi - first + 1] -= 1
    best, offset, count = None, 0, 0
    for o in range(stop - first):
        count += diff[o]
        if best is None or count < best:
            best, offset = count, o
    return offset


def _spans(ops: list[Op], min_ops: int) -> list[tuple[int, int, int]]:
    """(start, period, blocks) of the periodic stretches, largest first, not overlapping."""
    keys = [_key(op) for op in ops]
    at = defaultdict(list)
    for i, k in enumerate(keys):
        at[k].append(i)
    periods: Counter = Counter()
    for positions in at.values():
        gaps = {b - a for a, b in zip(positions, positions[1:])}
        if len(gaps) == 1 and min(gaps) >= min_ops:
            periods[min(gaps)] += len(positions)
    last = {}
    for i, op in enumerate(ops):
        for v in op.operands:
            last[v] = i
    found = []
    for p, _ in periods.most_common(4):
        i = 0
        while i + p < len(ops):
            if keys[i] != keys[i + p]:
                i += 1
                continue
            j = i
            while j + p < len(ops) and keys[j] == keys[j + p]:
                j += 1
            if (j - i + p) // p >= 2:
                o = _phase(ops, i, p, last)
                blocks = (j - i + p - o) // p
                if blocks >= 2:
                    found.append((i + o, p, blocks))
            i = j + 1
    chosen: list[tuple[int, int, int]] = []
    for s, p, n in sorted(found, key=lambda t: -t[1] * t[2]):
        if all(s + p * n <= a or a + q * m <= s for a, q, m in chosen):
            chosen.append((s, p, n))
    return sorted(chosen)


def outline_repeats(fn: Function, min_ops: int = 8) -> tuple[Function, int]:
    """`fn` with each block of each periodic stretch of its top-level ops (blocks of at
    least `min_ops` ops) turned into a `call`, and how many calls were made."""
    ops = fn.ops
    spans = _spans(ops, min_ops)
    if not spans:
        return fn, 0
    used_at: dict[Value, list[int]] = defaultdict(list)
    for i, op in enumerate(ops):
        for v in op.operands:
            used_at[v].append(i)
    outputs = set(fn.results)
    starts = {}
    for s, p, n in spans:
        # result positions (op within the block, result) that some block must return
        need = set()
        for k in range(n):
            lo, hi = s + k * p, s + (k + 1) * p
            for q in range(p):
                for r, v in enumerate(ops[lo + q].results):
                    if v in outputs or any(u < lo or u >= hi for u in used_at.get(v, ())):
                        need.add((q, r))
        for k in range(n):
            starts[s + k * p] = (p, sorted(need), f"{MARKER}@{ops[s].loc or '-'}#{s}")
    rename: dict[Value, Value] = {}
    out: list[Op] = []
    made = 0
    i = 0
    while i < len(ops):
        if i not in starts:
            op = ops[i]
            out.append(op.rebuilt([rename.get(v, v) for v in op.operands], op.regions))
            i += 1
            continue
        p, need, name = starts[i]
        block = ops[i : i + p]
        inside = {v for op in block for v in op.results}
        params: dict[Value, Value] = {}
        body = []
        for op in block:
            operands = []
            for v in op.operands:
                if v in inside:
                    operands.append(v)
                    continue
                outer = rename.get(v, v)
                if outer not in params:
                    params[outer] = Value(outer.type)
                operands.append(params[outer])
            body.append(op.rebuilt(operands, op.regions))
        inner = [block[q].results[r] for q, r in need]
        region = Function(name, list(params.values()), body, inner)
        results = [Value(v.type) for v in inner]
        call = Op("call", list(params), {"callee": name}, results, [region], block[0].loc)
        out.append(call)
        rename.update(zip(inner, results))
        made += 1
        i += p
    return Function(fn.name, fn.params, out, [rename.get(v, v) for v in fn.results]), made


def inline_marked(fn: Function) -> Function:
    """`fn` with the outlined calls (callee starting with `MARKER`) put back as their ops."""
    rename: dict[Value, Value] = {}
    out: list[Op] = []
    for op in fn.ops:
        operands = [rename.get(v, v) for v in op.operands]
        if op.name == "call" and str(op.attrs.get("callee", "")).startswith(MARKER):
            body = op.regions[0]
            inner = dict(zip(body.params, operands))
            for b in body.ops:
                out.append(b.rebuilt([inner.get(v, v) for v in b.operands], b.regions))
            rename.update(zip(op.results, [inner.get(v, v) for v in body.results]))
            continue
        out.append(op.rebuilt(operands, op.regions))
    return Function(fn.name, fn.params, out, [rename.get(v, v) for v in fn.results])
