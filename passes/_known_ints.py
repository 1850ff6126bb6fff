"""Integers a program's scalars are known to hold, for the host loop's split
(`_segments.py`): which row of a stack a `dynamic_slice` reads, proved where the index is a
constant or comes out of `_row_index.py`'s loop (which returns its operands unchanged, a
fact XLA cannot see and this module proves op by op); and the selects inside a loop's body
that such integers decide on each trip, which the host makes instead (`picked_on_host`)."""

from __future__ import annotations

import numpy as np
from purejit.ir import Op, Value


def is_int_scalar(v: Value) -> bool:
    return v.type.rank == 0 and np.issubdtype(v.type.dtype, np.integer)


def kept_by_loop(op: Op, k: int, lookup) -> bool:
    """Whether result `k` (> 0) of the `while` `op` is its operand `k` whatever the trips
    (`_row_index.py`'s loop). Proved: the counter (operand 0) starts at a known value >= 0,
    the body adds a known constant >= 0 to it, the cond is `i < bound` with `bound + step`
    below 2**31 (the count never wraps, so it never falls below 0), and the body returns
    parameter k itself or `select(i < c, _, p_k)` with a known c <= 0 (never true)."""
    cond, body = op.regions
    start = int_of(op.operands[0], lookup)
    if start is None or start < 0:
        return False
    i = body.params[0]
    made = {r: o for o in body.ops for r in o.results}
    d = made.get(body.results[0])
    if d is None or d.name != "add" or i not in d.operands:
        return False
    inc = int_of(d.operands[1] if d.operands[0] is i else d.operands[0], made.get)
    cmade = {r: o for o in cond.ops for r in o.results}
    c = cmade.get(cond.results[0])
    if c is None or c.name != "compare" or c.operands[0] is not cond.params[0]:
        return False
    bound = int_of(c.operands[1], cmade.get)
    if inc is None or inc < 0 or bound is None or c.attrs.get("comparison_direction") != "LT":
        return False
    if bound + inc >= 2**31 - 1:
        return False
    res = body.results[k]
    if res is body.params[k]:
        return True
    s = made.get(res)
    if s is None or s.name != "select" or s.operands[2] is not body.params[k]:
        return False
    cmp = made.get(s.operands[0])
    if cmp is None or cmp.name != "compare" or cmp.operands[0] is not i:
        return False
    limit = int_of(cmp.operands[1], made.get)
    return cmp.attrs.get("comparison_direction") == "LT" and limit is not None and limit <= 0


def int_of(v: Value, lookup) -> int | None:
    """The integer a scalar `v` is known to hold, or None: a constant, an `iota` of one
    element reshaped (0), or a result of `_row_index.py`'s loop that returns its operand
    (`lookup`: the op that makes a value, in `v`'s function)."""
    if not is_int_scalar(v):
        return None
    op = lookup(v)
    if op is None:
        return None
    if op.name == "constant":
        return int(np.asarray(op.attrs["value"]))
    if op.name == "reshape":
        src = lookup(op.operands[0])
        if src is not None and src.name == "iota" and tuple(src.attrs["shape"]) == (1,):
            return 0
    if op.name == "while":
        k = op.results.index(v)
        if k > 0 and kept_by_loop(op, k, lookup):
            return int_of(op.operands[k], lookup)
    return None


def leading_slice(op: Op) -> bool:
    """Whether the `slice` `op` takes whole rows of its operand (unit strides, every other
    dimension whole)."""
    shape = op.operands[0].type.shape
    st, lim, strides = (op.attrs[k] for k in ("start_indices", "limit_indices", "strides"))
    return all(s == 1 for s in strides) and all(
        st[d] == 0 and lim[d] == shape[d] for d in range(1, len(shape))
    )


def row_index(op: Op, lookup) -> int | None:
    """The row of its operand a `dynamic_slice` or `slice` of one whole leading row reads,
    when known at compile time (a dynamic index clamped as XLA clamps it), else None."""
    x = op.operands[0]
    if x.type.rank == 0:
        return None
    if op.name == "dynamic_slice":
        if list(op.attrs["slice_sizes"]) != [1, *x.type.shape[1:]]:
            return None
        k = int_of(op.operands[1], lookup)
        return None if k is None else min(max(k, 0), x.type.shape[0] - 1)
    if op.name == "slice" and leading_slice(op):
        a, b = op.attrs["start_indices"][0], op.attrs["limit_indices"][0]
        return a if b == a + 1 else None
    return None


_COMPARE = {
    "LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b, "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b,
}  # fmt: skip


def picked_on_host(ops, params, sources, row_of, made, at_trip, ts):
    """`ops` without each `select(compare(i, c), a, b)` whose condition is known per trip
    (i and c integers known on each trip) and whose `a` and `b` are what a launch passes in
    (a parameter, or a row read): its result becomes a parameter, passed `a`'s buffer on
    the trips where the condition holds and `b`'s on the others. The roll pass's loop reads
    each layer's input so (the previous layer's saved output, or before the first layer the
    loop's input): a select over a whole activation per trip, which the host makes instead.
    Appends to `params` and `sources`; returns the ops and how many selects were picked."""
    after = {r: o for o in ops for r in o.results}

    def source(v):
        if v in params:
            return sources[params.index(v)]
        o = after.get(v)
        if o is not None and o.name == "reshape" and o.operands[0] in row_of:
            row = row_of[o.operands[0]]
            if row.type == v.type:
                return sources[params.index(row)]
        return None

    def at(src, t):
        return src if isinstance(src, (int, tuple)) else src[t]

    out, picked = [], 0
    for o in ops:
        c = made.get(o.operands[0]) if o.name == "select" else None
        if c is None or c.name != "compare" or o.operands[0].type.rank != 0:
            out.append(o)
            continue
        cmp = _COMPARE.get(c.attrs.get("comparison_direction"))
        known = [(at_trip(c.operands[0], t), at_trip(c.operands[1], t)) for t in ts]
        a, b = source(o.operands[1]), source(o.operands[2])
        if cmp is None or a is None or b is None or any(x is None or y is None for x, y in known):
            out.append(o)
            continue
        params.append(o.results[0])
        sources.append({t: at(a if cmp(x, y) else b, t) for t, (x, y) in zip(ts, known)})
        picked += 1
    return out, picked
