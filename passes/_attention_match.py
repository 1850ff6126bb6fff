"""Finding attention written by hand: the structural half of `fuse_attention`.

Anchored at a softmax (purejit.nn.softmax's `custom_jvp_call`, or max-subtract / exp / sum /
divide by hand), `match_at` walks back to the logits `dot_general` and forward to the
`dot_general` with the values, and labels every dimension it meets: the logits' batch
dimensions `b0, b1, ...`, the query positions `t` (and a group axis `g` when the query was
reshaped to groups), the key positions `s`, the head dimension `h` and the value head
dimension `hv`. Labels come from the exact dimension numbers and permutations of each op on
the way, never from shapes, so a transposed or permuted operand is followed as what it is.
Every value between the logits and the output must have no user outside the pattern.

What this file proves is structure only; `fuse_attention` proves the constants (scale, fill,
masks evaluated on the host) and the target's limits before rewriting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from purejit.ir import Function, Op, Value, dtypes, interpret
from purejit.passes.constant_fold import constant_value, splat_scalar


class Refused(Exception):
    """A pattern that is not provably attention; the message is the reason `explain` shows."""


class Graph:
    """Producers and users of every value of one function (not of its regions)."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.defs: dict[Value, Op] = {}
        self.users: dict[Value, list[Op]] = {}
        self.params = set(fn.params)
        for op in fn.ops:
            for r in op.results:
                self.defs[r] = op
            for v in op.operands:
                self.users.setdefault(v, []).append(op)
        for v in fn.results:
            self.users.setdefault(v, []).append(None)  # None: returned by the function

    def users_of(self, v: Value) -> list:
        return self.users.get(v, [])

    def only_user(self, v: Value) -> Op | None:
        us = self.users_of(v)
        return us[0] if len(us) == 1 else None

    def splat(self, v: Value) -> float | None:
        """The scalar every element of `v` equals when it is a compile-time constant."""
        op = self.defs.get(v)
        while op is not None and _passes_values(op):
            op = self.defs.get(op.operands[0])
        c = constant_value(op)
        if c is None:
            return None
        s = splat_scalar(c)
        return None if s is None else float(s)

    def depends_on_params(self, v: Value, seen: dict | None = None) -> bool:
        """Whether `v` reads a parameter of the function (else it is computable on the host)."""
        seen = {} if seen is None else seen
        stack = [v]
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen[x] = True
            if x in self.params:
                return True
            op = self.defs.get(x)
            if op is None:
                return True
            if not op.has_trait("pure") or op.has_trait("side_effect"):
                return True
            stack.extend(op.operands)
        return False


def _passes_values(op: Op) -> bool:
    """Whether `op` hands on its one operand's elements unchanged, as far as a splat
    constant goes: a data movement, or `pvary` (shard_map's typing mark for a value every
    device holds alike, which constants meeting per-device values get)."""
    if len(op.operands) != 1:
        return False
    return op.has_trait("shape_only") or op.name == "pvary"


# elements of a constant mask evaluated on the host: a causal mask for T = S = 8192 (64 MiB of
# bools, tens of milliseconds); at 1 << 22 a tril(ones((4096, 4096))) mask went unfused
HOST_MASK_LIMIT = 1 << 26


def host_value(g: Graph, v: Value, labels: list):
    """`(array, labels)` of a constant value, evaluated on the host from its smallest
    broadcast source; (None, None) when it is too large."""
    op = g.defs.get(v)
    while op is not None and op.name in ("broadcast_in_dim", "pvary"):
        if op.name == "broadcast_in_dim":
            labels = [labels[d] for d in op.attrs["broadcast_dimensions"]]
        v = op.operands[0]
        op = g.defs.get(v)
    if v.type.size > HOST_MASK_LIMIT:
        return None, None
    order, seen, stack = [], set(), [v]
    while stack:  # the ops v depends on, in program order
        x = stack.pop()
        d = g.defs.get(x)
        if d is None or id(d) in seen:
            continue
        seen.add(id(d))
        order.append(d)
        stack.extend(d.operands)
    pos = {id(o): i for i, o in enumerate(g.fn.ops)}
    order.sort(key=lambda o: pos[id(o)])
    (arr,) = interpret(Function("mask", [], order, [v]))
    return np.asarray(arr), labels


