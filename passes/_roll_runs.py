"""How `roll_layers` finds runs of isomorphic calls: chains where call i's results feed call
i+1 at the same operand positions, each call's function proved isomorphic to the first's
(`_isomorphism.compare`), and the reasons a chain is left alone (a skip connection, effects,
another run interleaved with it). `roll_layers.py` rewrites the runs found here."""

from __future__ import annotations

from dataclasses import dataclass, field

from purejit.ir import Function, Op, Value
from purejit.passes._isomorphism import bucket_key, compare
from purejit.passes.base import has_effect

_EFFECTS = "the block has effects (an op with `side_effect` or `collective`, or not pure)"


@dataclass
class Run:
    """A run of isomorphic calls: their indices in the function's ops, in chain order, the
    carry as (operand position, result position) pairs, the stacked constants (indices of
    `constant` ops in the first call's function) and the carried results that something
    outside the chain reads too (stacked as ys as well)."""

    blocks: list[int]
    carry: list[tuple[int, int]]
    constants: list[int] = field(default_factory=list)
    carry_out: list[int] = field(default_factory=list)  # carried results also read outside


def callee(op: Op) -> str:
    return str(op.attrs.get("callee", ""))


def _links(prev: Op, nxt: Op, producer: dict) -> list[tuple[int, int]]:
    """(operand position of `nxt`, result position of `prev`) for each value passed on."""
    out = []
    for j, v in enumerate(nxt.operands):
        src = producer.get(v)
        if src is not None and src[0] is prev:
            out.append((j, src[1]))
    return out


def _grow(fn: Function, start: int, taken: set, producer, users, refused) -> Run | None:
    """The longest chain from call `start`: extended one successor at a time while the
    successor's function is isomorphic to the first and the links stay the same."""
    ops = fn.ops
    first = ops[start]
    body = first.regions[0]
    key = bucket_key(body)
    run = Run([start], [])
    constants: set[int] = set()
    while True:
        cur = ops[run.blocks[-1]]
        succ = sorted(
            {
                k
                for r in cur.results
                for k, _ in users.get(r, ())
                if k not in taken and ops[k].name == "call"
            }
        )
        nxt = found = None
        for k in succ:
            cand = ops[k]
            if callee(cand) != callee(first) and bucket_key(cand.regions[0]) != key:
                continue  # a different function: not a candidate
            cmp = compare(body, cand.regions[0])
            if cmp.reason is None:
                nxt, found = k, cmp
                break
            if callee(cand) == callee(first):
                refused.append(
                    {
                        "callee": callee(first),
                        "blocks": len(run.blocks) + 1,
                        "reason": f"block {len(run.blocks)} differs from block 0: {cmp.reason}",
                        "loc": cand.loc,
                    }
                )
        if nxt is None:
            break
        links = _links(cur, ops[nxt], producer)
        if run.carry and links != run.carry:
            refused.append(
                {
                    "callee": callee(first),
                    "blocks": len(run.blocks) + 1,
                    "reason": f"block {len(run.blocks)} reads the previous block's results at "
                    f"other positions ({links} vs {run.carry})",
                    "loc": ops[nxt].loc,
                }
            )
            break
        run.carry = links
        constants.update(found.constants)
        run.blocks.append(nxt)
    run.constants = sorted(constants)
    return run if len(run.blocks) >= 2 else None


def _check(fn: Function, run: Run, users, outputs: set) -> str | None:
    """Why `run` cannot be rolled, or None."""
    ops = fn.ops
    rs = [r for _, r in run.carry]
    if len(set(rs)) != len(rs):
        return "one result of a block feeds two operands of the next block"
    # a carried value that something outside the chain also reads is stacked as a ys too
    run.carry_out = sorted(
        {
            r
            for a, b in zip(run.blocks, run.blocks[1:])
            for j, r in run.carry
            if ops[a].results[r] in outputs
            or any(u != (b, j) for u in users.get(ops[a].results[r], ()))
        }
    )
    # values computed from the chain between its first and last block
    inside = set(run.blocks)
    tainted: set[Value] = set()
    for i in run.blocks:
        tainted.update(ops[i].results)
    carry_pos = {j for j, _ in run.carry}
    for i in range(run.blocks[0] + 1, run.blocks[-1] + 1):  # the last block too
        op = ops[i]
        if i in inside:
            bad = [j for j, v in enumerate(op.operands) if j not in carry_pos and v in tainted]
            if bad:
                return (
                    f"operand {bad[0]} of block {run.blocks.index(i)} is computed from an "
                    "earlier block (a skip connection)"
                )
            continue
        if has_effect(op):
            return f"an op with effects (`{op.name}`) sits between the blocks"
        if any(v in tainted for v in op.operands):
            tainted.update(op.results)
    return None


def _span(run: Run):
    return [(k, run.blocks[0], run.blocks[-1]) for k in run.blocks]


def find_runs(fn: Function, min_blocks: int = 2) -> tuple[list[Run], list[dict]]:
    """The runs of `fn`'s top-level calls that `roll` can rewrite, and the refusals."""
    producer, users = {}, {}
    for i, op in enumerate(fn.ops):
        for r, v in enumerate(op.results):
            producer[v] = (op, r)
        for j, v in enumerate(op.operands):
            users.setdefault(v, []).append((i, j))
    outputs = set(fn.results)
    taken: set[int] = set()
    runs, refused = [], []
    counts: dict[str, int] = {}
    for op in fn.ops:
        if op.name == "call":
            counts[callee(op)] = counts.get(callee(op), 0) + 1
    effectful: set[str] = set()
    for i, op in enumerate(fn.ops):
        if op.name != "call" or i in taken:
            continue
        if has_effect(op):
            if counts[callee(op)] > 1 and callee(op) not in effectful:
                effectful.add(callee(op))
                refused.append(
                    {"callee": callee(op), "blocks": counts[callee(op)], "reason": _EFFECTS}
                )
            continue
        run = _grow(fn, i, taken, producer, users, refused)
        if run is None:
            continue
        if len(run.blocks) < min_blocks:
            taken.update(run.blocks)  # a suffix of this run is no longer
            continue
        reason = _check(fn, run, users, outputs)
        if reason is not None:
            refused.append(
                {"callee": callee(op), "blocks": len(run.blocks), "reason": reason, "loc": op.loc}
            )
            taken.update(run.blocks)
            continue
        lo, hi = run.blocks[0], run.blocks[-1]
        if any(lo <= k <= hi or a <= lo <= b for r in runs for k, a, b in _span(r)):
            refused.append(
                {
                    "callee": callee(op),
                    "blocks": len(run.blocks),
                    "reason": "the run interleaves with another rolled run",
                    "loc": op.loc,
                }
            )
            continue
        taken.update(run.blocks)
        runs.append(run)
    return runs, refused
