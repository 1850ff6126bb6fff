"""Batching rules of control flow: case, while, scan (ir/ops/control.py).

    case, index unbatched   stays a branch; every branch is batched, results made batched
                            alike (batch first) in all branches.
    case, index batched     every branch runs on the whole batch and a select picks each
                            example's result (`explain` says so: all branches cost).
    while, cond unbatched   one loop; carries batched where the body makes them vary (a
                            fixpoint: a carry fed by a batched value is batched).
    while, cond batched     runs while any example's condition holds; an example whose
                            condition is false keeps its carry (select), so the loop runs as
                            long as the slowest example.
    scan                    the batch rides along in consts, carry and xs (batch at dim 1
                            of the stacked xs and ys); carries batched by the same fixpoint.

Each decision is recorded for `explain`.
"""

from __future__ import annotations

import numpy as np

from purejit import errors
from purejit.ir.ops.control import scan_split
from purejit.tracing import ShapedArray, aval_of, bind, bind1
from purejit.transforms._ir_eval import trace_closed
from purejit.transforms.batching import notes
from purejit.transforms.batching.core import (
    batch_function,
    batch_region,
    bdim_at_front,
    defrule,
    filled,
    matchaxis,
    moved_aval,
    reduce_batch,
    shape,
)


def _front(axis, xs, dims):
    """Batched values moved to batch dim 0; dims become 0 / None."""
    return [bdim_at_front(axis, x, d) if d is not None else x for x, d in zip(xs, dims)], [
        None if d is None else 0 for d in dims
    ]


def _avals(xs) -> list[ShapedArray]:
    return [aval_of(x) for x in xs]


def _select(axis, pred, on_true, on_false):
    """Per example: `on_true` where `pred` (bool[B]) holds; both batched at 0."""
    s = shape(on_true)
    if len(s) > 1:
        pred = bind1("broadcast_in_dim", pred, shape=s, broadcast_dimensions=(0,))
    return bind1("select", pred, on_true, on_false)


def _what(regions) -> str:
    return "cond" if len(regions) == 2 else "switch"


@defrule("case")
def case_rule(axis, args, dims, *, regions):
    index, di = args[0], dims[0]
    ops, odims = _front(axis, args[1:], dims[1:])
    avals = _avals(ops)
    what, at = _what(regions), errors.at(axis.loc)
    if di is None:
        found = [batch_region(br, odims, axis, avals)[1] for br in regions]
        want = [0 if any(f[k] is not None for f in found) else None for k in range(len(found[0]))]
        new = [batch_region(br, odims, axis, avals, want)[0] for br in regions]
        notes.record(
            f"{what}{at} → {what}: the {'predicate' if what == 'cond' else 'index'} does not "
            "vary over the batch, so one branch runs"
        )
        return bind("case", index, *ops, regions=new), want
    n = len(regions)
    index = bdim_at_front(axis, index, di)
    # the select form pays for every branch; when every example's index agrees (checked at
    # run time, one reduction) the batch runs the one branch they all take instead
    notes.record(
        f"{what}{at} → select: {'both' if n == 2 else f'all {n}'} branches run for every "
        f"example (the {'predicate' if what == 'cond' else 'index'} varies over the batch), "
        "unless every example takes the same branch (checked at run time): then only that one "
        "runs"
    )
    first = bind1(
        "reshape",
        bind1("slice", index, start_indices=(0,), limit_indices=(1,), strides=(1,)),
        shape=(),
    )
    same = bind1("compare", index, _splat(axis, first), comparison_direction="EQ")
    uniform = bind1("convert", reduce_batch(same, 0, "and"), dtype=np.dtype(np.int32))
    avals = [aval_of(index), *avals]
    want = [0] * len(regions[0].results)

    def one_branch(idx, *xs):
        head = bind1(
            "reshape",
            bind1("slice", idx, start_indices=(0,), limit_indices=(1,), strides=(1,)),
            shape=(),
        )
        new = [batch_region(br, odims, axis, avals[1:], want)[0] for br in regions]
        return bind("case", head, *xs, regions=new)

    def every_branch(idx, *xs):
        return _select_branches(axis, regions, idx, list(xs), odims)

    fast, slow = (
        trace_closed(one_branch, avals, name="uniform"),
        trace_closed(every_branch, avals, name="mixed"),
    )
    if fast.captures or slow.captures:
        raise NotImplementedError("vmap: a batched case region read values of an enclosing trace")
    outs = bind("case", uniform, index, *ops, regions=[slow.fn, fast.fn])
    return outs, want


def _splat(axis, scalar):
    return bind1("broadcast_in_dim", scalar, shape=(axis.size,), broadcast_dimensions=())


def _select_branches(axis, regions, index, ops, odims):
    """Every branch on the whole batch; each example's result picked by its index."""
    n = len(regions)
    # as the case op does, an index outside [0, n) picks the last branch
    low = bind1("compare", index, filled(index, 0), comparison_direction="LT")
    high = bind1("compare", index, filled(index, n - 1), comparison_direction="GT")
    out_of_range = bind1("or", low, high)
    results = []
    for br in regions:
        outs, ods = batch_function(br, ops, odims, axis)
        results.append([bdim_at_front(axis, o, d) for o, d in zip(outs, ods)])
    chosen = results[-1]
    for k in range(n - 2, -1, -1):
        hit = bind1("compare", index, filled(index, k), comparison_direction="EQ")
        hit = bind1("and", hit, bind1("not", out_of_range))
        chosen = [_select(axis, hit, a, b) for a, b in zip(results[k], chosen)]
    return chosen