def _single(g: Graph, v: Value, what: str) -> Op:
    us = g.users_of(v)
    if None in us:
        raise Refused(f"the {what} is also returned by the function")
    if len(us) != 1:
        raise Refused(f"the {what} has {len(us)} users (it is used again outside attention)")
    return us[0]


# ---- softmax --------------------------------------------------------------------------------


def _reducer(g: Graph, op: Op, binary: str, init: float) -> int | None:
    """The one axis `op` reduces along with `binary` from `init`, else None."""
    if op.name != "reduce" or len(op.operands) != 2 or len(op.attrs["dimensions"]) != 1:
        return None
    (body,) = op.regions
    if len(body.ops) != 1 or body.ops[0].name != binary:
        return None
    inner = body.ops[0]
    if set(inner.operands) != set(body.params) or body.results != inner.results:
        return None
    c = g.splat(op.operands[1])  # (under shard_map the init is a pvary of the constant)
    if c is None or not (c == init):
        return None
    return int(op.attrs["dimensions"][0])


def _is_float_convert(op: Op) -> bool:
    """A `convert` from one floating dtype to another (a widening for accumulation, or the
    rounding back)."""
    if op.name != "convert":
        return False
    kinds = (np.dtype(op.operands[0].type.dtype).kind, np.dtype(op.results[0].type.dtype).kind)
    return kinds == ("f", "f") or "V" in kinds  # ml_dtypes' bfloat16 is kind "V"


def _through_stop_gradient(g: Graph, v: Value) -> Value:
    """`v` with any `stop_gradient` or float `convert` in front of it skipped. A
    stop_gradient leaves the forward value as it is, and a softmax is shift-invariant, so
    the row max's gradient (stopped as jax.nn's softmax stops it) never changes the
    softmax's; a float convert on a row statistic is the accumulation dtype jax.numpy's sum
    uses for float16/bfloat16 (float32, rounded back), which the fused kernel keeps in
    float32 throughout (fusion changes result bits, as documented)."""
    op = g.defs.get(v)
    while op is not None and (op.name == "stop_gradient" or _is_float_convert(op)):
        v = op.operands[0]
        op = g.defs.get(v)
    return v


def _spread_back(g: Graph, w: Value, axis: int, rank: int) -> Value | None:
    """`r` when `w` is `r` (reduced along `axis`) broadcast back to the full shape: either
    broadcast_in_dim(reshape(r)) with the axis kept as 1, or broadcast_in_dim(r) over every
    dimension but `axis` (a `stop_gradient` anywhere on the way is looked through)."""
    op = g.defs.get(_through_stop_gradient(g, w))
    if op is None or op.name != "broadcast_in_dim":
        return None
    u = _through_stop_gradient(g, op.operands[0])
    dims = tuple(op.attrs["broadcast_dimensions"])
    if dims == tuple(d for d in range(rank) if d != axis):
        return u
    inner = g.defs.get(u)
    if dims != tuple(range(rank)) or inner is None or inner.name != "reshape":
        return None
    if u.type.shape[axis] != 1:
        return None
    r = _through_stop_gradient(g, inner.operands[0])
    want = tuple(d for i, d in enumerate(u.type.shape) if i != axis)
    return r if r.type.shape == want else None


def softmax_by_hand(g: Graph, x: Value) -> tuple[Value, int, list[Op]] | None:
    """`(out, axis, ops)` when `x` feeds exp(x - max(x)) / sum(...) along one axis."""
    us = g.users_of(x)
    if len(us) != 2 or None in us:
        return None
    rmax = next((u for u in us if u.name == "reduce"), None)
    sub = next((u for u in us if u.name == "subtract"), None)
    if rmax is None or sub is None or rmax.operands[0] is not x or sub.operands[0] is not x:
        return None
    axis = _reducer(g, rmax, "maximum", -np.inf)
    rank = x.type.rank
    if axis is None or _spread_back(g, sub.operands[1], axis, rank) is not rmax.results[0]:
        return None
    exp = g.only_user(sub.results[0])
    if exp is None or exp.name != "exponential":
        return None
    e = exp.results[0]
    eus = g.users_of(e)
    if len(eus) != 2 or None in eus:
        return None
    rsum = next((u for u in eus if u.name == "reduce"), None)
    div = next((u for u in eus if u.name == "divide"), None)
    up = None
    if rsum is None:  # sum(e) accumulated in float32: convert(e) -> reduce
        up = next((u for u in eus if _is_float_convert(u)), None)
        rsum = g.only_user(up.results[0]) if up is not None else None
        if rsum is None or rsum.name != "reduce" or rsum.operands[0] is not up.results[0]:
            return None
    if div is None or div.operands[0] is not e or rsum.operands[0] is not (up or exp).results[0]:
        return None
    if _reducer(g, rsum, "add", 0.0) != axis:
        return None
    if _spread_back(g, div.operands[1], axis, rank) is not rsum.results[0]:
        return None
    inner = [rmax, sub, exp] + ([up] if up is not None else []) + [rsum, div]
    for op in inner[:-1]:  # the row statistics have no other readers
        for r in op.results:
            if len(g.users_of(r)) > (2 if op is exp else 1) or None in g.users_of(r):
                return None
    return div.results[0], axis, inner


