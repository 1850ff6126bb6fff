"""StableHLO lowering of the attention family (`ir/ops/attention.py`), chosen per call.

`dot_product_attention` and `dot_product_attention_bwd` become cuDNN's flash attention
custom calls where `purejit.backend.cudnn_fmha.plan` allows it (CUDA, `fused_attention` on,
a shape cuDNN takes, no earlier refusal by XLA); otherwise, and for the forward-mode
`dot_product_attention_lin` always, the program JAX's XLA path writes
(`lowering/_attention_xla.py`).

A cuDNN call's output is logical [B,N,T,Hv] with layout (3, 1, 2, 0), physically BTNH, so the
transpose back to [B,T,N,Hv] moves no data (JAX's lowering does the same). Calls with
sequence lengths get a fix-up so rows outside the lengths read what the XLA path gives:
query rows past q_len are 0, a batch element with kv_len 0 attends uniformly (the mean of v),
and their statistics are those of all-masked logits; the backward zeroes d_out on those rows
before the kernel and adds the uniform rows' share to dv after it.

Each emitted cuDNN call appends its refusal key to `ctx.fmha_calls`, so a compile that XLA
refuses can be retried with just those kinds of call decomposed (`compiler/lower.py`).
"""

from __future__ import annotations

import numpy as np

from purejit.backend import cudnn_fmha
from purejit.backend.lowering._util import lowering
from purejit.backend.lowering._attention_xla import (
    _G,
    xla_backward,
    xla_forward,
    xla_tangent,
)
from purejit.backend.lowering.linalg import inline_ir, platform
from purejit.ir import TensorType
from purejit.ir.ops.attention import large_negative, split_operands

_BNTH_AS_BTNH = (3, 1, 2, 0)  # the layout of a logical [B,N,T,H] result stored as BTNH
_SWAP = "permutation = array<i64: 0, 2, 1, 3>"


def _types(op):
    return [x.type for x in op.operands]


def _mlir_string(text: str) -> str:
    return '"' + text.replace("\\", "\\5C").replace('"', "\\22") + '"'


def _layouts(types, override) -> str:
    out = []
    for i, t in enumerate(types):
        dims = override.get(i) or tuple(range(t.rank - 1, -1, -1))
        out.append(f"dense<[{', '.join(map(str, dims))}]> : tensor<{len(dims)}xindex>")
    return "[" + ", ".join(out) + "]"


def _call(ctx, target, args, arg_types, result_types, config_json, out_layouts):
    attrs = (
        f"api_version = 2 : i32, backend_config = {_mlir_string(config_json)}, "
        f'call_target_name = "{target}", '
        f"operand_layouts = {_layouts(arg_types, {})}, "
        f"result_layouts = {_layouts(result_types, out_layouts)}"
    )
    return ctx.op("stablehlo.custom_call", args, arg_types, result_types, attrs)


def _config(op, *, backward: bool) -> str:
    a = op.attrs
    q, v = op.operands[0].type, op.operands[2].type
    b, t, n, _ = q.shape
    win = cudnn_fmha.window_length(a)
    s = v.shape[1]
    return cudnn_fmha.backend_config(
        b, n, t, s, q.dtype, a["scale"], a["mask"], win, backward=backward
    )


def _emit_forward(ctx, op, args, plan) -> list[str]:
    a = op.attrs
    q, v = op.operands[0].type, op.operands[2].type
    b, t, n, _ = q.shape
    hv = v.shape[3]
    out_bnth = TensorType((b, n, t, hv), q.dtype)
    results = [out_bnth]
    if a["return_stats"]:
        results.append(TensorType((b, n, t), np.float32))
    results.append(TensorType((0,), np.uint8))
    target = cudnn_fmha.FWD_TARGETS[a["has_bias"]]
    cfg = _config(op, backward=False)
    got = _call(ctx, target, args, _types(op), results, cfg, {0: _BNTH_AS_BTNH})
    cudnn_fmha.note_call(ctx, op, plan.key)
    out = ctx.op("stablehlo.transpose", [got[0]], [out_bnth], [op.results[0].type], _SWAP)[0]
    outs = [out] + ([got[1]] if a["return_stats"] else [])
    if a["has_seq_lengths"]:
        outs = _forward_fixup(ctx, op, args, outs)
    return outs


