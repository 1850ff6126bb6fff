"""Fuse attention written by hand into one `dot_product_attention` op.

    softmax(q kᵀ · scale [+ bias] [masked causal]) v   ->   dot_product_attention(q, k, v[, bias])

Guarantees: a rewrite happens only where every fact below is proved, else the program is left
exactly as it was and the report says why.
- Structure (`_attention_match`): the softmax is purejit.nn.softmax (its `custom_jvp` rule is
  one of `trusted_rules`, which the compiler names by identity) or max-subtract / exp / sum /
  divide by hand, along the key axis of the logits; the logits and the output are
  `dot_general`s whose exact dimension numbers and the permutations on the way label every
  dimension; the logits, every value up to the output and the softmax's statistics have no
  other user and are not returned.
- Constants: the scale (on the logits, on q or on k, multiplied or divided) is a positive
  constant; a mask is a constant (its ops read no parameter) evaluated on the host, the
  conjunction of every mask equals the causal pattern s <= t, a causal sliding window or
  all true exactly, and the fill of masked logits is -inf or at most -1e3 (so masked
  weights are exactly 0 in the written program too: a causal row always keeps its
  diagonal, so no row is blank). A data-dependent mask is fused only as positions <
  sequence lengths (`_attention_padding`, whose blank rows are proved to match the op's);
  any other is refused: a blank row gives uniform weights in the written program.
- Target (options): q, k, v share one of `dtypes`, head dims are multiples of 8 and at most
  `max_head_dim`, equal unless `distinct_v_head_dim`; with a bias, T and S are even.
- The op's result is reshaped and transposed back to the written output's layout.
- A projection whose output is only sliced into q, k and v becomes one product per part
  (`split_projection`: the fused op then reads each as its matmul wrote it, with no copies).

What changes: the numbers, within flash attention's rounding (the fused kernel keeps the
probabilities in its own precision); `compiler_options={"fused_attention": False}` keeps the
written program. Never touches: a softmax whose rule is a user's, anything inside a
`custom_jvp`/`custom_vjp` region, anything inside a `call` whose callee starts with
`XLA_PATH` (`purejit.nn.dot_product_attention(implementation="xla")`, which asks for the
XLA path as JAX's does: each softmax found there is reported refused with that reason);
regions of control flow (`scan`, `while`, `case`, other calls) are rewritten like the top
level.

Why a `call` marks the XLA path: it is the one marker every transformation keeps. `jvp`,
`linearize` (a `_fwd` call of the primal and residuals, a `_lin` call of the linear part),
transposition (`_t`) and `vmap` each produce another call whose callee extends the name
(`transforms/autodiff/call.py`, `transforms/batching/call.py`), and the `inline` pass, which
runs after this one, erases it before emission, so the emitted program is the one written.
A `custom_jvp` region would not do: differentiation evaluates its rule flat, and under
`checkpoint` the forward copy of the linearized program is single-use attention again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from purejit.ir import Function, Op, Value, dtypes
from purejit.ir.ops.attention import make_attention_op
from purejit.passes._attention_match import (
    Graph,
    Match,
    Refused,
    find_softmaxes,
    host_value,
    match_at,
)
from purejit.passes._attention_padding import split_pred, zeroed_output
from purejit.passes.base import PassResult
from purejit.passes.dce import DCE
from purejit.passes import split_projection

MASK_FILL_MAX = -1e3  # exp(fill - max) is exactly 0 unless a whole row lies below fill + 88
# the callee of purejit.nn.dot_product_attention(implementation="xla")'s `call`; the calls
# transformations derive from it extend the name ("_jvp", "_fwd", "_lin", "_t")
XLA_PATH = "dot_product_attention_xla"
XLA_PATH_REASON = "implementation='xla' asks for the XLA path"


@dataclass(frozen=True)
class FuseAttention:
    """The pass; its fields are what the target's fused kernel supports.

    Attributes:
        trusted_rules: `custom_jvp` rule keys that are purejit.nn.softmax's own.
        dtypes: dtype names q, k and v may have.
        max_head_dim: the largest head dimension (256 on Hopper, 128 before).
        distinct_v_head_dim: whether v's head dim may differ from q's (cuDNN >= 9.10).
        window: whether a causal sliding window (keys t - left .. t) may be fused (cuDNN
            >= 9.2).
        split_projections: whether a projection whose output is only sliced into q, k and v
            becomes one product per part (`passes/split_projection.py`).
        split_min_flops: the smallest part's product that is split (flops).
    """

    trusted_rules: frozenset = frozenset()
    dtypes: tuple = ("bfloat16", "float16")
    max_head_dim: int = 256
    distinct_v_head_dim: bool = False
    window: bool = True
    split_projections: bool = True
    split_min_flops: float = split_projection.MIN_PART_FLOPS
    name: str = "fuse_attention"

    def __call__(self, fn: Function) -> PassResult:
        matched, refused, split = [], [], []
        out = self._rewrite(fn, matched, refused, split)
        changed = out is not fn
        if changed:
            out = DCE()(out).fn
        report = {"fused": matched, "refused": refused} if matched or refused else {}
        if split:
            report["split"] = split
        return PassResult(out, changed, report)

    def _rewrite(self, fn: Function, matched: list, refused: list, split: list) -> Function:
        ops, changed = [], False
        for op in fn.ops:  # control flow first: its regions are programs of their own
            if _xla_path(op):
                for r in op.regions:
                    _refuse_all(r, self.trusted_rules, refused)
            elif op.regions and op.has_trait("control_flow"):
                regions = [self._rewrite(r, matched, refused, split) for r in op.regions]
                new = op.rebuilt(op.operands, regions)
                changed |= new is not op
                op = new
            ops.append(op)
        if changed:
            fn = Function(fn.name, fn.params, ops, fn.results)
        fn = self._fuse(fn, matched, refused)
        if self.split_projections:
            out, entries = split_projection.split_projections(fn, self.split_min_flops)
            split += entries
            fn = out
        return fn

    def _fuse(self, fn: Function, matched: list, refused: list) -> Function:
        original = fn
        if not find_softmaxes(Graph(fn), self.trusted_rules):
            return fn  # (the common case: a program without attention costs one walk)
        # dead ops (a transpose vmap left behind) must not count as other users
        fn = DCE()(fn).fn
        g = Graph(fn)
        plans = []
        for sm in find_softmaxes(g, self.trusted_rules):
            try:
                m = match_at(g, sm)
                plans.append((m, self._prove(g, m)))
            except Refused as e:
                refused.append({"reason": str(e), "loc": sm.loc or ""})
        if not plans:
            return original
        return self._splice(fn, plans, matched)

    # ---- proofs ---------------------------------------------------------------------------

    def _prove(self, g: Graph, m: Match) -> dict:
        q, k, v = m.q, m.k, m.v
        for name, side in (("q", q), ("k", k), ("v", v)):
            dt = np.dtype(side.src.type.dtype).name
            if dt not in self.dtypes:
                raise Refused(f"{name} is {side.src.type}: the fused kernel takes {self.dtypes}")
        if not q.src.type.dtype == k.src.type.dtype == v.src.type.dtype:
            raise Refused(f"q, k, v dtypes differ: {q.src.type}, {k.src.type}, {v.src.type}")
        if m.output.results[0].type.dtype != q.src.type.dtype:
            raise Refused(f"the output is {m.output.results[0].type}, not in q's dtype")
        scale, bias, masks, lens = self._logit_steps(g, m)
        scale *= q.scale * k.scale
        if k.repeat != v.repeat:
            raise Refused("k and v repeat their heads differently")
        t_choices = list(m.q_free)
        keep = None
        for t in t_choices:
            try:
                keep = self._mask_kind(g, m, masks, t)
            except Refused:
                if t == t_choices[-1]:
                    raise
                continue
            break
        sizes = _label_sizes(m)
        g_label = next((x for x in m.q_free if x != t), None)
        layout = self._layout(m, t, g_label)
        h, hv = sizes["h"], sizes["hv"]
        for name, d in (("head dim", h), ("v head dim", hv)):
            if d % 8 or d > self.max_head_dim:
                raise Refused(f"{name} {d} must be a multiple of 8 and at most "
                              f"{self.max_head_dim}")  # fmt: skip
        if h != hv and not self.distinct_v_head_dim:
            raise Refused(f"q/k head dim {h} differs from v's {hv} (needs cuDNN >= 9.10)")
        keep, window = keep if isinstance(keep, tuple) else (keep, None)
        if keep == "causal" and sizes[t] > sizes[m.s_label]:
            raise Refused("causal with more queries than keys: the fused kernel aligns the "
                          "mask differently")  # fmt: skip
        pad = self._padding(g, m, lens, t, layout["b_grp"])
        if pad["final"] is not None:
            keep = {"none": "padding", "causal": "padding_causal"}[keep]
        dt = q.src.type.dtype
        if bias is not None and bias[0].type.dtype != dt and not _widened_from(g, bias[0], dt):
            raise Refused(f"the bias is {bias[0].type}: the fused kernel takes q's dtype")
        if bias is not None and (sizes[t] % 2 or sizes[m.s_label] % 2):
            raise Refused("a bias needs even query and key lengths for the fused backward")
        out = {"scale": scale, "bias": bias, "mask": keep, "window": window, "t": t}
        if pad["final"] is None:
            pad["final"] = (m.output, m.out_labels)
        return {**out, "g": g_label, **layout, **pad}

    def _padding(self, g: Graph, m: Match, lens: list, t: str, b_grp: list) -> dict:
        """The sequence lengths of `lens` factors, proved to mean the op's padding."""
        out = {"q_len": None, "kv_len": None, "final": None}
        for axis, src, batch in lens:
            key = {t: "q_len", m.s_label: "kv_len"}.get(axis)
            if key is None:
                raise Refused("a sequence length masks neither the query nor the key axis")
            if out[key] is not None and out[key] is not src:
                raise Refused("two different sequence lengths mask one axis")
            if b_grp != [batch]:
                raise Refused("the sequence lengths are not over the batch the op folds")
            out[key] = src
        if out["q_len"] is not None:
            final = zeroed_output(g, m, out["q_len"], t)
            if final is None:
                raise Refused(
                    "query rows past q_len keep the mean of v in the written program (the "
                    "output is not zeroed there as the fused op zeroes it)"
                )
            out["final"] = final
        elif out["kv_len"] is not None:
            out["final"] = (m.output, m.out_labels)
        return out

    def _logit_steps(self, g: Graph, m: Match):
        """Scale, bias and masks on the way from the logits to the softmax, in order."""
        scale, bias, masks, after_bias, lens = 1.0, None, [], False, []
        for st in m.steps:
            op, i = st.op, st.chain_index
            other = [x for j, x in enumerate(op.operands) if j != i]
            if op.name in ("convert", "transpose"):
                if op.name == "convert" and not dtypes.is_float(op.results[0].type.dtype):
                    raise Refused("the logits are cast to a non-float type")
                continue
            if op.name in ("multiply", "divide"):
                c = g.splat(other[0])
                if c is None or not np.isfinite(c) or c <= 0:
                    raise Refused(
                        f"the logits are scaled by {'a traced value' if c is None else c}: "
                        "the scale must be a positive constant"
                    )
                if after_bias:
                    raise Refused("a scale after the bias (the fused op scales before it)")
                scale *= c if op.name == "multiply" else 1.0 / c
                for mk in masks:
                    mk["fill"] = mk["fill"] * (c if op.name == "multiply" else 1.0 / c)
            elif op.name == "add":
                (x,) = other
                if not g.depends_on_params(x):
                    cmask = self._additive_mask(g, x, st.labels)
                    if cmask is not None:
                        masks.append(cmask)
                        continue
                if bias is not None:
                    raise Refused("two additive biases on the logits")
                bias, after_bias = (x, st.labels), True
            elif op.name == "select":
                pred, fill_v = op.operands[0], op.operands[3 - i]
                fill = g.splat(fill_v)
                if fill is None:
                    raise Refused("masked logits are filled with a traced value")
                if g.depends_on_params(pred):
                    if i != 1:
                        raise Refused("a data-dependent mask that names the blocked logits")
                    consts, found = split_pred(g, pred, st.labels)
                    lens += found
                    for c, lab in consts:
                        masks.append({"value": c, "labels": lab, "keep_if": True, "fill": fill})
                    masks.append({"array": np.ones((1,), bool), "labels": [None], "fill": fill})
                    continue
                masks.append({"value": pred, "labels": st.labels, "keep_if": i == 1,
                              "fill": fill})  # fmt: skip
        for mk in masks:
            if not (mk["fill"] == -np.inf or mk["fill"] <= MASK_FILL_MAX):
                raise Refused(f"masked logits are filled with {mk['fill']:g}, not a large "
                              "negative number or -inf")  # fmt: skip
        return scale, bias, masks, lens

    def _additive_mask(self, g: Graph, x: Value, labels: list) -> dict | None:
        arr, lab = host_value(g, x, labels)
        if arr is None:
            return None
        blocked = arr != 0
        if not np.all((arr[blocked] == -np.inf) | (arr[blocked] <= MASK_FILL_MAX)):
            return None  # a constant bias, not a mask
        return {"array": ~blocked, "labels": lab, "fill": -np.inf}

    def _mask_kind(self, g: Graph, m: Match, masks: list, t: str):
        """ "causal", "none" or ("causal", (left, 0)) (a sliding window: keys t - left to t)
        when the masks together are exactly that, on the host."""
        sizes = _label_sizes(m)
        T, S = sizes[t], sizes[m.s_label]
        keep = np.ones((T, S), bool)
        for mk in masks:
            if "array" in mk:
                arr, lab = mk["array"], mk["labels"]
            else:
                arr, lab = host_value(g, mk["value"], mk["labels"])
                if arr is None:
                    raise Refused("a constant mask is too large to check on the host")
                arr = arr if mk["keep_if"] else ~arr
            keep &= _plane(arr, lab, t, m.s_label, T, S)
        if keep.all():
            return "none"
        ti, si = np.arange(T)[:, None], np.arange(S)[None, :]  # broadcast, never T x S ints
        causal = si <= ti
        if np.array_equal(keep, causal):
            return "causal"
        if self.window and keep[causal].any():
            left = int((ti - si)[keep].max())
            if np.array_equal(keep, causal & (si >= ti - left)):
                return ("causal", (left, 0))
        raise Refused(
            "the constant mask is not the causal pattern s <= t aligned at the top left "
            "(e.g. tril(k=1) or a bottom-right aligned mask)"
        )

    def _layout(self, m: Match, t: str, g_label: str | None) -> dict:
        """Which labels fold into the op's B and N dimensions, from q's own layout."""
        q_order = [x for x in m.q.labels if x is not None]
        betas = [x for x in q_order if x.startswith("b")]
        pt = q_order.index(t)
        b_grp = [x for x in betas if q_order.index(x) < pt]
        n_grp = [x for x in betas if q_order.index(x) > pt]
        if not n_grp and b_grp:
            n_grp = [b_grp.pop()]
        if m.k.repeat is not None:
            head = m.k.repeat[0]
            if g_label is not None:
                raise Refused("heads are both repeated and reshaped to groups")
            b_grp, n_grp = [x for x in betas if x != head], [head]
        for side, name in ((m.k, "k"), (m.v, "v")):
            have = {x for x in side.labels if x is not None}
            if have != set(betas) | {m.s_label, "h" if name == "k" else "hv"}:
                raise Refused(f"{name}'s dimensions do not pair with q's")
        return {"b_grp": b_grp, "n_grp": n_grp}

    # ---- the rewrite ----------------------------------------------------------------------

    def _splice(self, fn: Function, plans: list, matched: list) -> Function:
        at = {id(p["final"][0]): (m, p) for m, p in plans}
        new_ops, subst = [], {}
        for op in fn.ops:
            if subst:
                operands = [subst.get(x, x) for x in op.operands]
                if any(a is not b for a, b in zip(operands, op.operands)):
                    op = Op(op.name, operands, op.attrs, op.results, op.regions, op.loc)
            hit = at.get(id(op))
            if hit is None:
                new_ops.append(op)
                continue
            m, p = hit
            emitted, result = _emit(m, p, subst)
            new_ops += emitted
            subst[op.results[0]] = result
            matched.append({
                "mask": p["mask"] if p["window"] is None else f"{p['mask']} window {p['window']}",
                "scale": p["scale"], "bias": p["bias"] is not None,
                "grouped": m.k.repeat is not None or p["g"] is not None,
                "loc": m.softmax.loc or op.loc or "",
            })  # fmt: skip
        results = [subst.get(r, r) for r in fn.results]
        return Function(fn.name, fn.params, new_ops, results)