def softmax_in_region(region: Function) -> int | None:
    """The axis when a one-input, one-output region is exactly a softmax."""
    if len(region.params) != 1 or len(region.results) != 1:
        return None
    hit = softmax_by_hand(Graph(region), region.params[0])
    if hit is None or hit[0] is not region.results[0]:
        return None
    return hit[1]


@dataclass
class Softmax:
    """A softmax found in the program: its input, output, axis and the ops it is made of."""

    x: Value
    out: Value
    axis: int
    ops: list
    trusted: bool
    loc: str | None


def find_softmaxes(g: Graph, trusted_rules) -> list[Softmax]:
    """Every softmax of `g`'s function, in program order."""
    out = []
    for op in g.fn.ops:
        if op.name == "custom_jvp_call" and len(op.operands) == 1 and len(op.results) == 1:
            axis = softmax_in_region(op.regions[0])
            if axis is not None:
                trusted = op.attrs.get("rule") in trusted_rules
                out.append(Softmax(op.operands[0], op.results[0], axis, [op], trusted, op.loc))
        elif op.name == "reduce" and op.operands:
            hit = softmax_by_hand(g, op.operands[0])
            if hit is not None and hit[2][0] is op:
                out.append(Softmax(op.operands[0], hit[0], hit[1], hit[2], True, op.loc))
    return out


# ---- the logits, the chain to the softmax and on to the output ------------------------------


@dataclass
class Step:
    """One op between the logits and the softmax, with the labels of its chain operand."""

    op: Op
    labels: list  # of the value the op reads on the chain
    chain_index: int  # which operand is the chain


@dataclass
class Side:
    """A dot operand followed back to its source: `labels[i]` names `src`'s dimension i
    (None for a size-1 dimension that is dropped); `scale` the constant factors on the way;
    `repeat` = (label, G) when the heads were repeated G times (grouped-query k/v)."""

    src: Value
    labels: list
    scale: float = 1.0
    repeat: tuple | None = None


@dataclass
class Match:
    """Attention found by structure, before the constants and target limits are proved."""

    softmax: Softmax
    logits: Op
    output: Op
    steps: list = field(default_factory=list)
    q: Side | None = None
    k: Side | None = None
    v: Side | None = None
    q_free: list = field(default_factory=list)  # t (and g) candidates
    out_labels: list = field(default_factory=list)
    chain_ops: list = field(default_factory=list)  # every op the fused op replaces
    s_label: str = "s"


def _dot_dims(op: Op):
    a = op.attrs
    return (
        list(a["lhs_batching_dimensions"]),
        list(a["rhs_batching_dimensions"]),
        list(a["lhs_contracting_dimensions"]),
        list(a["rhs_contracting_dimensions"]),
    )


def _free(rank: int, *used) -> list[int]:
    taken = {d for u in used for d in u}
    return [d for d in range(rank) if d not in taken]


def _positive_splat(g: Graph, v: Value) -> float | None:
    c = g.splat(v)
    return c if c is not None and np.isfinite(c) and c > 0 else None


