"""The attention family (`ir/ops/attention.py`) as plain IR programs, for the lowering where
no fused kernel runs it (CPU, TPU, unsupported shapes, `fused_attention` off, a call XLA
refused before): the program JAX's XLA path writes
(`jax.nn.dot_product_attention(implementation="xla")`): float32 logits from a dot with a
float32 result, times the scale, plus the bias, masked by `select` with -0.7 · float32 max,
softmax as max / subtract / exp / sum / divide in float32, probabilities rounded to k's dtype,
a dot with v, and rows past the query length zeroed. The backward recomputes the
probabilities from the saved logsumexp (as a flash kernel does) and forms every cotangent in
float32 (float64 for float64 inputs); every dot at the op's `precision` (XLA's default without
one). `dot_product_attention_lin` (forward mode only) is always decomposed.

Shapes inside: q [B,T,N,H] is viewed as [B,T,K,G,H] (G = N / K query heads per k/v head) and
the logits as [B,K,G,T,S], so grouped-query heads never copy k or v.
"""

from __future__ import annotations

import numpy as np

from purejit.ir import Builder, TensorType
from purejit.ir.ops.attention import FWD, large_negative, split_operands


class _G:
    """A few IR ops by name on one Builder, for the decomposed programs below."""

    def __init__(self, b: Builder, precision=None):
        self.b = b
        self.precision = precision  # of every dot: the op's `precision` attribute

    def op(self, name, *xs, regions=(), **attrs):
        return self.b.op(name, list(xs), attrs, regions)[0]

    def const(self, value, dtype, shape=()):
        c = self.op("constant", value=np.array(value, np.dtype(dtype)))
        return self.bcast(c, shape, ()) if shape else c

    def bcast(self, x, shape, dims):
        shape, dims = tuple(shape), tuple(dims)
        if x.type.shape == shape and dims == tuple(range(len(shape))):
            return x
        return self.op("broadcast_in_dim", x, shape=shape, broadcast_dimensions=dims)

    def convert(self, x, dtype):
        dt = np.dtype(dtype)
        return x if x.type.dtype == dt else self.op("convert", x, dtype=dt)

    def reshape(self, x, shape):
        shape = tuple(shape)
        return x if x.type.shape == shape else self.op("reshape", x, shape=shape)

    def transpose(self, x, perm):
        perm = tuple(perm)
        return x if perm == tuple(range(len(perm))) else self.op("transpose", x, permutation=perm)

    def dot(self, x, y, lb, rb, lc, rc, out=None):
        attrs = {
            "lhs_batching_dimensions": tuple(lb),
            "rhs_batching_dimensions": tuple(rb),
            "lhs_contracting_dimensions": tuple(lc),
            "rhs_contracting_dimensions": tuple(rc),
        }
        if out is not None and np.dtype(out) != x.type.dtype:
            attrs["preferred_element_type"] = np.dtype(out)
        if self.precision is not None:
            attrs["precision"] = self.precision
        return self.op("dot_general", x, y, **attrs)

    def reduce(self, x, dims, kind):
        dt = x.type.dtype
        sb = Builder(kind)
        a, c = sb.param(TensorType((), dt)), sb.param(TensorType((), dt))
        region = sb.finish(sb.op(kind, [a, c]))
        init = -np.inf if kind == "maximum" else 0
        return self.op("reduce", x, self.const(init, dt), regions=[region], dimensions=tuple(dims))

    def keep(self, x, dims, shape):
        """A reduced `x` broadcast back over the reduced `dims` to `shape`."""
        kept = [d for d in range(len(shape)) if d not in dims]
        return self.bcast(x, shape, kept)

    def cmp(self, x, y, direction):
        return self.op("compare", x, y, comparison_direction=direction)


def _dims(op):
    q, k, v = (x.type for x in op.operands[:3])
    b, t, n, h = q.shape
    _, s, kh, hv = v.shape
    return b, t, s, n, kh, n // kh, h, hv


