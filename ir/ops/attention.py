"""Fused scaled dot-product attention: one op for softmax(q kᵀ · scale + bias, masked) v.

dot_product_attention(q, k, v[, bias][, q_seq_lengths, kv_seq_lengths])
        {scale, mask, window, has_bias, has_seq_lengths, return_stats[, precision]}
    q: [B, T, N, H], k: [B, S, K, H], v: [B, S, K, Hv] (BTNH), one floating dtype; N a
    multiple of K (grouped-query heads: q head n reads k/v head n // (N / K)). `bias` (when
    `has_bias`) has rank 4 and broadcasts to [B, N, T, S] (each dimension 1 or full), any
    floating dtype. `q_seq_lengths` and `kv_seq_lengths` (when `has_seq_lengths`, both
    present) are int32 [B]. `scale` is a float, `mask` one of MASKS ("padding" kinds if and
    only if `has_seq_lengths`), `window` None or (left, right) ints >= 0. Results: the output
    [B, T, N, Hv] in q's dtype; with `return_stats` also the softmax statistics
    logsumexp(logits) along S, float32 [B, N, T] (what the fused backward needs).
    `precision` (optional, a pair of StableHLO precision names as on `dot_general`) is the
    precision of every dot where the op runs decomposed: the `default_matmul_precision` in
    force where it was traced (JAX's XLA path reads it there too); a fused kernel ignores it.

    The meaning is JAX's XLA path (`jax.nn.dot_product_attention(implementation="xla")`),
    so a program gives the same answer whichever kernel runs it:
        logits = (q kᵀ in float32) * scale (+ bias, in float32)
        allowed = causal (s <= t) ∧ window (t - left <= s <= t + right)
                  ∧ padding (t < q_len[b] ∧ s < kv_len[b])
        logits = where(allowed, logits, -0.7 · float32 max)
        out = (softmax(logits) in float32, cast to k's dtype) @ v, rows t >= q_len[b] zeroed.
    A row with no allowed key gets uniform weights (the mean of v), as the XLA path does.

dot_product_attention_lin(q, k, v[, bias][, lens...], out, stats, tq, tk, tv[, tbias])
        {same attributes, bias_tangent}
    The tangent of the output: linear in tq, tk, tv (and tbias when `bias_tangent`), the other
    operands its residuals. It lives in linear programs; its transpose is the fused backward.

dot_product_attention_bwd(q, k, v[, bias][, lens...], out, stats, d_out)
        {same attributes, bias_grad}
    The cotangents of q, k, v (and of bias when `bias_grad`, in bias's shape and dtype) given
    the forward's output, its statistics and the output's cotangent: cuDNN's flash backward.

Builders: `attention_op(builder, q, k, v, *, scale, mask, ...)` appends the op to an
`ir.Builder`; `make_attention_op(q, k, v, *, ...)` returns a new `Op` (fresh result values)
for a pass to splice into a program; `attention_attrs(...)` checks and returns the attributes.
"""

from __future__ import annotations

import numpy as np

from purejit.ir import dtypes
from purejit.ir.core import Op, TensorType, Value
from purejit.ir.ops.conv import PRECISIONS
from purejit.ir.registry import OpDef, fail, register

MASKS = ("none", "causal", "padding", "padding_causal")
ATTRS = ("scale", "mask", "window", "has_bias", "has_seq_lengths", "return_stats")
LIN_ATTRS = (*ATTRS, "bias_tangent")
BWD_ATTRS = (*ATTRS, "bias_grad")
FWD, LIN, BWD = "dot_product_attention", "dot_product_attention_lin", "dot_product_attention_bwd"


def large_negative() -> float:
    """The fill of masked logits: -0.7 · float32 max (JAX's, in the float32 logits)."""
    return float(np.float32(-0.7) * np.finfo(np.float32).max)


