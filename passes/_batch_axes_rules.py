"""The per-op rules of the batch-axis analysis (`purejit.passes.batch_axes`, whose docstring
describes the states B, F and N and what each rule proves).

A rule takes the analysis context and an op and returns, per result, the state of each
axis; it calls `ctx.fail` / `ctx.fail_op` when the op mixes bucketed rows. `RULES` maps op
names to rules; `elementwise` serves every op with that trait and `unknown` the rest. Ops
with regions walk them through `ctx.walk`.
"""

from __future__ import annotations

import numpy as np

from purejit.ir.ops.contraction import DOT_ATTRS
from purejit.ir.ops.control import scan_split

F = "F"  # position-invariant axis; None is N; ("B", label) is a bucketed row axis


def elementwise(ctx, op):
    rank = op.results[0].type.rank
    full = [v for v in op.operands if v.type.rank == rank]
    out = [ctx.join(op, [(v, a) for v in full]) if full else F for a in range(rank)]
    return [out] * len(op.results)


def unknown(ctx, op):
    for v in op.operands:
        for a in range(v.type.rank):
            if ctx.is_tied(v, a):
                ctx.fail(op, v, a, "is not understood by the batch-axis analysis, and it reads")
    return [[None] * r.type.rank for r in op.results]


def _constant(ctx, op):
    v, r = np.asarray(op.attrs["value"]), op.results[0]
    flat = v.reshape(-1)
    splat = flat.size == 0 or bool((flat == flat[0]).all())
    # tied axes of a constant that `_align` found position-invariant are F; other axes are
    # F only when the constant is a splat
    return [[F if splat or ctx.is_tied(r, a) else None for a in range(r.type.rank)]]


def _iota(ctx, op):
    return [[F] * op.results[0].type.rank]


def _broadcast_in_dim(ctx, op):
    (x,), r = op.operands, op.results[0]
    out = [F] * r.type.rank
    for i, d in enumerate(op.attrs["broadcast_dimensions"]):
        if x.type.shape[i] == r.type.shape[d]:
            out[d] = ctx.st(x, i)
        elif ctx.is_tied(x, i):
            ctx.fail(op, x, i, "stretches")
    return [out]


def _reshape(ctx, op):
    (x,), r = op.operands, op.results[0]
    ins, outs = x.type.shape, r.type.shape
    out = [None] * r.type.rank
    for a, s in enumerate(ins):
        if not ctx.is_tied(x, a) and ctx.st(x, a) is None:
            continue
        before = int(np.prod(ins[:a], dtype=np.int64))
        j = next(
            (
                j
                for j in range(len(outs))
                if outs[j] == s and int(np.prod(outs[:j], dtype=np.int64)) == before
            ),
            None,
        )
        if j is not None:
            out[j] = ctx.st(x, a)
        elif ctx.is_tied(x, a):
            ctx.fail(op, x, a, f"to {r.type} merges or splits")
    return [out]


def _transpose(ctx, op):
    (x,) = op.operands
    return [[ctx.st(x, p) for p in op.attrs["permutation"]]]


def _slice(ctx, op):
    (x,) = op.operands
    out = []
    for a, (s, lim, st) in enumerate(
        zip(op.attrs["start_indices"], op.attrs["limit_indices"], op.attrs["strides"])
    ):
        full = s == 0 and lim == x.type.shape[a] and st == 1
        if not full and ctx.is_tied(x, a):
            ctx.fail(op, x, a, "takes part of")
        out.append(ctx.st(x, a) if full else None)
    return [out]


def _concatenate(ctx, op):
    d, r = op.attrs["dimension"], op.results[0]
    for v in op.operands:
        if ctx.is_tied(v, d):
            ctx.fail(op, v, d, "concatenates along")
    out = [ctx.join(op, [(v, a) for v in op.operands]) for a in range(r.type.rank)]
    out[d] = None
    return [out]


def _pad(ctx, op):
    x = op.operands[0]
    out = []
    for a, pads in enumerate(
        zip(
            op.attrs["edge_padding_low"],
            op.attrs["edge_padding_high"],
            op.attrs["interior_padding"],
        )
    ):
        if any(pads) and ctx.is_tied(x, a):
            ctx.fail(op, x, a, "pads")
        out.append(None if any(pads) else ctx.st(x, a))
    return [out]


def _reverse(ctx, op):
    (x,) = op.operands
    out = list(ctx.state[x])
    for a in op.attrs["dimensions"]:
        if ctx.is_tied(x, a):
            ctx.fail(op, x, a, "reverses")
        out[a] = None
    return [out]