# ---- helpers --------------------------------------------------------------------------------


def _xla_path(op: Op) -> bool:
    """Whether `op` is the XLA path's call (or one a transformation made of it)."""
    return op.name == "call" and str(op.attrs.get("callee", "")).startswith(XLA_PATH)


def _refuse_all(fn: Function, trusted_rules, refused: list) -> None:
    """Report every softmax of `fn` (and of its regions) as refused for the XLA path."""
    for sm in find_softmaxes(Graph(fn), trusted_rules):
        refused.append({"reason": XLA_PATH_REASON, "loc": sm.loc or ""})
    for op in fn.ops:
        if op.regions and op.has_trait("control_flow"):
            for r in op.regions:
                _refuse_all(r, trusted_rules, refused)


def _widened_from(g: Graph, v: Value, dt) -> bool:
    """Whether every value of `v` is a value of dtype `dt` (it was upcast from `dt` and only
    moved since), so converting it back to `dt` is exact (the op adds the bias in float32)."""
    op = g.defs.get(v)
    while op is not None and len(op.operands) == 1:
        x = op.operands[0]
        if op.name == "convert":
            a, b = np.dtype(x.type.dtype), np.dtype(op.results[0].type.dtype)
            if not (dtypes.is_float(a) and dtypes.is_float(b)) or a.itemsize > b.itemsize:
                return False
            if a == np.dtype(dt):
                return True
        elif not op.has_trait("shape_only"):
            return False
        op = g.defs.get(x)
    return False