def attention_attrs(
    *,
    scale: float,
    mask: str = "none",
    window=None,
    has_bias: bool = False,
    has_seq_lengths: bool = False,
    return_stats: bool = False,
    precision=None,
) -> dict:
    """The op's attributes, checked; raises ValueError naming the bad one. `precision` is
    left out of them when None (XLA's default)."""
    if not isinstance(scale, (int, float, np.floating)) or isinstance(scale, bool):
        raise ValueError(f"{FWD}: scale must be a Python float, got {scale!r}")
    if mask not in MASKS:
        raise ValueError(f"{FWD}: mask={mask!r} must be one of {list(MASKS)}")
    if window is not None:
        ok = isinstance(window, (tuple, list)) and len(window) == 2
        if not ok or not all(isinstance(w, (int, np.integer)) and w >= 0 for w in window):
            raise ValueError(f"{FWD}: window={window!r} must be None or (left, right) ints >= 0")
        window = (int(window[0]), int(window[1]))
    if bool(has_seq_lengths) != mask.startswith("padding"):
        raise ValueError(
            f"{FWD}: mask={mask!r} with has_seq_lengths={has_seq_lengths}: the padding masks "
            "and only they take q_seq_lengths and kv_seq_lengths"
        )
    attrs = {
        "scale": float(scale),
        "mask": mask,
        "window": window,
        "has_bias": bool(has_bias),
        "has_seq_lengths": bool(has_seq_lengths),
        "return_stats": bool(return_stats),
    }
    if precision is not None:
        ok = isinstance(precision, (tuple, list)) and len(precision) == 2
        if not ok or any(p not in PRECISIONS for p in precision):
            raise ValueError(
                f"{FWD}: precision={precision!r} must be None or a pair of {list(PRECISIONS)}"
            )
        attrs["precision"] = tuple(precision)
    return attrs


def attention_operands(q, k, v, bias=None, q_seq_lengths=None, kv_seq_lengths=None) -> list:
    """The operand list in the op's order (absent optional operands left out)."""
    if (q_seq_lengths is None) != (kv_seq_lengths is None):
        raise ValueError(
            f"{FWD}: give both q_seq_lengths and kv_seq_lengths or neither (a missing one is "
            "the full length: fill it before building the op)"
        )
    ops = [q, k, v]
    if bias is not None:
        ops.append(bias)
    if q_seq_lengths is not None:
        ops += [q_seq_lengths, kv_seq_lengths]
    return ops


def make_attention_op(
    q: Value,
    k: Value,
    v: Value,
    *,
    scale: float,
    mask: str = "none",
    window=None,
    bias: Value | None = None,
    q_seq_lengths: Value | None = None,
    kv_seq_lengths: Value | None = None,
    return_stats: bool = False,
    loc: str | None = None,
) -> Op:
    """A new `dot_product_attention` op with fresh result values (type-checked)."""
    attrs = attention_attrs(
        scale=scale,
        mask=mask,
        window=window,
        has_bias=bias is not None,
        has_seq_lengths=q_seq_lengths is not None,
        return_stats=return_stats,
    )
    operands = attention_operands(q, k, v, bias, q_seq_lengths, kv_seq_lengths)
    types = _fwd_infer([x.type for x in operands], attrs, [])
    return Op(FWD, operands, attrs, [Value(t) for t in types], (), loc)


def attention_op(builder, q, k, v, **kwargs) -> list[Value]:
    """Append a `dot_product_attention` op to `builder` (an `ir.Builder`); returns its results
    ([out] or [out, stats]). Keywords as `make_attention_op`."""
    op = make_attention_op(q, k, v, **kwargs)
    builder.ops.append(op)
    return list(op.results)


# ---- type rules -----------------------------------------------------------------------------


def _need(op, attrs, names):
    missing = [n for n in names if n not in attrs]
    if missing:
        fail(op, f"missing attributes {', '.join(missing)}")
    try:
        checked = attention_attrs(**{n: attrs[n] for n in ATTRS}, precision=attrs.get("precision"))
    except ValueError as e:
        fail(op, str(e).split(": ", 1)[1])
    return checked


def split_operands(op: str, items, attrs) -> tuple:
    """(q, k, v, bias or None, q_lens or None, kv_lens or None, rest) of an operand list."""
    n = 3 + attrs["has_bias"] + 2 * attrs["has_seq_lengths"]
    if len(items) < n:
        fail(op, f"expects at least {n} operands for its attributes, got {len(items)}")
    q, k, v = items[:3]
    i = 3
    bias = None
    if attrs["has_bias"]:
        bias, i = items[3], 4
    ql = kl = None
    if attrs["has_seq_lengths"]:
        ql, kl, i = items[i], items[i + 1], i + 2
    return q, k, v, bias, ql, kl, list(items[n:])


