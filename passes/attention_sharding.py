"""Fused attention per device in a partitioned program: prove which mesh axes each attention
op's batch follows, then run the op inside a `manual_computation` split over them.

XLA cannot partition cuDNN's attention custom calls by itself (JAX gives it a Python
callback through `custom_partitioning`). Attention is independent per batch element, so
running an attention op per device on a split of its batch is correct for *any* split; the
split only decides speed, since operands laid out otherwise are resharded around the call.
So the split is proved, not guessed:

    A = the mesh axes that shard dimension 0 of a parameter whose rows the op's batch
        provably follows (element b of q, k, v, ... depends only on row b of it)

Analysis (`prove`): one forward walk with the batch-axis rules of `_batch_axes_rules.py` (the
rules behind `jit(buckets=...)`), on one trace and without bucket probes. Axis 0 of every
parameter sharded along it is labelled; the state B(label) of an axis says element i depends
only on row i of that parameter (and on values that do not depend on it); F and N are as in
`batch_axes`. Where a rule would refuse a bucket (a contraction, reduction, reshape merge,
partial slice, reversal, gather ... across labelled rows), the labels it reads are instead
*mixed* into its results and into every value computed from them (every element may read
every row); so are the rows of one label along two axes of a value (x + xᵀ). Sharing the
bucket rules, B joined with N stays B: the N operand is data that, unless mixed, reads no
other row. The attention ops have their own rule: their results' batch axis joins their
operands' (attention mixes along the sequences, never across the batch); shard_map bodies
are left out (their attention runs per device already) and read as mixing.

An op is proved when axis 0 of every operand with a batch dimension (q, k, v, the sequence
lengths, a bias not broadcast over the batch; for the backward also out, the statistics and
d_out) is B of a class of labels whose parameters are all split over the same axes A, none of
those labels is mixed into the operand, every operand gives the same A, B divides by the
number of devices along A, and the op sits at the top level of the program (not inside
control flow). Anything else is refused with the reason.

Rewrite (`ShardAttention`): each proved op becomes

    manual_computation(operands) {in_specs / out_specs: dimension 0 over A for every
        operand and result with a batch dimension, all else replicated; every mesh axis
        manual, so axes outside A run the same batch split}
      region(local operands) { the same op on the local shapes }

whose results are the op's own values, so its users are untouched; heads stay whole (head
sharding under jit is not done here). The forward's statistics and output leave one
manual computation split as the backward's take them in, so nothing is resharded between
them. The op's meaning is unchanged whatever the backend; only a CUDA emission turns it into
cuDNN's call, with the per-device batch (`purejit/backend/cudnn_fmha.py`). Never touches:
any other op, ops inside regions, refused ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from purejit.ir import Function, Op, TensorType, Value
from purejit.ir.ops.attention import BWD, FWD, LIN, split_operands
from purejit.passes._batch_axes_rules import RULES, _identity, _region_call, elementwise, unknown
from purejit.passes.base import PassResult
from purejit.passes.batch_axes import _at, _Ctx

ATTENTION_OPS = frozenset({FWD, BWD, LIN})


class _Rows(_Ctx):
    """The batch-axis context over one trace: a rule that mixes labelled rows marks their
    labels mixed (with the reason) instead of refusing."""

    def __init__(self, names: list[str]):
        super().__init__(names, "")
        self.mixed: dict[Value, dict[int, str]] = {}  # value -> {label: why it was mixed}
        self.pending: dict[int, str] = {}  # labels the op being walked mixes
        self.inherit: list[dict[int, str]] = [{}]  # what enclosing region ops' operands mix
        self.inside: list[dict[int, str]] = [{}]  # everything mixed in the regions walked

    def is_tied(self, v: Value, axis: int) -> bool:
        s = self.state.get(v)
        return s is not None and isinstance(s[axis], tuple)

    def fail(self, op: Op, v: Value, axis: int, why: str):
        label = self.find(self.state[v][axis][1])
        if label not in self.pending:
            self.pending[label] = f"`{op.name}`{_at(self.loc(op))} {why} axis {axis} of {v.type}"

    def fail_op(self, op: Op, why: str):
        for v in op.operands:
            for a in range(v.type.rank):
                if self.is_tied(v, a):
                    self.fail(op, v, a, why + ", and it reads")

    def mix_of(self, v: Value) -> dict[int, str]:
        return self.mixed.get(v, self.inherit[-1])

    def walk(self, fn: Function):
        _walk(self, fn)


def _walk(ctx: _Rows, fn: Function):
    for op in fn.ops:
        for v in op.operands:
            if v not in ctx.state:  # a value from outside this region
                ctx.state[v] = [None] * v.type.rank
        # what the operands mix, shared (never mutated) when one operand brings it all
        found = {id(m): m for m in map(ctx.mix_of, op.operands) if m}
        mix = next(iter(found.values())) if len(found) == 1 else {}
        for m in found.values() if len(found) > 1 else ():
            for k, why in m.items():
                mix.setdefault(k, why)
        rule = _RULES.get(op.name)
        if rule is None:
            rule = elementwise if op.has_trait("elementwise") else unknown
        outer, ctx.pending = ctx.pending, {}
        ctx.inherit.append(mix)
        ctx.inside.append({})
        try:
            outs = rule(ctx, op)
        finally:
            mine, ctx.pending = ctx.pending, outer
            ctx.inherit.pop()
            inside = ctx.inside.pop()
        if outs is None:  # the rule gave up on the op (a loop that does not settle)
            outs = [[None] * r.type.rank for r in op.results]
        for r, st in zip(op.results, outs):
            _two_axes(ctx, op, r, st, mine)
        new = {k: why for k, why in (*inside.items(), *mine.items()) if k not in mix}
        if new:
            mix = {**mix, **new}
        # an identity op of several values (an optimization_barrier) passes each operand's
        # mix to its own result only: the split projection's barriers hold x with weight
        # columns, and the gradients' barriers hold values of unrelated layers
        apart = rule is _identity and len(op.results) == len(op.operands) > 1
        for i, (r, s) in enumerate(zip(op.results, outs)):
            ctx.state[r] = list(s)
            each = ctx.mix_of(op.operands[i]) if apart else mix
            if each:
                ctx.mixed[r] = each
        if len(ctx.inside) > 1:  # inside a region: its op's results carry what it mixes
            for k, why in mix.items():
                ctx.inside[-1].setdefault(k, why)


def _two_axes(ctx: _Rows, op: Op, r: Value, st: list, into: dict):
    """Rows of one label along two axes of a value (x + xᵀ, an outer product of x with
    itself): element (i, j) reads rows i and j, so neither axis follows the rows alone."""
    seen = set()
    for a, s in enumerate(st):
        if isinstance(s, tuple):
            root = ctx.find(s[1])
            if root in seen and root not in into:
                into[root] = (
                    f"`{op.name}`{_at(ctx.loc(op))} gives {r.type} the same rows along two "
                    f"axes (axis {a} and an earlier one)"
                )
            seen.add(root)


def _batched(op: Op) -> list[tuple[str, Value]]:
    """(name, operand) of every operand of an attention op with a batch dimension."""
    a = op.attrs
    q, k, v, bias, ql, kl, rest = split_operands(op.name, op.operands, a)
    b = q.type.shape[0]
    out = [("q", q), ("k", k), ("v", v)]
    if bias is not None and bias.type.shape[0] == b:
        out.append(("bias", bias))
    if ql is not None:
        out += [("q_seq_lengths", ql), ("kv_seq_lengths", kl)]
    names = {BWD: ("out", "stats", "d_out"), LIN: ("out", "stats", "tq", "tk", "tv", "tbias")}
    for name, x in zip(names.get(op.name, ()), rest):
        if x.type.rank and x.type.shape[0] == b:
            out.append((name, x))
    return out


def _attention_rule(ctx: _Rows, op: Op):
    """Attention mixes along the sequences and heads of its operands, never across the
    batch: each result's batch axis joins the operands' batch axes."""
    batched = _batched(op)
    held = {id(x) for _, x in batched}
    for x in op.operands:
        for a in range(x.type.rank):
            if ctx.is_tied(x, a) and (a > 0 or id(x) not in held):
                ctx.fail(op, x, a, "attends along")
    row = ctx.join(op, [(x, 0) for _, x in batched])
    b = op.operands[0].type.shape[0]
    return [
        [row if a == 0 and r.type.shape[0] == b else None for a in range(r.type.rank)]
        for r in op.results
    ]


_RULES = {
    **RULES,
    "sharding_constraint": _identity,  # the same values, laid out as asked
    "fusion": _region_call,  # a group of ops: its region computes its results
    FWD: _attention_rule,
    BWD: _attention_rule,
    LIN: _attention_rule,
}


@dataclass(frozen=True)
class Proof:
    """One attention op and what was proved of it: `axes` (the mesh axes A its batch is
    split over), or the `reason` it is refused."""

    op: Op
    axes: tuple[str, ...] | None = None
    reason: str | None = None


def prove(fn: Function, param_axes, sizes: dict[str, int]) -> list[Proof]:
    """The batch split of every attention op of `fn` (its own regions included).

    Args:
        fn: the program (after the jit pipeline: calls inlined).
        param_axes: per parameter, the mesh axes splitting its dimension 0 (() or None:
            not split).
        sizes: mesh axis name -> size.
    Returns:
        One `Proof` per attention op, in program order (nested ones refused; those in
        shard_map bodies left out: they run per device already).
    """
    labelled = [i for i, ax in enumerate(param_axes) if ax and fn.params[i].type.rank]
    names = [f"argument {i} ({fn.params[i].type}) dimension 0" for i in labelled]
    ctx = _Rows(names)
    for p in fn.params:
        ctx.state[p] = [None] * p.type.rank
    for label, i in enumerate(labelled):
        ctx.state[fn.params[i]][0] = ("B", label)
    _walk(ctx, fn)
    axes_of = [tuple(param_axes[i]) for i in labelled]
    top = {id(op) for op in fn.ops}
    return [_prove_one(ctx, op, axes_of, names, sizes, id(op) in top) for op in _attention_ops(fn)]


def _attention_ops(fn: Function):
    """The attention ops of `fn` and its regions, except those in shard_map bodies
    (`manual_computation` regions), which already run per device."""
    for op in fn.ops:
        if op.name in ATTENTION_OPS:
            yield op
        if op.name != "manual_computation":
            for r in op.regions:
                yield from _attention_ops(r)


def _prove_one(ctx: _Rows, op: Op, axes_of, names, sizes, top: bool) -> Proof:
    if not top:
        return Proof(op, reason="it runs inside control flow (scan, while, cond)")
    found = None
    for name, x in _batched(op):
        s = ctx.state.get(x, [None])[0]
        if not isinstance(s, tuple):
            return Proof(
                op,
                reason=f"the batch dimension of {name} {x.type} does not provably follow the "
                "rows of an argument split along its dimension 0 (in_shardings)",
            )
        root = ctx.find(s[1])
        labels = [k for k in range(len(names)) if ctx.find(k) == root]
        split = {axes_of[k] for k in labels}
        if len(split) != 1:
            which = ", ".join(f"{names[k]} over {axes_of[k]}" for k in labels)
            return Proof(
                op, reason=f"the batch of {name} follows arguments split differently: {which}"
            )
        mixed = {ctx.find(k): why for k, why in ctx.mix_of(x).items()}
        for a, t in enumerate(ctx.state[x][1:], 1):  # labels joined after x was made
            if isinstance(t, tuple) and ctx.find(t[1]) == root:
                mixed.setdefault(root, f"axis {a} of {name} carries the same rows")
        if root in mixed:
            return Proof(
                op,
                reason=f"the batch rows of {name} are mixed across the batch: {mixed[root]}",
            )
        (axes,) = split
        if found is not None and axes != found:
            return Proof(op, reason=f"the batch of {name} is split over {axes}, q's over {found}")
        found = axes
    n = int(np.prod([sizes[a] for a in found], dtype=np.int64))
    b = op.operands[0].type.shape[0]
    if b % n:
        return Proof(op, reason=f"batch {b} does not divide over {found} ({n} devices)")
    bias = split_operands(op.name, op.operands, op.attrs)[3]
    summed = bias is not None and bias.type.shape[0] != b and op.attrs.get("bias_grad")
    if summed and n > 1:
        return Proof(
            op,
            reason="the gradient of a bias broadcast over the batch sums over devices (not "
            "done per device)",
        )
    return Proof(op, axes=found)


@dataclass(frozen=True)
class ShardAttention:
    """The pass: each proved attention op of a partitioned program runs per device.

    Attributes:
        axis_names, mesh_shape, device_ids: the program's mesh.
        param_axes: per parameter, the mesh axes splitting its dimension 0 (the
            in_shardings; () where it is not split).
    """

    axis_names: tuple[str, ...]
    mesh_shape: tuple[int, ...]
    device_ids: tuple[int, ...]
    param_axes: tuple[tuple[str, ...], ...]
    name: str = "shard_attention"

    def __call__(self, fn: Function) -> PassResult:
        sizes = dict(zip(self.axis_names, (int(s) for s in self.mesh_shape)))
        proofs = prove(fn, self.param_axes, sizes)
        split = {id(p.op): p.axes for p in proofs if p.axes is not None}
        report = {
            "sharded": [_entry(p) for p in proofs if p.axes is not None],
            "refused": [_entry(p) for p in proofs if p.axes is None],
        }
        if not split:
            return PassResult(fn, False, report if proofs else {})
        ops = [self._wrap(op, split[id(op)], sizes) if id(op) in split else op for op in fn.ops]
        return PassResult(Function(fn.name, fn.params, ops, fn.results), True, report)

    def _wrap(self, op: Op, axes: tuple[str, ...], sizes: dict[str, int]) -> Op:
        n = int(np.prod([sizes[a] for a in axes], dtype=np.int64))
        b = op.operands[0].type.shape[0]

        def split(t) -> bool:
            return t.rank > 0 and t.shape[0] == b

        def spec(t):
            return tuple(axes if i == 0 and split(t) else () for i in range(t.rank))

        def local(t):
            return TensorType((t.shape[0] // n, *t.shape[1:]), t.dtype) if split(t) else t

        params = [Value(local(x.type)) for x in op.operands]
        inner = Op(op.name, params, op.attrs, [Value(local(r.type)) for r in op.results],
                   loc=op.loc)  # fmt: skip
        body = Function(f"{op.name}_per_device", params, [inner], inner.results)
        attrs = {
            "axis_names": tuple(self.axis_names),
            "mesh_shape": tuple(self.mesh_shape),
            "device_ids": tuple(self.device_ids),
            "in_specs": tuple(spec(x.type) for x in op.operands),
            "out_specs": tuple(spec(r.type) for r in op.results),
            "check_vma": False,
        }
        return Op("manual_computation", op.operands, attrs, op.results, [body], op.loc)


def _entry(p: Proof) -> dict:
    a = p.op.attrs
    e = {"op": p.op.name, "loc": p.op.loc, "mask": a["mask"], "scale": a["scale"]}
    if p.axes is not None:
        e["batch_axes"] = p.axes
    else:
        e["reason"] = p.reason
    return e