def _label_sizes(m: Match) -> dict:
    sizes = {}
    for side in (m.q, m.k, m.v):
        for lab, d in zip(side.labels, side.src.type.shape):
            if lab is not None:
                sizes.setdefault(lab, d)
    for lab, d in zip(m.out_labels, m.output.results[0].type.shape):
        sizes[lab] = d
    return sizes


def _plane(arr: np.ndarray, labels: list, t: str, s: str, T: int, S: int) -> np.ndarray:
    """`arr` as a [T, S] plane; a mask that varies along any other label is refused."""
    for i, lab in enumerate(labels):
        if lab not in (t, s) and arr.shape[i] != 1:
            first = np.take(arr, [0], axis=i)
            if not np.array_equal(np.broadcast_to(first, arr.shape), arr):
                raise Refused("the constant mask differs between batch elements or heads")
    idx = [slice(None) if lab in (t, s) else 0 for lab in labels]
    sub = arr[tuple(idx)]
    kept = [lab for lab in labels if lab in (t, s)]
    if len(set(kept)) != len(kept):
        raise Refused("the mask's dimensions repeat a label")
    if kept == [s, t]:
        sub = sub.T
    elif kept == [t]:
        sub = sub[:, None]
    elif kept == [s]:
        sub = sub[None, :]
    elif not kept:
        sub = np.reshape(sub, (1, 1))
    return np.broadcast_to(sub.astype(bool), (T, S))