def _carry_fixpoint(axis, body, consts_dims, carry_batched, rest_dims, make_avals, ncarry):
    """Which carries are batched: those batched on entry or made batched by the body."""
    batched = list(carry_batched)
    while True:
        pdims = consts_dims + [0 if b else None for b in batched] + rest_dims
        out_dims = batch_region(body, pdims, axis, make_avals(batched))[1]
        new = [b or d is not None for b, d in zip(batched, out_dims[:ncarry])]
        if new == batched:
            return batched, out_dims
        batched = new


@defrule("while")
def while_rule(axis, args, dims, *, regions):
    cond, body = regions
    n = len(body.results)
    carry, cdims = args[:n], dims[:n]
    inv, idims = _front(axis, args[n:], dims[n:])
    at = errors.at(axis.loc)

    def avals_for(batched):
        cs = [moved_aval(axis, x, d, 0 if b else None) for x, d, b in zip(carry, cdims, batched)]
        return cs + _avals(inv)

    def pdims_for(batched):
        return [0 if b else None for b in batched] + idims

    batched, _ = _carry_fixpoint(
        axis, body, [], [d is not None for d in cdims], idims, avals_for, n
    )
    (pred_dim,) = batch_region(cond, pdims_for(batched), axis, avals_for(batched))[1]
    if pred_dim is None:
        want = [0 if b else None for b in batched]
        pd, avals = pdims_for(batched), avals_for(batched)
        new_cond = batch_region(cond, pd, axis, avals, [None])[0]
        new_body = batch_region(body, pd, axis, avals, want)[0]
        carry = [matchaxis(axis, x, d, w) for x, d, w in zip(carry, cdims, want)]
        notes.record(
            f"while_loop{at} → while: the condition does not vary over the batch, so every "
            "example runs the same number of steps"
        )
        return bind("while", *carry, *inv, regions=[new_cond, new_body]), want
    # a batched condition: every carry is batched; run until no example wants another step
    batched = [True] * n
    pd, avals = pdims_for(batched), avals_for(batched)
    carry = [bdim_at_front(axis, x, d) for x, d in zip(carry, cdims)]
    notes.record(
        f"while_loop{at} → while over the batch: runs until every example's condition is "
        "false (as long as the slowest example); finished examples keep their values (select)"
    )

    def lanes(ps):
        (p,), (d,) = batch_function(cond, ps, pd, axis)
        return bdim_at_front(axis, p, d)

    def new_cond(*ps):
        return [reduce_batch(lanes(ps), 0, "or")]

    def new_body(*ps):
        go = lanes(ps)
        outs, ods = batch_function(body, ps, pd, axis)
        outs = [bdim_at_front(axis, o, d) for o, d in zip(outs, ods)]
        return [_select(axis, go, new, old) for new, old in zip(outs, ps[:n])]

    c = trace_closed(new_cond, avals, name=cond.name)
    b = trace_closed(new_body, avals, name=body.name)
    if c.captures or b.captures:
        raise NotImplementedError("vmap: a batched while region read values of an enclosing trace")
    return bind("while", *carry, *inv, regions=[c.fn, b.fn]), [0] * n


@defrule("scan")
def scan_rule(axis, args, dims, *, regions, length, reverse, unroll, num_consts, num_carry):
    (body,) = regions
    attrs = dict(
        length=length, reverse=reverse, unroll=unroll, num_consts=num_consts, num_carry=num_carry
    )
    consts, carry, xs = scan_split(attrs, args)
    cdims, kdims, xdims = scan_split(attrs, dims)
    consts, cdims = _front(axis, consts, cdims)
    # the stacked axis stays first: a batched xs carries the batch at dim 1
    xs = [x if d is None else matchaxis(axis, x, d, 1) for x, d in zip(xs, xdims)]
    xdims = [None if d is None else 0 for d in xdims]
    slices = [ShapedArray(aval_of(x).shape[1:], aval_of(x).dtype, aval_of(x).weak_type) for x in xs]

    def avals_for(batched):
        ks = [moved_aval(axis, x, d, 0 if b else None) for x, d, b in zip(carry, kdims, batched)]
        return _avals(consts) + ks + slices

    batched, out_dims = _carry_fixpoint(
        axis, body, cdims, [d is not None for d in kdims], xdims, avals_for, num_carry
    )
    want = [0 if b else None for b in batched]
    want += [None if d is None else 0 for d in out_dims[num_carry:]]
    pdims = cdims + [0 if b else None for b in batched] + xdims
    new_body = batch_region(body, pdims, axis, avals_for(batched), want)[0]
    carry = [matchaxis(axis, x, d, w) for x, d, w in zip(carry, kdims, want[:num_carry])]
    outs = bind("scan", *consts, *carry, *xs, regions=[new_body], **attrs)
    notes.record(
        f"scan{errors.at(axis.loc)} → scan: one loop of {length} steps for the whole batch "
        f"({sum(batched)} of {num_carry} carries batched)"
    )
    ys_dims = [None if w is None else 1 for w in want[num_carry:]]
    return outs, want[:num_carry] + ys_dims