def _emit_backward(ctx, op, args, plan) -> list[str]:
    a = op.attrs
    types = _types(op)
    q, k, v = types[:3]
    b, t, n, h = q.shape
    s, kh, hv = v.shape[1], v.shape[2], v.shape[3]
    qn, kn, vn, bias_n, ql_n, kl_n, (out_n, stats_n, dout_n) = split_operands(
        op.name, list(args), a
    )
    out_t, stats_t = types[-3], types[-2]
    if a["has_seq_lengths"]:
        dout_n = _d_out_fixup(ctx, op, args)
    operands = [qn, kn, vn, stats_n, dout_n]
    arg_types = [q, k, v, stats_t, out_t]
    if a["has_bias"]:
        operands.append(bias_n)
        arg_types.append(types[3])
    operands.append(out_n)
    arg_types.append(out_t)
    if a["has_seq_lengths"]:
        operands += [ql_n, kl_n]
        arg_types += [TensorType((b,), np.int32)] * 2
    grads = [
        TensorType((b, n, t, h), q.dtype),
        TensorType((b, kh, s, h), k.dtype),
        TensorType((b, kh, s, hv), v.dtype),
    ]
    # with a bias XLA's call also returns dbias; unused, it is dropped
    results = grads + ([types[3]] if a["has_bias"] else []) + [TensorType((0,), np.uint8)]
    target = cudnn_fmha.BWD_TARGETS[a["has_bias"]]
    layouts = dict.fromkeys(range(3), _BNTH_AS_BTNH)
    cfg = _config(op, backward=True)
    got = _call(ctx, target, operands, arg_types, results, cfg, layouts)
    cudnn_fmha.note_call(ctx, op, plan.key)
    outs = [
        ctx.op("stablehlo.transpose", [got[i]], [grads[i]], [op.results[i].type], _SWAP)[0]
        for i in range(3)
    ]
    if a["bias_grad"]:
        outs.append(got[3])
    if a["has_seq_lengths"]:
        outs = _backward_fixup(ctx, op, args, outs)
    return outs


# ---- rows outside the sequence lengths read what the XLA path gives -------------------------


def _row_masks(g: _G, op, ql, kl):
    """(pred [B,T] query rows inside q_len, pred [B,T] rows with no key: kv_len == 0)."""
    b, t = op.operands[0].type.shape[:2]
    rows = g.op("iota", shape=(b, t), dtype=np.dtype(np.int32), dimension=1)
    inside = g.cmp(rows, g.bcast(ql, (b, t), (0,)), "LT")
    empty = g.cmp(kl, g.const(0, np.int32, (b,)), "EQ")
    return inside, g.bcast(empty, (b, t), (0,))