def check_types(op: str, types, attrs) -> tuple:
    """Check the primal operands; returns (dims (B, T, S, N, K, H, Hv), rest of types)."""
    q, k, v, bias, ql, kl, rest = split_operands(op, types, attrs)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.rank != 4:
            fail(op, f"{name} {t} must have rank 4 (BTNH)")
    if not (q.dtype == k.dtype == v.dtype) or not dtypes.is_float(q.dtype):
        fail(op, f"q, k, v must share one floating dtype: {q}, {k}, {v}")
    (b, t, n, h), (bk, s, nk, hk), (bv, sv, nv, hv) = q.shape, k.shape, v.shape
    if not (b == bk == bv) or s != sv or nk != nv or h != hk:
        fail(op, f"q {q}, k {k}, v {v} must be [B,T,N,H], [B,S,K,H], [B,S,K,Hv]")
    if nk == 0 or n % nk:
        fail(op, f"q heads {n} must be a multiple of k/v heads {nk}")
    if bias is not None:
        want = (b, n, t, s)
        if bias.rank != 4 or any(d not in (1, w) for d, w in zip(bias.shape, want)):
            fail(op, f"bias {bias} must have rank 4 and broadcast to [{b},{n},{t},{s}]")
        if not dtypes.is_float(bias.dtype):
            fail(op, f"bias {bias} must be floating")
    for name, ln in (("q_seq_lengths", ql), ("kv_seq_lengths", kl)):
        if ln is not None and (ln.shape != (b,) or ln.dtype != np.int32):
            fail(op, f"{name} {ln} must be s32[{b}]")
    return (b, t, s, n, nk, h, hv), rest


def _fwd_infer(types, attrs, regions):
    attrs = _need(FWD, attrs, ATTRS)
    (b, t, s, n, nk, h, hv), rest = check_types(FWD, types, attrs)
    if rest:
        fail(FWD, f"{len(rest)} operands too many")
    out = [TensorType((b, t, n, hv), types[0].dtype)]
    if attrs["return_stats"]:
        out.append(TensorType((b, n, t), np.float32))
    return out


def _residuals(op, types, attrs, rest, extra: int):
    (b, t, s, n, nk, h, hv), _ = check_types(op, types, attrs)
    q = types[0]
    out_t, stats_t = TensorType((b, t, n, hv), q.dtype), TensorType((b, n, t), np.float32)
    if len(rest) < 2 + extra or rest[0] != out_t or rest[1] != stats_t:
        fail(op, f"needs out {out_t} and stats {stats_t} after the primal operands")
    return out_t


def _lin_infer(types, attrs, regions):
    base = _need(LIN, attrs, LIN_ATTRS)
    _, rest = check_types(LIN, types, base)
    nt = 3 + bool(attrs["bias_tangent"])
    if attrs["bias_tangent"] and not base["has_bias"]:
        fail(LIN, "bias_tangent without a bias")
    out_t = _residuals(LIN, types, base, rest, nt)
    prim = split_operands(LIN, types, base)
    want = [prim[0], prim[1], prim[2]] + ([prim[3]] if attrs["bias_tangent"] else [])
    if rest[2:] != want:
        fail(LIN, f"tangents {rest[2:]} must match the primals {want}")
    return [out_t]


def _bwd_infer(types, attrs, regions):
    base = _need(BWD, attrs, BWD_ATTRS)
    _, rest = check_types(BWD, types, base)
    if attrs["bias_grad"] and not base["has_bias"]:
        fail(BWD, "bias_grad without a bias")
    out_t = _residuals(BWD, types, base, rest, 1)
    if rest[2:] != [out_t]:
        fail(BWD, f"d_out must be {out_t}, got {rest[2:]}")
    q, k, v, bias = split_operands(BWD, types, base)[:4]
    return [q, k, v] + ([bias] if attrs["bias_grad"] else [])


# ---- NumPy reference (JAX's XLA path, float32 math for float32 and narrower, else float64) ---