def trace_side(g: Graph, v: Value, labels: list, allow_scale: bool, repeats: bool) -> Side:
    """Follow a dot operand back through transposes, constant scales (`allow_scale`) and a
    head repeat (`repeats`: k and v, whose heads the op may share between query heads)."""
    side = Side(v, list(labels))
    while True:
        op = g.defs.get(side.src)
        if op is None:
            return side
        if op.name == "transpose":
            perm = op.attrs["permutation"]
            new = [None] * len(perm)
            for i, p in enumerate(perm):
                new[p] = side.labels[i]
            side.src, side.labels = op.operands[0], new
        elif op.name in ("multiply", "divide") and allow_scale:
            a, b = op.operands
            c = _positive_splat(g, b)
            if c is None and op.name == "multiply":
                c, a = _positive_splat(g, a), b
            if c is None:
                return side
            side.scale *= c if op.name == "multiply" else 1.0 / c
            side.src = a
        elif op.name == "reshape" and repeats and side.repeat is None:
            hit = _repeat(g, op, side.labels)
            if hit is None:
                return side
            side.src, side.labels, side.repeat = hit
        else:
            return side


def _repeat(g: Graph, op: Op, labels: list):
    """`(z, z_labels, (label, G))` when `op` = reshape(broadcast_in_dim(z)) repeats one
    dimension's entries G times each (jnp.repeat, or broadcast_to of a new axis + reshape):
    entry n of the result reads entry n // G of z's dimension."""
    (y,) = op.operands
    bop = g.defs.get(y)
    if bop is None or bop.name != "broadcast_in_dim":
        return None
    xs, ys = op.results[0].type.shape, y.type.shape
    if len(ys) != len(xs) + 1:
        return None
    j = next((i for i in range(len(xs)) if ys[i] != xs[i]), len(xs) - 1)
    if ys[:j] != xs[:j] or ys[j + 2 :] != xs[j + 1 :] or ys[j] * ys[j + 1] != xs[j]:
        return None
    (z,) = bop.operands
    dims = list(bop.attrs["broadcast_dimensions"])
    if dims != sorted(dims) or j not in dims or z.type.shape[dims.index(j)] != ys[j]:
        return None
    zl = []
    for i, d in enumerate(dims):
        if d == j + 1:
            if z.type.shape[i] != 1:
                return None
            zl.append(None)
        elif z.type.shape[i] != ys[d]:
            return None
        else:
            zl.append(labels[d] if d <= j else labels[d - 1])
    return z, zl, (labels[j], ys[j + 1])


_CHAIN = ("convert", "transpose", "multiply", "divide", "add", "select")


def _walk_back(g: Graph, x: Value, depth: int = 0):
    """The ops from a logits dot_general to `x` (first op last), trying each non-constant
    operand of an add (a bias may be computed too); None when no dot is reached."""
    op = g.defs.get(x)
    if op is None or depth > 32:
        return None
    if op.name == "dot_general":
        return op, []
    if op.name not in _CHAIN:
        return None
    if op.name == "select":
        candidates = [1, 2]
    elif op.name in ("multiply", "divide"):
        candidates = [0] if op.name == "divide" else [0, 1]
    elif op.name == "add":
        candidates = [0, 1]
    else:
        candidates = [0]
    for i in candidates:
        v = op.operands[i]
        if g.splat(v) is not None:
            continue
        if len(g.users_of(v)) != 1 or None in g.users_of(v):
            continue
        hit = _walk_back(g, v, depth + 1)
        if hit is not None:
            return hit[0], hit[1] + [(op, i)]
    return None


