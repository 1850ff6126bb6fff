"""Folding each layer's own work after a rolled loop into the loop's body, for the host loop
(`roll_layers="host"`, before `_segments.split`).

A training step's update runs after the backward loop, in one program: every layer's
gradient lives until then. Here, where the top-level ops after a scan compute, for each row
k of its stacked outputs, the same computation from row k alone (the update of layer k from
its gradient), that computation moves into the scan's body: trip k computes it, so each
layer's gradients die in its own trip and the layer's (donated) parameters are written
there.

What is proved, per scan (else nothing is folded for it, with the reason):

  - each op after the scan depends on the scan through rows of its stacked outputs read by
    a `dynamic_slice` / `slice` of one whole row at an index known at compile time
    (`_known_ints`); an op reading a carry, or a stacked output whole, or rows of two
    trips, belongs to no row (a global-norm clip over all gradients: not folded);
  - every row has its group (the ops depending on that row only), and the groups are
    isomorphic: the same ops with the same attributes and types, wired alike, each reading
    its own row of the same stacked outputs;
  - what a group reads from outside is, position by position, either one value for all
    rows (a shared value: the learning rate, the step count; made of constants only, it is
    cloned into the body, else passed as a loop constant) or one value per row of one type
    (a per-layer value: the parameters, an optimizer's state), passed as a new xs (the
    existing xs when it is the stack of the same values).

Values a group reads that are computed after the scan (and do not depend on it) are
computed before it instead. What the groups give to the rest of the program comes out of
the body as new stacked outputs, read back by row (the split hands each row's buffer over
as is). A stacked output only the groups read leaves the body.
"""

from __future__ import annotations

from purejit.ir import Function, Op, TensorType, Value
from purejit.passes._isomorphism import attr_key
from purejit.passes._known_ints import row_index
from purejit.passes.base import has_effect

_MANY = -1  # depends on the scan other than through one row


def _region_key(fn: Function) -> tuple:
    """A region's structure with its values numbered locally (closed regions)."""
    num = {p: i for i, p in enumerate(fn.params)}
    ops = []
    for op in fn.ops:
        ops.append(_op_key(op, [num.get(u, ("free", id(u))) for u in op.operands]))
        for r in op.results:
            num[r] = len(num)
    return (tuple(str(p.type) for p in fn.params), tuple(ops),
            tuple(num.get(r, ("free", id(r))) for r in fn.results))  # fmt: skip


def _op_key(op: Op, operand_keys) -> tuple:
    return (
        op.name,
        attr_key(op.attrs),
        tuple(str(r.type) for r in op.results),
        tuple(_region_key(r) for r in op.regions),
        tuple(operand_keys),
    )


def _row_read(op: Op, ys: set, made) -> int | None:
    """The row of a stacked output `op` reads whole, when known at compile time."""
    if not op.operands or op.operands[0] not in ys:
        return None
    if op.name == "dynamic_slice" and any(u in ys for u in op.operands[1:]):
        return None
    return row_index(op, made.get)


class _NotFolded(Exception):
    pass


def _const_only(v: Value, made, memo: dict) -> bool:
    """Whether `v` is made of constants alone (no parameter, no region)."""
    if v in memo:
        return memo[v]
    op = made.get(v)
    ok = op is not None and not op.regions and not has_effect(op)
    ok = ok and all(_const_only(u, made, memo) for u in op.operands)
    memo[v] = ok
    return ok


