"""The batch-axis analysis behind `purejit.jit(f, buckets=...)`: is padding an axis safe?

Padding input rows and slicing output rows back is only correct when every output row
depends on the same input row and on nothing that depends on how many rows there are. This
analysis proves it on purejit's IR, or names the op that breaks it.

It runs on several traces of the same function: one at the padded lengths `b` (the program
that is compiled) and probes at other lengths (the low end of the bucket's range and `b + 1`).
Comparing them op by op tells which axes of every value have a *length that follows the
bucketed axis* ("tied" axes), and which constants were computed from that length (their
values differ: `x / x.shape[0]` bakes in the padded length). A program whose ops differ
between the traces depends on the length in Python (`if x.shape[0] > 64:`) and is refused;
a Python branch whose outcome is the same at every probed length goes unnoticed.

Then a forward walk gives every axis of every value a state:

    B(label)  the rows of a bucketed input axis: element i depends only on row i of it
    F         position-invariant: element i depends on i at most, not on the length
              (broadcasts, iota, splat constants)
    N         anything else (data of unknown origin along this axis)

Rules (one per op kind): elementwise ops join the states of each axis (B with B unifies the
labels, B with F stays B, B with a tied N axis mixes); broadcast_in_dim, transpose and
reshape move axes (reshape keeps an axis when the elements before it and its size are
unchanged, else it mixes); reductions, contractions, sort, windows and cumulative ops,
concatenation, reversal, padding, partial slices and gathers *along a tied axis* mix; ops
with regions (case, while) are analysed inside. Any op the rules do not know mixes when it
touches a tied axis. A mix raises `BucketError` naming the op, its source line and why.

At the outputs: a tied axis in state B or F is sliced back to the true length; a tied axis
in state N, or any output computed from a length-dependent constant, is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from purejit import errors
from purejit.ir import Function, Op, Value
from purejit.ir.ops.reduce import DOT_ATTRS


class BucketError(ValueError):
    """`buckets=` was asked for an axis the analysis cannot prove to be a batch axis."""


@dataclass(frozen=True)
class OutputSlice:
    """Slice output `index` along `axis` to the true length of any of `labels`."""

    index: int
    axis: int
    labels: tuple[int, ...]


@dataclass
class BatchPlan:
    """What the analysis proved: which output axes to slice, which labels share a length."""

    slices: list[OutputSlice] = field(default_factory=list)
    classes: list[tuple[int, ...]] = field(default_factory=list)


F = "F"  # position-invariant axis; None is N; ("B", label) is a bucketed row axis


class _Ctx:
    def __init__(self, names: list[str], fname: str):
        self.names = names  # label -> "x axis 0"
        self.fname = fname
        self.parent = list(range(len(names)))
        self.tied: dict[Value, tuple[bool, ...]] = {}
        self.state: dict[Value, list] = {}
        # value -> (constant whose value depends on the length, first op with a line using it)
        self.taint: dict[Value, tuple[Op, Op | None]] = {}
        self.changed_consts: set[int] = set()
        self.outer: list[str | None] = []  # lines of the enclosing region ops

    def loc(self, op: Op) -> str | None:
        return op.loc or next((x for x in reversed(self.outer) if x), None)

    # union-find over labels: labels combined row by row must have the same true length
    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int) -> int:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[max(a, b)] = min(a, b)
        return min(a, b)

    def is_tied(self, v: Value, axis: int) -> bool:
        return self.tied.get(v, (False,) * v.type.rank)[axis]

    def st(self, v: Value, axis: int):
        return self.state[v][axis]

    def what(self, v: Value, axis: int) -> str:
        s = self.state.get(v, [None] * v.type.rank)[axis]
        if isinstance(s, tuple):
            labels = [self.names[i] for i in range(len(self.names)) if self.find(i) == s[1]]
            return f"axis {axis} of {v.type}, which carries the rows of {' and '.join(labels)}"
        return f"axis {axis} of {v.type}, whose length follows the padded length"

    def fail(self, op: Op, v: Value, axis: int, why: str):
        raise BucketError(
            f"purejit.jit({self.fname}, buckets=...): `{op.name}`{errors.at(self.loc(op))} {why} "
            f"{self.what(v, axis)}. Padding is only safe when each output row depends on the "
            "same input row; remove this bucket, or move this computation out of the "
            "bucketed function."
        )

    def fail_op(self, op: Op, why: str):
        raise BucketError(
            f"purejit.jit({self.fname}, buckets=...): `{op.name}`{errors.at(self.loc(op))} {why}. "
            "Padding is only safe when each output row depends on the same input row."
        )

    def norm(self, states: list[list]) -> list[list]:
        return [
            [("B", self.find(s[1])) if isinstance(s, tuple) else s for s in st] for st in states
        ]

    def join(self, op: Op, pairs: list[tuple[Value, int]]):
        """The state of one result axis made row by row from these operand axes."""
        states = [(v, a, self.st(v, a)) for v, a in pairs]
        labels = [s[1] for _, _, s in states if isinstance(s, tuple)]
        if labels:
            for v, a, s in states:
                if s is None and self.is_tied(v, a):
                    self.fail(op, v, a, "combines rows of a bucketed axis with")
            root = labels[0]
            for lab in labels[1:]:
                root = self.union(root, lab)
            return ("B", self.find(root))
        if states and all(s == F for _, _, s in states):
            return F
        return None


def analyze(
    fn: Function,
    probes: list[Function],
    in_axes: dict[int, dict[int, int]],
    names: list[str],
    fname: str = "f",
) -> BatchPlan:
    """Prove that the labelled input axes of `fn` are batch axes; plan the output slices.

    Args:
        fn: the function traced at the padded (bucket) lengths.
        probes: the same function traced with other bucketed lengths (each different
            from `fn`'s on every bucketed axis).
        in_axes: parameter index -> {axis: label} of the bucketed axes.
        names: a readable name per label, e.g. `"x axis 0"`.
        fname: the function's name, for messages.
    Returns:
        A `BatchPlan`. Raises `BucketError` naming the op that mixes along a bucketed axis.
    """
    ctx = _Ctx(names, fname)
    for probe in probes:
        _align(ctx, fn, probe)
    for i, p in enumerate(fn.params):
        st = [None] * p.type.rank
        for axis, label in in_axes.get(i, {}).items():
            st[axis] = ("B", label)
        ctx.state[p] = st
    _walk(ctx, fn)
    plan = BatchPlan()
    sizes = {}  # label -> its length in fn and in each probe
    for i, axes in in_axes.items():
        for axis, label in axes.items():
            sizes[label] = tuple(g.params[i].type.shape[axis] for g in [fn, *probes])
    for k, r in enumerate(fn.results):
        if r in ctx.taint:
            c, use = ctx.taint[r]
            where = f", used by `{use.name}`{errors.at(use.loc)}" if use is not None else ""
            raise BucketError(
                f"purejit.jit({fname}, buckets=...): output {k} depends on a `{c.name}` "
                "computed from the padded length of a bucketed axis (e.g. `x.shape[0]` used "
                f"as a number){where}; padding would change the result. Compute it from the "
                "data, or remove the bucket."
            )
        for a, d1 in enumerate(r.type.shape):
            dims = tuple(g.results[k].type.shape[a] for g in [fn, *probes])
            if len(set(dims)) == 1:
                continue
            s = ctx.st(r, a)
            if isinstance(s, tuple):
                labels = tuple(i for i in range(len(names)) if ctx.find(i) == s[1])
            else:
                labels = tuple(lab for lab, sz in sizes.items() if sz == dims)
            if s is None or not labels:
                raise BucketError(
                    f"purejit.jit({fname}, buckets=...): output {k} axis {a} has length {d1} "
                    f"for this bucket, but is not made row by row from a bucketed axis, so it "
                    "cannot be sliced back to the true length."
                )
            plan.slices.append(OutputSlice(k, a, labels))
    roots: dict[int, list[int]] = {}
    for i in range(len(names)):
        roots.setdefault(ctx.find(i), []).append(i)
    plan.classes = [tuple(v) for v in roots.values() if len(v) > 1]
    return plan


# --- aligning the two traces ----------------------------------------------------------------


def _align(ctx: _Ctx, f1: Function, f2: Function, m: dict | None = None):
    """Match values of f1 and f2 op by op; record tied axes and length-dependent constants."""
    m = {} if m is None else m

    def differ(msg: str, op: Op | None = None):
        where = f" at `{op.name}`{errors.at(op.loc)}" if op is not None else ""
        raise BucketError(
            f"purejit.jit({ctx.fname}, buckets=...): the program traced for the padded length "
            f"and the one traced for another length differ{where} ({msg}): the Python "
            "code depends on the length of a bucketed axis (an `if` or loop on x.shape), so "
            "padding could change what it computes."
        )

    def pair(v1: Value, v2: Value, op=None):
        if v1.type.rank != v2.type.rank or v1.type.dtype != v2.type.dtype:
            differ(f"{v1.type} vs {v2.type}", op)
        m[v1] = v2
        old = ctx.tied.get(v1, (False,) * v1.type.rank)
        new = tuple(a != b for a, b in zip(v1.type.shape, v2.type.shape))
        ctx.tied[v1] = tuple(p or q for p, q in zip(old, new))

    if len(f1.params) != len(f2.params):
        differ(f"{len(f1.params)} parameters vs {len(f2.params)}")
    for p1, p2 in zip(f1.params, f2.params):
        pair(p1, p2)
    for o1, o2 in zip(f1.ops, f2.ops):
        same = (
            o1.name == o2.name
            and len(o1.operands) == len(o2.operands)
            and len(o1.results) == len(o2.results)
            and len(o1.regions) == len(o2.regions)
            and all(m.get(a) is b for a, b in zip(o1.operands, o2.operands))
        )
        if not same:
            differ(f"`{o1.name}` vs `{o2.name}`", o1)
        for r1, r2 in zip(o1.results, o2.results):
            pair(r1, r2, o1)
        for g1, g2 in zip(o1.regions, o2.regions):
            _align(ctx, g1, g2, m)
        if o1.has_trait("constant") and not _prefix_equal(o1.attrs["value"], o2.attrs["value"]):
            ctx.changed_consts.add(id(o1))
    if len(f1.ops) != len(f2.ops):
        n = min(len(f1.ops), len(f2.ops))
        first = next((o for o in (f1.ops[n:] + f2.ops[n:]) if o.loc), None)
        differ(f"{len(f1.ops)} ops vs {len(f2.ops)}", first)
    if len(f1.results) != len(f2.results) or any(
        m.get(a) is not b for a, b in zip(f1.results, f2.results)
    ):
        differ("different results")


def _prefix_equal(a, b) -> bool:
    """Whether constant `a` (traced at length b) is `b`'s constant cut to `a`'s shape: then
    each element depends on its position only, not on the length (np.arange(n), np.zeros)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.ndim != b.ndim or any(p > q for p, q in zip(a.shape, b.shape)):
        return False
    cut = np.ascontiguousarray(b[tuple(slice(0, d) for d in a.shape)])
    return np.ascontiguousarray(a).tobytes() == cut.tobytes()


# --- the forward walk -----------------------------------------------------------------------


def _walk(ctx: _Ctx, fn: Function):
    for op in fn.ops:
        for v in op.operands:
            if v not in ctx.state:  # defensive: a value from outside this region
                ctx.state[v] = [None] * v.type.rank
        rule = _RULES.get(op.name)
        if rule is None and op.has_trait("elementwise"):
            rule = _elementwise
        outs = (rule or _unknown)(ctx, op)
        for r, s in zip(op.results, outs):
            ctx.state[r] = list(s)
        if id(op) in ctx.changed_consts:
            for r in op.results:
                ctx.taint[r] = (op, op if op.loc else None)
        else:
            src = next((ctx.taint[v] for v in op.operands if v in ctx.taint), None)
            if src is not None:
                src = src if src[1] is not None or not op.loc else (src[0], op)
                for r in op.results:
                    ctx.taint.setdefault(r, src)


def _elementwise(ctx, op):
    rank = op.results[0].type.rank
    full = [v for v in op.operands if v.type.rank == rank]
    out = [ctx.join(op, [(v, a) for v in full]) if full else F for a in range(rank)]
    return [out] * len(op.results)


def _unknown(ctx, op):
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


def _walk_inside(ctx, op, region):
    ctx.outer.append(op.loc)
    try:
        _walk(ctx, region)
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


_RULES = {
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
}