def _v_mean(g: _G, v, n):
    """The mean of v over S in float32, per query head: [B, N, Hv] (uniform weights)."""
    b, s, kh, hv = v.type.shape
    m = g.reduce(g.convert(v, np.float32), (1,), "add")  # [B,K,Hv]
    m = g.op("divide", m, g.const(float(s), np.float32, m.type.shape))
    m = g.bcast(m, (b, kh, n // kh, hv), (0, 1, 3))
    return g.reshape(m, (b, n, hv))


def _forward_fixup(ctx, op, args, outs):
    a = op.attrs

    def build(b, out, v, ql, kl, *stats):
        g = _G(b)
        bn, t, n, hv = out.type.shape
        s = v.type.shape[1]
        inside, empty = _row_masks(g, op, ql, kl)
        shape = out.type.shape
        mean = g.bcast(g.convert(_v_mean(g, v, n), out.type.dtype), shape, (0, 2, 3))
        fixed = g.op("select", g.bcast(empty, shape, (0, 1)), mean, out)
        zero = g.const(0, out.type.dtype, shape)
        res = [g.op("select", g.bcast(inside, shape, (0, 1)), fixed, zero)]
        if stats:
            # the statistics of all-masked logits: fill + log(S)
            (st,) = stats
            valid = g.op("and", inside, g.op("not", empty))
            fill = float(np.float32(large_negative()) + np.log(np.float32(s)))
            res.append(
                g.op(
                    "select",
                    g.bcast(valid, st.type.shape, (0, 2)),
                    st,
                    g.const(fill, np.float32, st.type.shape),
                )
            )
        return res

    v_t = op.operands[2].type
    ql_n, kl_n = _lengths(op, args)
    types = [op.results[0].type, v_t] + [TensorType((v_t.shape[0],), np.int32)] * 2
    ins = [outs[0], args[2], ql_n, kl_n]
    if a["return_stats"]:
        types.append(op.results[1].type)
        ins.append(outs[1])
    return inline_ir(ctx, build, types, ins)


def _lengths(op, args):
    q, k, v, bias, ql, kl, _ = split_operands(op.name, list(args), op.attrs)
    return ql, kl


def _d_out_fixup(ctx, op, args):
    """d_out with the rows outside q_len and the rows with no key zeroed."""
    d_out_t = op.operands[-1].type

    def build(b, d_out, ql, kl):
        g = _G(b)
        inside, empty = _row_masks(g, op, ql, kl)
        keep = g.bcast(g.op("and", inside, g.op("not", empty)), d_out_t.shape, (0, 1))
        return [g.op("select", keep, d_out, g.const(0, d_out_t.dtype, d_out_t.shape))]

    ql_n, kl_n = _lengths(op, args)
    lens = [TensorType((d_out_t.shape[0],), np.int32)] * 2
    return inline_ir(ctx, build, [d_out_t, *lens], [args[-1], ql_n, kl_n])[0]


def _backward_fixup(ctx, op, args, grads):
    """The cotangents on the rows and keys outside the lengths: cuDNN leaves those unwritten
    (a batch element with kv_len 0 gets no write at all), the XLA path gives dq 0 there, dk
    and dv 0 past kv_len, and dv the uniform rows' share: the sum of their d_out / S."""
    d_out_t = op.operands[-1].type
    types = [r.type for r in op.results[:3]]

    def build(b, dq, dk, dv, d_out, ql, kl):
        g = _G(b)
        bn, t, n, hv = d_out_t.shape
        s, kh = types[2].shape[1], types[2].shape[2]
        inside, empty = _row_masks(g, op, ql, kl)
        rows_ok = g.bcast(g.op("and", inside, g.op("not", empty)), dq.type.shape, (0, 1))
        dq = g.op("select", rows_ok, dq, g.const(0, dq.type.dtype, dq.type.shape))
        cols = g.op("iota", shape=(bn, s), dtype=np.dtype(np.int32), dimension=1)
        keys_ok = g.cmp(cols, g.bcast(kl, (bn, s), (0,)), "LT")
        dk = g.op("select", g.bcast(keys_ok, dk.type.shape, (0, 1)), dk,
                  g.const(0, dk.type.dtype, dk.type.shape))  # fmt: skip
        dv = g.op("select", g.bcast(keys_ok, dv.type.shape, (0, 1)), dv,
                  g.const(0, dv.type.dtype, dv.type.shape))  # fmt: skip
        take = g.bcast(g.op("and", inside, empty), d_out_t.shape, (0, 1))
        zero = g.const(0, np.float32, d_out_t.shape)
        d = g.op("select", take, g.convert(d_out, np.float32), zero)
        d = g.reduce(g.reshape(d, (bn, t, kh, n // kh, hv)), (1, 3), "add")  # [B,K,Hv]
        d = g.op("divide", d, g.const(float(s), np.float32, d.type.shape))
        d = g.bcast(d, (bn, s, kh, hv), (0, 2, 3))
        dv = g.convert(g.op("add", g.convert(dv, np.float32), d), types[2].dtype)
        return [dq, dk, dv]

    ql_n, kl_n = _lengths(op, args)
    lens = [TensorType((d_out_t.shape[0],), np.int32)] * 2
    fixed = inline_ir(ctx, build, [*types, d_out_t, *lens], [*grads[:3], args[-1], ql_n, kl_n])
    return fixed + grads[3:]


# ---- the rules ------------------------------------------------------------------------------


@lowering("dot_product_attention")
def _attention(ctx, op, args):
    plan = cudnn_fmha.plan(ctx, op, platform(ctx), backward=False)
    if plan is not None:
        return _emit_forward(ctx, op, args, plan)
    return inline_ir(ctx, lambda b, *xs: xla_forward(b, op, *xs), _types(op), args)


@lowering("dot_product_attention_bwd")
def _attention_bwd(ctx, op, args):
    plan = cudnn_fmha.plan(ctx, op, platform(ctx), backward=True)
    if plan is not None:
        return _emit_backward(ctx, op, args, plan)
    return inline_ir(ctx, lambda b, *xs: xla_backward(b, op, *xs), _types(op), args)


@lowering("dot_product_attention_lin")
def _attention_lin(ctx, op, args):
    return inline_ir(ctx, lambda b, *xs: xla_tangent(b, op, *xs), _types(op), args)