def _acc(dtype) -> np.dtype:
    """The logits' dtype: float32, or float64 for float64 inputs (JAX's promotion)."""
    return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)


def _allowed(g: _G, attrs, dims, ql, kl):
    """The pred mask [B or 1, 1, 1, T, S] of pairs taking part (None: every pair)."""
    b, t, s = dims[:3]
    shape = (1, 1, 1, t, s)
    rows = g.op("iota", shape=shape, dtype=np.dtype(np.int32), dimension=3)
    cols = g.op("iota", shape=shape, dtype=np.dtype(np.int32), dimension=4)
    ok = None

    def both(a, c):
        return c if a is None else g.op("and", a, c)

    if attrs["mask"] in ("causal", "padding_causal"):
        ok = both(ok, g.cmp(cols, rows, "LE"))
    if attrs["window"] is not None:
        left, right = attrs["window"]
        lc = g.op("add", cols, g.const(left, np.int32, shape))
        rc = g.op("subtract", cols, g.const(right, np.int32, shape))
        ok = both(ok, g.op("and", g.cmp(rows, lc, "LE"), g.cmp(rows, rc, "GE")))
    if ql is not None:
        full = (b, 1, 1, t, s)
        qm = g.cmp(g.bcast(rows, full, range(5)), g.bcast(ql, full, (0,)), "LT")
        km = g.cmp(g.bcast(cols, full, range(5)), g.bcast(kl, full, (0,)), "LT")
        pad = g.op("and", qm, km)
        ok = pad if ok is None else g.op("and", g.bcast(ok, full, range(5)), pad)
    return ok


def _rows(g: _G, dims, ql):
    """pred [B, T]: the query rows inside the query length."""
    b, t = dims[:2]
    rows = g.op("iota", shape=(b, t), dtype=np.dtype(np.int32), dimension=1)
    return g.cmp(rows, g.bcast(ql, (b, t), (0,)), "LT")


def _logits(g: _G, attrs, dims, q, k, bias, ql, kl):
    """(masked logits [B,K,G,T,S] in the accumulation dtype, the mask or None)."""
    b, t, s, n, kh, gq, h, hv = dims
    acc = _acc(q.type.dtype)
    q5 = g.reshape(q, (b, t, kh, gq, h))
    x = g.dot(q5, k, (0, 2), (0, 2), (4,), (3,), out=acc)  # [B,K,T,G,S]
    x = g.transpose(x, (0, 1, 3, 2, 4))
    shape = x.type.shape
    x = g.op("multiply", x, g.const(attrs["scale"], acc, shape))
    if bias is not None:
        bb, bn = bias.type.shape[:2]
        bz = g.convert(bias, acc)
        if bn == n:
            bz = g.reshape(bz, (bb, kh, gq, t, s))
            bz = g.bcast(bz, shape, range(5))
        else:
            bz = g.bcast(g.reshape(bz, (bb, t, s)), shape, (0, 3, 4))
        x = g.op("add", x, bz)
    ok = None
    if attrs["mask"] != "none" or attrs["window"] is not None:
        ok = g.bcast(_allowed(g, attrs, dims, ql, kl), shape, range(5))
        x = g.op("select", ok, x, g.const(large_negative(), acc, shape))
    return x, ok


def _softmax(g: _G, x):
    """(probabilities, logsumexp [B,K,G,T]) in float32 (float64 for float64 logits)."""
    shape = x.type.shape
    x = g.convert(x, np.float64 if x.type.dtype == np.float64 else np.float32)
    m = g.reduce(x, (4,), "maximum")
    e = g.op("exponential", g.op("subtract", x, g.keep(m, (4,), shape)))
    z = g.reduce(e, (4,), "add")
    p = g.op("divide", e, g.keep(z, (4,), shape))
    return p, g.op("add", m, g.op("log", z))


def _zero_rows(g: _G, x, rows):
    """`x` [B,T,N,H] with the rows outside the query length multiplied by 0 (JAX's)."""
    m = g.bcast(g.convert(rows, x.type.dtype), x.type.shape, (0, 1))
    return g.op("multiply", x, m)