def _allowed(attrs, b, t, s, ql, kl) -> np.ndarray:
    """The boolean mask [B, 1, T, S] of (query, key) pairs that take part."""
    ti, si = np.arange(t)[:, None], np.arange(s)[None, :]
    ok = np.ones((t, s), bool)
    if attrs["mask"] in ("causal", "padding_causal"):
        ok &= si <= ti
    if attrs["window"] is not None:
        left, right = attrs["window"]
        ok &= (ti <= si + left) & (ti >= si - right)
    ok = np.broadcast_to(ok, (b, 1, t, s))
    if ql is not None:
        qm = np.arange(t)[None, :, None] < np.asarray(ql)[:, None, None]
        km = np.arange(s)[None, None, :] < np.asarray(kl)[:, None, None]
        ok = ok & (qm & km)[:, None]
    return ok


def _expand_kv(x, n):
    """k or v [B, S, K, H] repeated to [B, S, N, H] (q head n reads kv head n // (N/K))."""
    return np.repeat(x, n // x.shape[2], axis=2)


def _math_dtype(dt):
    return np.float64 if np.dtype(dt) == np.float64 else np.float32


def probabilities(args, attrs, acc=None):
    """(logits after masking [B,N,T,S], probabilities, logsumexp [B,N,T], q-row mask [B,T])."""
    q, k, v, bias, ql, kl, _ = split_operands(FWD, list(args), attrs)
    acc = acc or _math_dtype(q.dtype)
    b, t, n, _ = q.shape
    s = k.shape[1]
    kk = _expand_kv(np.asarray(k, acc), n)
    logits = np.einsum("btnh,bsnh->bnts", np.asarray(q, acc), kk) * acc(attrs["scale"])
    if bias is not None:
        logits = logits + np.asarray(bias, acc)
    allowed = _allowed(attrs, b, t, s, ql, kl)
    if attrs["mask"] != "none" or attrs["window"] is not None:
        logits = np.where(allowed, logits, acc(large_negative()))
    m = logits.max(-1, keepdims=True)
    e = np.exp(logits - m)
    z = e.sum(-1, keepdims=True)
    p = e / z
    lse = (m + np.log(z))[..., 0]
    rows = np.ones((b, t), bool) if ql is None else np.arange(t)[None] < np.asarray(ql)[:, None]
    return logits, p, lse, rows


def attention_reference(args, attrs, acc=None):
    """[out, (stats)] as JAX's XLA path computes them; `acc` picks the math dtype."""
    q, k, v = args[:3]
    acc = acc or _math_dtype(q.dtype)
    _, p, lse, rows = probabilities(args, attrs, acc)
    p = p.astype(k.dtype).astype(acc)  # the probabilities are rounded to k's dtype
    vv = _expand_kv(np.asarray(v, acc), q.shape[2])
    out = np.einsum("bnts,bsnh->btnh", p, vv) * rows[:, :, None, None]
    res = [out.astype(q.dtype)]
    if attrs.get("return_stats"):
        res.append(lse.astype(np.float32))
    return res


def _reduce_kv(x, k_heads):
    """[B, S, N, H] summed over each group of q heads to [B, S, K, H]."""
    b, s, n, h = x.shape
    return x.reshape(b, s, k_heads, n // k_heads, h).sum(3)


def _unbroadcast(x, shape):
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and x.shape[i] != 1)
    return x.sum(axes, keepdims=True) if axes else x


def attention_grads(args, attrs, d_out, acc=None):
    """(dq, dk, dv, dbias) of the XLA-path attention given the output's cotangent."""
    q, k, v, bias, ql, kl, _ = split_operands(FWD, list(args), attrs)
    acc = acc or _math_dtype(q.dtype)
    n, nk = q.shape[2], k.shape[2]
    logits, p, _, rows = probabilities(args, attrs, acc)
    do = np.asarray(d_out, acc) * rows[:, :, None, None]
    vv = _expand_kv(np.asarray(v, acc), n)
    kk = _expand_kv(np.asarray(k, acc), n)
    dv = _reduce_kv(np.einsum("bnts,btnh->bsnh", p, do), nk)
    dp = np.einsum("btnh,bsnh->bnts", do, vv)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    if attrs["mask"] != "none" or attrs["window"] is not None:
        b, t, s = q.shape[0], q.shape[1], k.shape[1]
        ds = np.where(_allowed(attrs, b, t, s, ql, kl), ds, 0)
    dbias = None if bias is None else _unbroadcast(ds, bias.shape)
    ds = ds * acc(attrs["scale"])
    dq = np.einsum("bnts,bsnh->btnh", ds, kk)
    dk = _reduce_kv(np.einsum("bnts,btnh->bsnh", ds, np.asarray(q, acc)), nk)
    return dq, dk, dv, dbias


def attention_flops(op) -> int:
    """Multiply-adds x 2 of the family's matmuls (a causal mask counts half the T x S pairs):
    forward q kᵀ and p v; backward those again and three more (dv, dp, dq, dk)."""
    q, v = op.operands[0].type, op.operands[2].type
    b, t, n, h = q.shape
    s, hv = v.shape[1], v.shape[3]
    pairs = b * n * t * s * (0.5 if op.attrs["mask"] in ("causal", "padding_causal") else 1)
    per_pair = {FWD: h + hv, LIN: 2 * (h + hv), BWD: 2 * h + 2 * hv + h}[op.name]
    return int(2 * pairs * per_pair)


def _fwd_ref(args, attrs, regions, run):
    return attention_reference(args, attrs)


def _lin_ref(args, attrs, regions, run):
    q, k, v, bias, ql, kl, rest = split_operands(LIN, list(args), attrs)
    acc = _math_dtype(q.dtype)
    n = q.shape[2]
    tq, tk, tv = (np.asarray(x, acc) for x in rest[2:5])
    _, p, _, rows = probabilities(args, attrs, acc)
    ds = np.einsum("btnh,bsnh->bnts", tq, _expand_kv(np.asarray(k, acc), n))
    ds = ds + np.einsum("btnh,bsnh->bnts", np.asarray(q, acc), _expand_kv(tk, n))
    ds = ds * acc(attrs["scale"])
    if attrs["bias_tangent"]:
        ds = ds + np.asarray(rest[5], acc)
    if attrs["mask"] != "none" or attrs["window"] is not None:
        b, t, s = q.shape[0], q.shape[1], k.shape[1]
        ds = np.where(_allowed(attrs, b, t, s, ql, kl), ds, 0)
    dp = p * (ds - (p * ds).sum(-1, keepdims=True))
    vv = np.asarray(_expand_kv(np.asarray(v, acc), n))
    out = np.einsum("bnts,bsnh->btnh", dp, vv)
    out = out + np.einsum("bnts,bsnh->btnh", p, _expand_kv(tv, n))
    return [(out * rows[:, :, None, None]).astype(q.dtype)]


def _bwd_ref(args, attrs, regions, run):
    q, k, v, bias, ql, kl, rest = split_operands(BWD, list(args), attrs)
    dq, dk, dv, dbias = attention_grads(args, attrs, rest[2])
    res = [dq.astype(q.dtype), dk.astype(k.dtype), dv.astype(v.dtype)]
    if attrs["bias_grad"]:
        res.append(dbias.astype(bias.dtype))
    return res


_DOC = "dot_product_attention(q, k, v[, bias][, q_lens, kv_lens]) {scale, mask, window, ...}"
register(
    OpDef(
        FWD,
        _fwd_infer,
        _fwd_ref,
        frozenset({"pure", "saved"}),
        attrs=(*ATTRS, "precision"),
        doc=_DOC,
    )
)
register(
    OpDef(
        LIN,
        _lin_infer,
        _lin_ref,
        frozenset({"pure"}),
        attrs=(*LIN_ATTRS, "precision"),
        doc="dot_product_attention_lin(primals..., out, stats, tangents...): the output's "
        "tangent, linear in the tangents",
    )
)
register(
    OpDef(
        BWD,
        _bwd_infer,
        _bwd_ref,
        frozenset({"pure"}),
        attrs=(*BWD_ATTRS, "precision"),
        doc="dot_product_attention_bwd(primals..., out, stats, d_out) -> dq, dk, dv[, dbias]",
    )
)