def _dot_general(ctx, op):
    lhs, rhs = op.operands
    lb, rb, lc, rc = (tuple(op.attrs[k]) for k in DOT_ATTRS)
    for v, dims in ((lhs, lc), (rhs, rc)):
        for a in dims:
            if ctx.is_tied(v, a):
                ctx.fail(op, v, a, "contracts over")
    out = [ctx.join(op, [(lhs, a), (rhs, b)]) for a, b in zip(lb, rb)]
    out += [ctx.st(lhs, a) for a in range(lhs.type.rank) if a not in lb + lc]
    out += [ctx.st(rhs, a) for a in range(rhs.type.rank) if a not in rb + rc]
    return [out]


def _along(verb: str, dims_of):
    """Rule of an op that mixes along `dims_of(op)` and keeps the other axes row by row."""

    def rule(ctx, op):
        n = len(op.results)
        inputs = [v for v in op.operands if v.type.rank > 0][: max(n, 1)]
        mixed = set(dims_of(op, inputs[0]))
        for v in inputs:
            for a in mixed:
                if ctx.is_tied(v, a):
                    ctx.fail(op, v, a, verb)
        rank = inputs[0].type.rank
        keep = [a for a in range(rank) if a not in mixed]
        kept = [ctx.join(op, [(v, a) for v in inputs]) for a in keep]
        outs = []
        for r in op.results:
            if r.type.rank == rank:  # axes stay in place (sort, windows, top_k)
                st = [None] * rank
                for a, s in zip(keep, kept):
                    st[a] = s
            else:  # mixed axes removed (reduce)
                st = list(kept)
            outs.append(st)
        return outs

    return rule


def _window_dims(op, x):
    a = op.attrs
    trivial = zip(
        a["window_dimensions"],
        a["window_strides"],
        a["base_dilations"],
        a["window_dilations"],
        a["padding"],
    )
    return [
        d
        for d, (w, s, bd, wd, p) in enumerate(trivial)
        if (w, s, bd, wd) != (1, 1, 1, 1) or tuple(p) != (0, 0)
    ]


def _dynamic_slice(ctx, op):
    x = op.operands[0]
    out = []
    for a, n in enumerate(op.attrs["slice_sizes"]):
        full = n == x.type.shape[a]
        if not full and ctx.is_tied(x, a):
            ctx.fail(op, x, a, "takes part of")
        out.append(ctx.st(x, a) if full else None)
    return [out]


def _dynamic_update_slice(ctx, op):
    x, u = op.operands[:2]
    out = []
    for a in range(x.type.rank):
        full = u.type.shape[a] == x.type.shape[a]
        if not full and ctx.is_tied(x, a):
            ctx.fail(op, x, a, "updates part of")
        out.append(ctx.join(op, [(x, a), (u, a)]) if full else None)
    return [out]


def _gather(ctx, op):
    x, idx = op.operands
    at = op.attrs
    ivd, sizes = at["index_vector_dim"], at["slice_sizes"]
    collapsed, offset_dims = set(at["collapsed_slice_dims"]), list(at["offset_dims"])
    for a in range(x.type.rank):
        moving = a in at["start_index_map"] or sizes[a] != x.type.shape[a]
        if ctx.is_tied(x, a) and (moving or a in collapsed):
            ctx.fail(op, x, a, "gathers along")
    if ivd < idx.type.rank and ctx.is_tied(idx, ivd):
        ctx.fail(op, idx, ivd, "reads index vectors along")
    rank = op.results[0].type.rank
    out = [None] * rank
    kept = [a for a in range(x.type.rank) if a not in collapsed]
    for d, a in zip(offset_dims, kept):
        out[d] = ctx.st(x, a) if sizes[a] == x.type.shape[a] else None
    batch = [d for d in range(rank) if d not in offset_dims]
    for d, a in zip(batch, [a for a in range(idx.type.rank) if a != ivd]):
        out[d] = ctx.st(idx, a)
    return [out]


def _case(ctx, op):
    args = op.operands[1:]
    results = None
    for branch in op.regions:
        for p, v in zip(branch.params, args):
            ctx.state[p] = list(ctx.state[v])
        _walk_inside(ctx, op, branch)
        results = _join_lists(ctx, op, branch.results, results)
    _carry_taint(ctx, op)
    return results