def _fold_one(fn: Function, si: int) -> tuple[Function, dict]:
    ops = fn.ops
    scan = ops[si]
    n, ncar = int(scan.attrs["length"]), int(scan.attrs["num_carry"])
    ys = set(scan.results[ncar:])
    made = {r: o for o in ops for r in o.results}
    after = ops[si + 1 :]
    dep: dict[Value, int | None] = {}  # values made after the scan: their row (None: none)
    for r in scan.results[:ncar]:
        dep[r] = _MANY
    for r in ys:
        dep[r] = _MANY
    groups: dict[int, list[Op]] = {k: [] for k in range(n)}
    reads: dict[int, int] = {}  # id(row read op) -> the stacked output's position
    for op in after:
        if has_effect(op):
            raise _NotFolded(f"`{op.name}` after the loop has effects")
        k = _row_read(op, ys, made)
        if k is not None:
            reads[id(op)] = scan.results.index(op.operands[0]) - ncar
        else:
            ds = {dep.get(u) for u in op.operands} - {None}
            k = None if not ds else (ds.pop() if len(ds) == 1 else _MANY)
        for r in op.results:
            dep[r] = k
        if k is not None and k != _MANY:
            groups[k].append(op)
    # work on other values read by one row's group alone joins the group (an optimizer's
    # decay of its state: computed in the trip, not stored between programs)
    users: dict[Value, list[Op]] = {}
    for op in after:
        for u in op.operands:
            users.setdefault(u, []).append(op)
    row_of = {id(o): k for k in groups for o in groups[k]}
    memo: dict = {}
    for op in reversed(after):
        if id(op) in row_of or any(dep.get(r) is not None for r in op.results) or op.regions:
            continue
        if all(_const_only(r, made, memo) for r in op.results):
            continue
        rows = {row_of.get(id(u), _MANY) for r in op.results for u in users.get(r, [None])}
        if len(rows) == 1 and _MANY not in rows and not set(op.results) & set(fn.results):
            row_of[id(op)] = rows.pop()
    groups = {k: [o for o in after if row_of.get(id(o)) == k] for k in range(n)}
    for k in groups:  # a joined op's results now depend on its row
        for o in groups[k]:
            for r in o.results:
                dep[r] = k
    if not any(groups.values()):
        raise _NotFolded("nothing after the loop reads one row alone")
    if not groups[0] or any(len(groups[k]) != len(groups[0]) for k in groups):
        raise _NotFolded("not every layer's row has a computation of its own after the loop")
    # the groups' structure, row by row, against row 0's
    in_group = [dict() for _ in range(n)]  # value -> (op index, result index)
    outside: list[list[Value]] = [[] for _ in range(n)]  # per row: values read from outside
    keys = []
    for k in range(n):
        key = []
        pos: dict[Value, int] = {}
        for i, op in enumerate(groups[k]):
            if id(op) in reads:
                key.append(("row", reads[id(op)], op.name, str(op.results[0].type)))
            else:
                ks = []
                for u in op.operands:
                    if u in in_group[k]:
                        ks.append(("in", in_group[k][u]))
                    else:
                        if dep.get(u) is not None:
                            raise _NotFolded(f"`{op.name}` reads another row or a carry")
                        if u not in pos:
                            pos[u] = len(outside[k])
                            outside[k].append(u)
                        ks.append(("out", pos[u], str(u.type)))
                key.append(_op_key(op, ks))
            for j, r in enumerate(op.results):
                in_group[k][r] = (i, j)
        keys.append(tuple(key))
    if any(keys[k] != keys[0] for k in range(n)):
        raise _NotFolded("the layers' computations after the loop differ")
    # what the groups give the rest of the program (read after them, or returned)
    members = {id(o) for k in groups for o in groups[k]}
    used_later = set(fn.results)
    for op in after:
        if id(op) not in members:
            used_later.update(op.operands)
    exported = [v for o in groups[0] for v in o.results if v in used_later]
    ex_pos = [in_group[0][v] for v in exported]
    for k in range(1, n):
        mine = [v for o in groups[k] for v in o.results if v in used_later]
        if [in_group[k][v] for v in mine] != ex_pos:
            raise _NotFolded("the layers' results read after the loop differ")
    new, per_row = _rebuild(fn, si, groups, reads, outside, ex_pos, made, members)
    return new, {
        "loc": scan.loc, "rows": n, "ops_per_row": len(groups[0]),
        "per_row_inputs": per_row, "results_per_row": len(ex_pos),
    }  # fmt: skip