def _new(name: str, operands: list, attrs: dict, loc) -> Op:
    return Op.inferred(name, operands, attrs, loc=loc)


def _arrange(x: Value, labels: list, order: list, shape: tuple, loc, out: list) -> Value:
    """`x` (dimensions named by `labels`, None for size 1) transposed to `order` and
    reshaped to `shape`."""
    named = [i for i, lab in enumerate(labels) if lab is not None]
    ones = [i for i, lab in enumerate(labels) if lab is None]
    perm = [named[[labels[i] for i in named].index(lab)] for lab in order] + ones
    # size-1 dimensions move for free: only the order of the named ones needs a transpose
    if perm[: len(named)] != named:
        op = _new("transpose", [x], {"permutation": tuple(perm)}, loc)
        out.append(op)
        x = op.results[0]
    if tuple(x.type.shape) != tuple(shape):
        op = _new("reshape", [x], {"shape": tuple(shape)}, loc)
        out.append(op)
        x = op.results[0]
    return x


def _emit(m: Match, p: dict, subst: dict):
    loc = m.softmax.loc or m.output.loc
    sizes = _label_sizes(m)
    t, s, g_label = p["t"], m.s_label, p["g"]
    b_grp, n_grp = p["b_grp"], p["n_grp"]
    B = int(np.prod([sizes[x] for x in b_grp], dtype=np.int64))
    NK = int(np.prod([sizes[x] for x in n_grp], dtype=np.int64))
    G = sizes[g_label] if g_label else 1
    out: list[Op] = []

    def side(sd, seq, head, heads):
        order = b_grp + [seq] + n_grp + ([g_label] if sd is m.q and g_label else []) + [head]
        shape = (B, sizes[seq], heads, sizes[head] if head != "hv" else sizes["hv"])
        return _arrange(subst.get(sd.src, sd.src), sd.labels, order, shape, loc, out)

    kv_heads = NK // m.k.repeat[1] if m.k.repeat else NK
    if m.k.repeat:
        kv_heads = m.k.src.type.shape[m.k.labels.index(m.k.repeat[0])]
    q = side(m.q, t, "h", NK * G)
    k = side(m.k, s, "h", kv_heads)
    v = side(m.v, s, "hv", kv_heads)
    bias = None
    if p["bias"] is not None:
        bv, blab = p["bias"]
        bv = subst.get(bv, bv)
        order = b_grp + n_grp + ([g_label] if g_label else []) + [t, s]
        bias = _arrange(bv, blab, order, (B, NK * G, sizes[t], sizes[s]), loc, out)
        if bias.type.dtype != m.q.src.type.dtype:  # exact: it was upcast from q's dtype
            c = _new("convert", [bias], {"dtype": m.q.src.type.dtype}, loc)
            out.append(c)
            bias = c.results[0]
    lens = {}
    if p["mask"].startswith("padding"):
        for key, label in (("q_len", t), ("kv_len", s)):
            src = p[key]
            if src is None:  # the full length
                const = np.full((B,), sizes[label], np.int32)
                c = _new("constant", [], {"value": const}, loc)
                out.append(c)
                lens[key] = c.results[0]
            else:
                src = subst.get(src, src)
                lens[key] = _arrange(src, [None] * src.type.rank, [], (B,), loc, out)
    op = make_attention_op(
        q, k, v, scale=p["scale"], mask=p["mask"], window=p["window"], bias=bias,
        q_seq_lengths=lens.get("q_len"), kv_seq_lengths=lens.get("kv_len"), loc=loc,
    )  # fmt: skip
    out.append(op)
    r = op.results[0]
    full = b_grp + [t] + n_grp + ([g_label] if g_label else []) + ["hv"]
    shape = tuple(sizes[x] for x in full)
    if tuple(r.type.shape) != shape:
        rs = _new("reshape", [r], {"shape": shape}, loc)
        out.append(rs)
        r = rs.results[0]
    perm = tuple(full.index(x) for x in p["final"][1])
    if perm != tuple(range(len(perm))):
        tr = _new("transpose", [r], {"permutation": perm}, loc)
        out.append(tr)
        r = tr.results[0]
    return out, r
