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

Rules (one per op kind, in `_batch_axes_rules.py` beside this file): elementwise ops join
the states of each axis (B with B unifies the labels, B with F stays B, B with a tied N axis
mixes); broadcast_in_dim, transpose and reshape move axes (reshape keeps an axis when the
elements before it and its size are unchanged, else it mixes); reductions, contractions,
sort, windows and cumulative ops, concatenation, reversal, padding, partial slices and
gathers *along a tied axis* mix; ops with regions (case, while) are analysed inside. Any op
the rules do not know mixes when it touches a tied axis. A mix raises `BucketError` naming
the op, its source line and why.

At the outputs: a tied axis in state B or F is sliced back to the true length; a tied axis
in state N, or any output computed from a length-dependent constant, is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from purejit.ir import Function, Op, Value
from purejit.passes._batch_axes_rules import RULES, F, elementwise, unknown


class BucketError(ValueError):
    """`buckets=` was asked for an axis the analysis cannot prove to be a batch axis."""


def _at(loc: str | None) -> str:
    return f" (at {loc})" if loc else ""


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

    def walk(self, fn: Function):
        """Run the forward walk over `fn` (a region of an op being analysed)."""
        _walk(self, fn)

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
            f"purejit.jit({self.fname}, buckets=...): `{op.name}`{_at(self.loc(op))} {why} "
            f"{self.what(v, axis)}. Padding is only safe when each output row depends on the "
            "same input row; remove this bucket, or move this computation out of the "
            "bucketed function."
        )

    def fail_op(self, op: Op, why: str):
        raise BucketError(
            f"purejit.jit({self.fname}, buckets=...): `{op.name}`{_at(self.loc(op))} {why}. "
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
            where = f", used by `{use.name}`{_at(use.loc)}" if use is not None else ""
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
        where = f" at `{op.name}`{_at(op.loc)}" if op is not None else ""
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
        elif o1.has_trait("control_flow") and repr(o1.attrs) != repr(o2.attrs):
            ctx.changed_consts.add(id(o1))  # e.g. a trip count taken from the length
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
        rule = RULES.get(op.name)
        if rule is None and op.has_trait("elementwise"):
            rule = elementwise
        outs = (rule or unknown)(ctx, op)
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