def match_at(g: Graph, sm: Softmax) -> Match:
    """Attention around the softmax `sm`, by structure; raises Refused with the reason."""
    if not sm.trusted:
        raise Refused(
            "the softmax is a custom_jvp whose rule is not purejit.nn.softmax's (a user's own "
            "derivative is never replaced)"
        )
    if sm.ops[0].name == "custom_jvp_call":
        _single(g, sm.x, "softmax input")
    back = _walk_back(g, sm.x)
    if back is None:
        raise Refused("the softmax input is not logits of a dot_general (through casts, "
                      "scales, masks and a bias)")  # fmt: skip
    logits, path = back
    if path:  # (logits that are the softmax's input were checked with the softmax)
        _single(g, logits.results[0], "logits")
    lb, rb, lc, rc = _dot_dims(logits)
    if len(lc) != 1 or len(rc) != 1:
        raise Refused("the logits dot_general contracts more than one dimension")
    a, b = logits.operands
    lf, rf = _free(a.type.rank, lb, lc), _free(b.type.rank, rb, rc)
    labels = [f"b{i}" for i in range(len(lb))] + [f"l{j}" for j in range(len(lf))]
    labels += [f"r{j}" for j in range(len(rf))]
    steps = []
    for op, idx in path:
        steps.append(Step(op, list(labels), idx))
        if op.name == "transpose":
            labels = [labels[p] for p in op.attrs["permutation"]]
    s = labels[sm.axis]
    if s.startswith("b"):
        raise Refused(f"the softmax runs over a batch dimension of the logits (axis {sm.axis})")
    k_is_rhs = s.startswith("r")
    if (len(rf) if k_is_rhs else len(lf)) != 1:
        raise Refused("the key side of the logits has more than one free dimension")
    q_free = [f"l{j}" for j in range(len(lf))] if k_is_rhs else [f"r{j}" for j in range(len(rf))]
    if not 1 <= len(q_free) <= 2:
        raise Refused("the query side of the logits has no free dimension or more than two")
    batch = [f"b{i}" for i in range(len(lb))]
    a_labels = [None] * a.type.rank
    b_labels = [None] * b.type.rank
    for i, (dl, dr) in enumerate(zip(lb, rb)):
        a_labels[dl], b_labels[dr] = batch[i], batch[i]
    a_labels[lc[0]], b_labels[rc[0]] = "h", "h"
    for j, d in enumerate(lf):
        a_labels[d] = f"l{j}"
    for j, d in enumerate(rf):
        b_labels[d] = f"r{j}"
    (q_val, q_lab), (k_val, k_lab) = ((a, a_labels), (b, b_labels))
    if not k_is_rhs:
        (q_val, q_lab), (k_val, k_lab) = (k_val, k_lab), (q_val, q_lab)
    m = Match(sm, logits, logits, steps, q_free=q_free, s_label=s)
    m.q = trace_side(g, q_val, q_lab, True, False)
    m.k = trace_side(g, k_val, k_lab, True, True)
    m.chain_ops = [logits] + [op for op, _ in path] + list(sm.ops)
    _forward(g, m, sm.out, labels, batch)
    return m


def _forward(g: Graph, m: Match, p: Value, labels: list, batch: list) -> None:
    """From the probabilities through casts and transposes to the dot with the values."""
    while True:
        op = _single(g, p, "probabilities")
        if op.name == "convert" and dtypes.is_float(op.results[0].type.dtype):
            pass
        elif op.name == "transpose":
            labels = [labels[i] for i in op.attrs["permutation"]]
        elif op.name == "dot_general":
            break
        else:
            raise Refused(f"the probabilities go through {op.name} before the dot with v")
        m.chain_ops.append(op)
        p = op.results[0]
    lb, rb, lc, rc = _dot_dims(op)
    p_is_lhs = op.operands[0] is p
    if op.operands[0] is op.operands[1]:
        raise Refused("the probabilities are multiplied with themselves")
    pb, pc, vb, vc = (lb, lc, rb, rc) if p_is_lhs else (rb, rc, lb, lc)
    v = op.operands[1 if p_is_lhs else 0]
    if len(pc) != 1 or labels[pc[0]] != m.s_label:
        raise Refused("the dot with v does not contract the key axis of the probabilities")
    if sorted(labels[d] for d in pb) != sorted(batch):
        raise Refused("the dot with v does not batch exactly the logits' batch dimensions")
    p_free = _free(len(labels), pb, pc)
    if sorted(labels[d] for d in p_free) != sorted(m.q_free):
        raise Refused("the dot with v keeps other free dimensions than the query positions")
    v_free = _free(v.type.rank, vb, vc)
    if len(v_free) != 1:
        raise Refused("the values have more than one free dimension")
    v_labels = [None] * v.type.rank
    for dp, dv in zip(pb, vb):
        v_labels[dv] = labels[dp]
    v_labels[vc[0]], v_labels[v_free[0]] = m.s_label, "hv"
    out = [labels[d] for d in pb]
    q_part = [labels[d] for d in p_free]
    out += q_part + ["hv"] if p_is_lhs else ["hv"] + q_part
    m.v = trace_side(g, v, v_labels, False, True)
    m.output, m.out_labels = op, out
    m.chain_ops.append(op)