def _while(ctx, op):
    cond, body = op.regions
    n = len(body.results)
    carry = [list(ctx.state[v]) for v in op.operands[:n]]
    for _ in range(4):
        for region in (cond, body):
            for k, (p, v) in enumerate(zip(region.params, op.operands)):
                ctx.state[p] = list(carry[k]) if k < n else list(ctx.state[v])
            _walk_inside(ctx, op, region)
        new = ctx.norm(_join_lists(ctx, op, body.results, carry))
        if new == ctx.norm(carry):
            _carry_taint(ctx, op)
            return new
        carry = new
    ctx.fail_op(op, "has a loop carry whose bucketed axes do not settle")


def _scan(ctx, op):
    """Like `while`, with the consts as invariants; a step reads row i of every xs, so a
    bucketed xs leading axis mixes rows into the carry, and the ys rows are N."""
    (body,) = op.regions
    consts, carry, xs = scan_split(op.attrs, op.operands)
    for x in xs:
        if ctx.is_tied(x, 0):
            ctx.fail(op, x, 0, "scans (carrying state from row to row) along")
    nc = len(carry)
    state = [list(ctx.state[v]) for v in carry]
    for _ in range(4):
        ins = [list(ctx.state[v]) for v in consts] + state + [ctx.state[x][1:] for x in xs]
        for p, s in zip(body.params, ins):
            ctx.state[p] = list(s)
        _walk_inside(ctx, op, body)
        new = ctx.norm(_join_lists(ctx, op, body.results[:nc], state))
        if new == ctx.norm(state):
            ys = _join_lists(ctx, op, body.results[nc:], None)
            _carry_taint(ctx, op)
            return new + [[None, *y] for y in ys]
        state = new
    ctx.fail_op(op, "has a loop carry whose bucketed axes do not settle")


def _region_call(ctx, op):
    """An op whose one region is the function it computes on its operands (custom
    derivatives, checkpoint): the rows of that function."""
    (region,) = op.regions
    for p, v in zip(region.params, op.operands):
        ctx.state[p] = list(ctx.state[v])
    _walk_inside(ctx, op, region)
    results = _join_lists(ctx, op, region.results, None)
    _carry_taint(ctx, op)
    return results


def _identity(ctx, op):
    """Results equal to the operands (optimization_barrier, checkpoint_name)."""
    return [list(ctx.state[v]) for v in op.operands]


def _walk_inside(ctx, op, region):
    ctx.outer.append(op.loc)
    try:
        ctx.walk(region)
    finally:
        ctx.outer.pop()


def _join_lists(ctx, op, values, prev):
    """Per value, per axis: the join of `values`' states with `prev` (a list of states)."""
    out = []
    for k, v in enumerate(values):
        st = []
        for a in range(v.type.rank):
            s = ctx.st(v, a)
            t = s if prev is None else prev[k][a]
            if isinstance(s, tuple) and isinstance(t, tuple):
                st.append(("B", ctx.union(s[1], t[1])))
            elif s == t:
                st.append(s)
            elif None in (s, t):
                if (isinstance(s, tuple) or isinstance(t, tuple)) and ctx.is_tied(v, a):
                    ctx.fail(op, v, a, "merges bucketed rows with other data in")
                st.append(None)
            else:  # one is B, the other F
                st.append(s if isinstance(s, tuple) else t)
        out.append(st)
    return out


def _carry_taint(ctx, op):
    for region in op.regions:
        src = next((ctx.taint[v] for v in region.results if v in ctx.taint), None)
        if src is not None:
            for r in op.results:
                ctx.taint.setdefault(r, src)


RULES = {
    "constant": _constant,
    "iota": _iota,
    "broadcast_in_dim": _broadcast_in_dim,
    "reshape": _reshape,
    "transpose": _transpose,
    "slice": _slice,
    "concatenate": _concatenate,
    "pad": _pad,
    "reverse": _reverse,
    "dot_general": _dot_general,
    "reduce": _along("reduces over", lambda op, x: op.attrs["dimensions"]),
    "sort": _along("sorts along", lambda op, x: [op.attrs["dimension"]]),
    "top_k": _along("takes the top k along", lambda op, x: [x.type.rank - 1]),
    "reduce_window": _along("runs a window (cumulative op) along", _window_dims),
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "gather": _gather,
    "case": _case,
    "while": _while,
    "scan": _scan,
    "custom_jvp_call": _region_call,
    "custom_vjp_call": _region_call,
    "checkpoint": _region_call,
    "optimization_barrier": _identity,
    "checkpoint_name": _identity,
}