def xla_forward(b: Builder, op, *args):
    """The decomposed forward: [out] or [out, stats]."""
    g, a = _G(b, op.attrs.get("precision")), op.attrs
    q, k, v, bias, ql, kl, _ = split_operands(FWD, list(args), a)
    dims = _dims(op)
    bn, t, s, n, kh, gq, h, hv = dims
    x, _ = _logits(g, a, dims, q, k, bias, ql, kl)
    p, lse = _softmax(g, x)
    pv = g.dot(g.convert(p, k.type.dtype), v, (0, 1), (0, 2), (4,), (1,))  # [B,K,G,T,Hv]
    out = g.reshape(g.transpose(pv, (0, 3, 1, 2, 4)), (bn, t, n, hv))
    if ql is not None:
        out = _zero_rows(g, out, _rows(g, dims, ql))
    if not a["return_stats"]:
        return [out]
    return [out, g.convert(g.reshape(lse, (bn, n, t)), np.float32)]


def _recomputed(g: _G, a, dims, q, k, bias, ql, kl, stats):
    """(probabilities [B,K,G,T,S], mask or None) in the accumulation dtype: from the saved
    logsumexp, or (`stats` None) by the softmax again, which differentiates in q and k."""
    bn, t, s, n, kh, gq, h, hv = dims
    x, ok = _logits(g, a, dims, q, k, bias, ql, kl)
    if stats is None:
        p, _ = _softmax(g, x)
        return g.convert(p, x.type.dtype), ok
    lse = g.convert(g.reshape(stats, (bn, kh, gq, t)), x.type.dtype)
    shape = x.type.shape
    p = g.op("exponential", g.op("subtract", x, g.keep(lse, (4,), shape)))
    if ok is not None:
        # a row with no key: fill + log(S) rounds to the fill, so exp(x - lse) would read 1;
        # the forward gave it uniform weights 1/S
        some = g.reduce(g.convert(ok, x.type.dtype), (4,), "maximum")
        some = g.cmp(g.keep(some, (4,), shape), g.const(0, x.type.dtype, shape), "GT")
        p = g.op("select", some, p, g.const(1.0 / s, x.type.dtype, shape))
    return p, ok


def _mask_grad(g: _G, ds, ok):
    # logits replaced by the fill have no derivative
    return ds if ok is None else g.op("select", ok, ds, g.const(0, ds.type.dtype, ds.type.shape))


def _softmax_grad(g: _G, p, dp):
    """p * (dp - sum_s p * dp): the logits' cotangent (or tangent) from the probabilities'."""
    shape = p.type.shape
    d = g.reduce(g.op("multiply", p, dp), (4,), "add")
    return g.op("multiply", p, g.op("subtract", dp, g.keep(d, (4,), shape)))