def _rebuild(fn, si, groups, reads, outside, ex_pos, made, members) -> tuple[Function, int]:
    ops = fn.ops
    scan = ops[si]
    a = scan.attrs
    n, nc, ncar = int(a["length"]), int(a["num_consts"]), int(a["num_carry"])
    body = scan.regions[0]
    consts = list(scan.operands[:nc])
    init = list(scan.operands[nc : nc + ncar])
    xs = list(scan.operands[nc + ncar :])
    cp, carp, xp = body.params[:nc], body.params[nc : nc + ncar], body.params[nc + ncar :]
    cp, xp = list(cp), list(xp)
    before: list[Op] = []  # new top-level ops before the scan (hoisted, stacks)
    hoisted: set[int] = set()

    def hoist(v: Value):
        """`v`, computed after the scan without it, computed before it instead."""
        op = made.get(v)
        if op is None or id(op) in hoisted or ops.index(op) < si:
            return
        for u in op.operands:
            hoist(u)
        hoisted.add(id(op))
        before.append(op)

    memo: dict = {}
    env: dict[Value, Value] = {}  # group 0's value -> the body's
    body_ops: list[Op] = list(body.ops)
    cloned_consts: dict[Value, Value] = {}

    def clone_const(v: Value) -> Value:
        if v not in cloned_consts:
            op = made[v]
            new = Op(op.name, [clone_const(u) for u in op.operands], op.attrs,
                     [Value(r.type) for r in op.results], op.regions, op.loc)  # fmt: skip
            body_ops.append(new)
            cloned_consts.update(zip(op.results, new.results))
        return cloned_consts[v]

    stacks_of = {}  # an existing xs, as the tuple of its rows' values
    for j, x in enumerate(xs):
        c = made.get(x)
        if c is not None and c.name == "concatenate" and c.attrs.get("dimension") == 0:
            rows = []
            for u in c.operands:
                r = made.get(u)
                if r is None or r.name != "reshape" or u.type.shape[0] != 1:
                    break
                rows.append(r.operands[0])
            if len(rows) == n:
                stacks_of[tuple(rows)] = j
    per_row = 0
    for p in range(len(outside[0])):
        vals = [outside[k][p] for k in range(n)]
        v0 = vals[0]
        if all(v is v0 for v in vals):
            if _const_only(v0, made, memo):
                env[v0] = clone_const(v0)
            elif v0 in consts:
                env[v0] = cp[consts.index(v0)]
            else:
                hoist(v0)
                consts.append(v0)
                cp.append(Value(v0.type))
                env[v0] = cp[-1]
            continue
        if any(v.type != v0.type for v in vals):
            raise _NotFolded("a per-layer value differs in type between layers")
        per_row += 1
        j = stacks_of.get(tuple(vals))
        if j is not None:
            env[v0] = xp[j]
            continue
        rows = []
        for v in vals:
            hoist(v)
            r = Op.inferred("reshape", [v], {"shape": [1, *v.type.shape]})
            before.append(r)
            rows.append(r.results[0])
        st = Op.inferred("concatenate", rows, {"dimension": 0})
        before.append(st)
        xs.append(st.results[0])
        xp.append(Value(v0.type))
        env[v0] = xp[-1]
    for op in groups[0]:
        if id(op) in reads:
            y = body.results[ncar + reads[id(op)]]
            env[op.results[0]] = _reshaped(y, op.results[0].type, body_ops)
            continue
        new = Op(op.name, [env[u] for u in op.operands], op.attrs,
                 [Value(r.type) for r in op.results], op.regions, op.loc)  # fmt: skip
        body_ops.append(new)
        env.update(zip(op.results, new.results))
    # stacked outputs still read whole or by rows outside the groups stay
    readers = {u for op in ops[si + 1 :] if id(op) not in members for u in op.operands}
    keep_ys = [j for j, y in enumerate(scan.results[ncar:]) if y in readers or y in fn.results]
    g0_vals = [groups[0][i].results[j] for i, j in ex_pos]
    new_results = (list(body.results[:ncar]) + [body.results[ncar + j] for j in keep_ys]
                   + [env[v] for v in g0_vals])  # fmt: skip
    new_body = Function(body.name, [*cp, *carp, *xp], body_ops, new_results)
    attrs = dict(a, num_consts=len(consts))
    out_types = [r.type for r in scan.results[:ncar]]
    out_types += [scan.results[ncar + j].type for j in keep_ys]
    out_types += [TensorType((n, *v.type.shape), v.type.dtype) for v in g0_vals]
    new_scan = Op("scan", [*consts, *init, *xs], attrs, [Value(t) for t in out_types],
                  [new_body], scan.loc)  # fmt: skip
    sub: dict[Value, Value] = dict(zip(scan.results[:ncar], new_scan.results[:ncar]))
    for m, j in enumerate(keep_ys):
        sub[scan.results[ncar + j]] = new_scan.results[ncar + m]
    after: list[Op] = []
    stacked = new_scan.results[ncar + len(keep_ys) :]
    for k in range(n):  # each row's results, read back by row
        for (i, j), z in zip(ex_pos, stacked):
            v = groups[k][i].results[j]
            shape = list(z.type.shape)
            sl = Op.inferred("slice", [z], {"start_indices": [k] + [0] * (len(shape) - 1),
                                            "limit_indices": [k + 1, *shape[1:]],
                                            "strides": [1] * len(shape)})  # fmt: skip
            rs = Op.inferred("reshape", [sl.results[0]], {"shape": list(v.type.shape)})
            after += [sl, rs]
            sub[v] = rs.results[0]
    rest = []
    for op in ops[si + 1 :]:
        if id(op) in members or id(op) in hoisted:
            continue
        rest.append(op.rebuilt([sub.get(u, u) for u in op.operands], op.regions))
        if rest[-1] is not op:
            sub.update(zip(op.results, rest[-1].results))
    new_ops = [*ops[:si], *before, new_scan, *after, *rest]
    return Function(fn.name, fn.params, new_ops, [sub.get(r, r) for r in fn.results]), per_row


def _reshaped(v: Value, t: TensorType, body_ops: list[Op]) -> Value:
    """`v` (a body's stacked-output row) as a row read gives it (`[1, *row]`)."""
    r = Op.inferred("reshape", [v], {"shape": list(t.shape)})
    body_ops.append(r)
    return r.results[0]


def fold_rows(fn: Function) -> tuple[Function, list[dict]]:
    """`fn` with each top-level scan's per-row work after it folded into its body where
    proved (module docstring); the report: per scan, what was folded or why not."""
    report = []
    si = 0
    while si < len(fn.ops):
        if fn.ops[si].name == "scan":
            try:
                fn, rec = _fold_one(fn, si)
                si = next(i for i, o in enumerate(fn.ops) if i >= si and o.name == "scan")
                report.append({"folded": rec})
            except _NotFolded as e:
                report.append({"not_folded": str(e), "loc": fn.ops[si].loc})
        si += 1
    return fn, report