def xla_backward(b: Builder, op, *args, recompute: bool = False):
    """The decomposed backward: [dq, dk, dv(, dbias)]; with `recompute` the probabilities
    come from the logits, not the saved statistics (for differentiating the backward: the
    statistics have no tangent)."""
    g, a = _G(b, op.attrs.get("precision")), op.attrs
    q, k, v, bias, ql, kl, rest = split_operands(FWD, list(args), a)
    stats, d_out = (None if recompute else rest[1]), rest[2]
    dims = _dims(op)
    bn, t, s, n, kh, gq, h, hv = dims
    acc = _acc(q.type.dtype)
    p, ok = _recomputed(g, a, dims, q, k, bias, ql, kl, stats)
    do = g.convert(d_out, acc)
    if ql is not None:
        do = _zero_rows(g, do, _rows(g, dims, ql))
    do5 = g.reshape(do, (bn, t, kh, gq, hv))
    vf, kf, qf = g.convert(v, acc), g.convert(k, acc), g.convert(q, acc)
    dv = g.dot(p, do5, (0, 1, 2), (0, 2, 3), (3,), (1,))  # [B,K,G,S,Hv]
    dv = g.transpose(g.reduce(dv, (2,), "add"), (0, 2, 1, 3))
    dp = g.transpose(g.dot(do5, vf, (0, 2), (0, 2), (4,), (3,)), (0, 1, 3, 2, 4))
    ds = _mask_grad(g, _softmax_grad(g, p, dp), ok)
    res = []
    if a["bias_grad"]:
        # the logits' cotangent [B,N,T,S] summed over the dimensions the bias broadcasts
        db = g.reshape(ds, (bn, n, t, s))
        summed = [d for d, (x, y) in enumerate(zip(bias.type.shape, (bn, n, t, s))) if x != y]
        if summed:
            db = g.reduce(db, summed, "add")
        res = [g.reshape(g.convert(db, bias.type.dtype), bias.type.shape)]
    ds = g.op("multiply", ds, g.const(a["scale"], acc, ds.type.shape))
    dq = g.dot(ds, kf, (0, 1), (0, 2), (4,), (1,))  # [B,K,G,T,H]
    dq = g.reshape(g.transpose(dq, (0, 3, 1, 2, 4)), (bn, t, n, h))
    q5 = g.reshape(qf, (bn, t, kh, gq, h))
    dk = g.dot(ds, q5, (0, 1, 2), (0, 2, 3), (3,), (1,))  # [B,K,G,S,H]
    dk = g.transpose(g.reduce(dk, (2,), "add"), (0, 2, 1, 3))
    grads = [g.convert(dq, q.type.dtype), g.convert(dk, k.type.dtype), g.convert(dv, v.type.dtype)]
    return grads + res


def xla_tangent(b: Builder, op, *args, recompute: bool = False):
    """The decomposed forward-mode tangent of the output (`recompute` as `xla_backward`)."""
    g, a = _G(b, op.attrs.get("precision")), op.attrs
    q, k, v, bias, ql, kl, rest = split_operands(FWD, list(args), a)
    stats, tq, tk, tv = (None if recompute else rest[1]), rest[2], rest[3], rest[4]
    dims = _dims(op)
    bn, t, s, n, kh, gq, h, hv = dims
    acc = _acc(q.type.dtype)
    p, ok = _recomputed(g, a, dims, q, k, bias, ql, kl, stats)
    q5 = g.reshape(g.convert(q, acc), (bn, t, kh, gq, h))
    tq5 = g.reshape(g.convert(tq, acc), (bn, t, kh, gq, h))
    ds = g.op(
        "add",
        g.dot(tq5, g.convert(k, acc), (0, 2), (0, 2), (4,), (3,)),
        g.dot(q5, g.convert(tk, acc), (0, 2), (0, 2), (4,), (3,)),
    )
    ds = g.transpose(ds, (0, 1, 3, 2, 4))
    ds = g.op("multiply", ds, g.const(a["scale"], acc, ds.type.shape))
    if a["bias_tangent"]:
        ds = g.op("add", ds, _bias5(g, g.convert(rest[5], acc), dims))
    ds = _mask_grad(g, ds, ok)
    dp = _softmax_grad(g, p, ds)
    out = g.op(
        "add",
        g.dot(dp, g.convert(v, acc), (0, 1), (0, 2), (4,), (1,)),
        g.dot(p, g.convert(tv, acc), (0, 1), (0, 2), (4,), (1,)),
    )
    out = g.reshape(g.transpose(out, (0, 3, 1, 2, 4)), (bn, t, n, hv))
    if ql is not None:
        out = _zero_rows(g, out, _rows(g, dims, ql))
    return [g.convert(out, q.type.dtype)]


def _bias5(g: _G, bias, dims):
    bn, t, s, n, kh, gq, h, hv = dims
    bb, bnh = bias.type.shape[:2]
    shape = (bn, kh, gq, t, s)
    if bnh == n:
        return g.bcast(g.reshape(bias, (bb, kh, gq, t, s)), shape, range(5))
    return g.bcast(g.reshape(bias, (bb, t, s)), shape, (0, 3, 4))
