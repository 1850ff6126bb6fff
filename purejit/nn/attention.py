"""`purejit.nn.dot_product_attention`: jax.nn's signature, one fused op where it can run.

`implementation=None` (the default) binds the `dot_product_attention` op
(`ir/ops/attention.py`): on an NVIDIA GPU where cuDNN's flash attention takes the call it
runs as cuDNN's forward and backward kernels (the T×S probabilities never reach memory); on
CPU, TPU, in unsupported cases or with `fused_attention` off (compiler option or
`purejit.config`), it runs as the program JAX's XLA path writes. `"xla"` writes that program
here, op by op, as `jax.nn.dot_product_attention(implementation="xla")` does, and it is never
fused: where the attention rewrite could run, the ops go in one `call` the rewrite refuses
(`_xla_call`); `"cudnn"` binds the op after JAX's checks, raising JAX's errors when cuDNN
cannot run the call.

Fusion changes result bits (online softmax, probabilities rounded inside the kernel): within
JAX's tolerances of the XLA path (1e-2 in bf16/f16, 2e-2 with masks), bit-identical to
`jax.nn.dot_product_attention(implementation="cudnn")`. An explicit boolean `mask` becomes an
additive bias as in JAX's cuDNN path (0 or a large negative number); a row the mask blanks
entirely then gets nearly, not exactly, uniform weights. Sequence lengths, causal masks and
windows keep the XLA path's meaning exactly. Where the op runs decomposed its dots take the
`default_matmul_precision` in force here, as JAX's XLA path does (on a GPU XLA's default
for float32 is TF32).
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit import numpy as jnp
from purejit.backend import cudnn_fmha, pjrt
from purejit.fused_attention import rewrite_may_run
from purejit.ir import TensorType
from purejit.ir.ops.attention import attention_attrs, large_negative
from purejit.lax import DotAlgorithmPreset, stop_gradient
from purejit.lax._precision import canonical_precision
from purejit.passes.fuse_attention import XLA_PATH
from purejit.tracing import aval_of, bind, trace_to_function

__all__ = ["dot_product_attention"]

_IMPLEMENTATIONS = (None, "xla", "cudnn")


def dot_product_attention(
    query,
    key,
    value,
    bias=None,
    mask=None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    query_seq_lengths=None,
    key_value_seq_lengths=None,
    local_window_size: int | tuple[int, int] | None = None,
    implementation: str | None = None,
    return_residual: bool = False,
):
    """Scaled dot-product attention: softmax(q kᵀ · scale + bias, masked) v per head.

    Args:
        query: [B, T, N, H] or [T, N, H].
        key, value: [B, S, K, H] or [S, K, H]; N a multiple of K (grouped-query heads).
        bias: optional, rank 4 (or 3 with the 3-D inputs), broadcastable to [B, N, T, S].
        mask: optional boolean, broadcastable to [B, N, T, S]; True takes part.
        scale: the logits' scale, 1 / sqrt(H) by default.
        is_causal: key s takes part for query t only if s <= t.
        query_seq_lengths, key_value_seq_lengths: optional int32 [B]: positions at or past
            them are padding (query rows past the length give 0).
        local_window_size: (left, right) or an int for both: key s takes part for query t
            only if t - left <= s <= t + right.
        implementation: None (the fused op; the XLA-path program where no fused kernel
            runs), "xla" or "cudnn" (as JAX).
        return_residual: also return the logsumexp of the logits, [B, T, N] (or [T, N]).
    Returns:
        The output, the shape of `query` (with the residual when `return_residual`).
    """
    if implementation not in _IMPLEMENTATIONS:
        raise ValueError(f"Unsupported implementation option: {implementation}")
    q = jnp.asarray(query)
    out_shape = q.shape
    q, k, v = _4d(q), _4d(jnp.asarray(key)), _4d(jnp.asarray(value))
    bias = None if bias is None else _4d(jnp.asarray(bias))
    mask = None if mask is None else _4d(jnp.asarray(mask))
    qlen = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
    kvlen = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    b, s, kh, h = k.shape
    _check(v, (b, s, kh, -1), k.dtype, "value")
    _check(q, (b, -1, -1, h), k.dtype, "query")
    _check(mask, (-1,) * 4, np.dtype(bool), "mask")
    _check(bias, (-1,) * 4, None, "bias")
    _check(qlen, (b,), np.dtype(np.int32), "query_seq_lengths")
    _check(kvlen, (b,), np.dtype(np.int32), "key_value_seq_lengths")
    if q.shape[2] % kh:
        raise ValueError(
            "The number of query heads must be a multiple of key/value heads, but got "
            f"{q.shape[2]} vs {kh}"
        )
    scale = float(1.0 / np.sqrt(h)) if scale is None else float(scale)
    if implementation == "xla":
        out = _xla_call(q, k, v, bias, mask, is_causal, scale, qlen, kvlen,
                        local_window_size, return_residual)  # fmt: skip
    else:
        out = _fused(q, k, v, bias, mask, is_causal, scale, qlen, kvlen, local_window_size,
                     return_residual, implementation == "cudnn")  # fmt: skip
    if return_residual:
        o, res = out
        return jnp.reshape(o, out_shape), jnp.reshape(res, out_shape[:-1])
    return jnp.reshape(out, out_shape)


def _4d(x):
    return x if x.ndim >= 4 else jnp.reshape(x, (1,) * (4 - x.ndim) + x.shape)


def _check(t, shape, dtype, name):
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
    if any(w != -1 and g != w for g, w in zip(t.shape, shape)):
        raise ValueError(f"{name} shape should be {shape}: but got {t.shape}")


def _mask_bias(mask, dtype):
    """An explicit boolean mask as JAX's cuDNN path adds it: 0 or a large negative number."""
    fill = -(2 << 40) if np.dtype(dtype) == pdt.bfloat16 else -(2 << 14)
    if np.dtype(dtype) not in (np.dtype(np.float16), pdt.bfloat16):
        fill = large_negative()
    zero, neg = jnp.zeros((), dtype), jnp.asarray(fill, dtype)
    return jnp.where(mask, zero, neg)


def _fused(q, k, v, bias, mask, is_causal, scale, qlen, kvlen, window, residual, cudnn):
    b, t, n, _ = q.shape
    s = k.shape[1]
    if mask is not None:
        mb = _mask_bias(mask, q.dtype)
        bias = mb if bias is None else jnp.add(bias, mb)
    if bias is not None:
        bias = jnp.broadcast_to(bias, tuple(d if d == 1 else w for d, w in
                                            zip(bias.shape, (b, n, t, s))))  # fmt: skip
        if cudnn:
            bias = bias.astype(q.dtype)
    padding = qlen is not None or kvlen is not None
    if padding:
        qlen = jnp.full((b,), t, np.int32) if qlen is None else qlen
        kvlen = jnp.full((b,), s, np.int32) if kvlen is None else kvlen
    kind = ("padding_" if padding else "") + ("causal" if is_causal else "")
    kind = kind.rstrip("_") or "none"
    if window is not None and any(w < 0 for w in window):
        raise ValueError(f"local_window_size={window} must be non-negative")
    attrs = attention_attrs(
        scale=scale,
        mask=kind,
        window=window,
        has_bias=bias is not None,
        has_seq_lengths=padding,
        return_stats=residual,
        precision=canonical_precision(None, "nn.dot_product_attention"),
    )
    if cudnn:
        _check_cudnn(q, k, v, bias, attrs)
    args = [q, k, v] + ([bias] if bias is not None else []) + ([qlen, kvlen] if padding else [])
    outs = bind("dot_product_attention", *args, **attrs)
    if not residual:
        return outs[0]
    lse = jnp.transpose(stop_gradient(outs[1]), (0, 2, 1)).astype(q.dtype)
    return outs[0], lse


def _check_cudnn(q, k, v, bias, attrs):
    """JAX's errors for a call cuDNN's flash attention cannot run."""
    if not pjrt.is_gpu():
        raise RuntimeError("cuDNN is not detected.")
    tgt = cudnn_fmha.target(None)
    if tgt is None:
        raise RuntimeError("cuDNN is not detected.")
    ts = [TensorType(x.shape, x.dtype) for x in (q, k, v)]
    bt = None if bias is None else TensorType(bias.shape, bias.dtype)
    why = cudnn_fmha.unsupported_reason(*ts, attrs, bt, tgt, training=False)
    if why is None and bias is not None and bias.shape[2:] != (q.shape[1], k.shape[1]):
        why = "Bias must have same seq length as QKV"
    if why is not None:
        raise NotImplementedError(why)


# ---- implementation="xla": the program JAX's XLA path writes --------------------------------


def _xla_call(q, k, v, bias, mask, is_causal, scale, qlen, kvlen, window, residual):
    """`xla_attention`, as one `call` named `XLA_PATH` where the attention rewrite runs on
    the program being traced: the rewrite never fuses inside it (the user asked for the XLA
    path), every transformation keeps it a call of that name, and the `inline` pass emits
    its ops as written. Where the rewrite never runs (CPU, TPU, `fused_attention` off,
    eagerly) the ops are the program's own, exactly as written."""
    if not rewrite_may_run():
        return xla_attention(q, k, v, bias, mask, is_causal, scale, qlen, kvlen, window,
                             residual)  # fmt: skip
    arrays = [q, k, v, bias, mask, qlen, kvlen]
    given = [x is not None for x in arrays]
    leaves = [x for x in arrays if x is not None]

    def flat(*xs):
        it = iter(xs)
        a = [next(it) if g else None for g in given]
        out = xla_attention(*a[:5], is_causal, scale, a[5], a[6], window, residual)
        return list(out) if residual else [out]

    traced = trace_to_function(flat, [aval_of(x) for x in leaves], name=XLA_PATH)
    weak = tuple(a.weak_type for a in traced.out_avals)
    outs = bind("call", *leaves, *traced.captures, regions=[traced.fn], callee=XLA_PATH,
                weak=weak)  # fmt: skip
    return tuple(outs) if residual else outs[0]


def xla_attention(q, k, v, bias, mask, is_causal, scale, qlen, kvlen, window, residual):
    """JAX's `_dot_product_attention_xla`, op for op. Grouped heads: q as [B,T,K,G,H]; JAX
    maps its attention over G with `vmap`, which puts G first in the masked logits and all
    that follows ([G,B,K,T,S]), and so does this: XLA's CPU backend fuses (and so rounds)
    a program by the order of its dimensions, and in [B,K,G,T,S] it keeps the backward's
    bf16 probability cotangent unrounded where JAX's program rounds it."""
    b, t, n, h = q.shape
    _, s, kh, _ = k.shape
    g = n // kh
    q5 = jnp.reshape(q, (b, t, kh, g, h))
    acc = np.promote_types(q.dtype, np.float32)
    logits = jnp.einsum("BTKGH,BSKH->BKTGS", q5, k, precision=_logits_precision(q.dtype),
                        preferred_element_type=acc)  # fmt: skip
    logits = logits * jnp.asarray(scale, acc)
    logits = jnp.transpose(logits, (3, 0, 1, 2, 4))  # [G,B,K,T,S]
    if bias is not None:
        logits = (logits + _grouped(bias, kh, g)).astype(acc)
    combined = None
    if mask is not None:
        combined = _grouped(mask, kh, g)
    ti = jnp.arange(t)[:, None]
    si = jnp.arange(s)[None, :]
    if is_causal:
        combined = _and(combined, si <= ti)
    if window is not None:
        left, right = window
        combined = _and(combined, (ti <= si + left) & (ti >= si - right))
    if qlen is not None or kvlen is not None:
        qm = True if qlen is None else (jnp.arange(t)[None, :, None] < qlen[:, None, None])
        km = True if kvlen is None else (jnp.arange(s)[None, None, :] < kvlen[:, None, None])
        combined = _and(combined, jnp.logical_and(qm, km)[None, :, None])
    if combined is not None:
        logits = jnp.where(combined, logits, jnp.asarray(large_negative(), acc))
    logits = logits.astype(np.float32)
    m = stop_gradient(jnp.max(logits, axis=-1, keepdims=True))
    unnormalized = jnp.exp(logits - m)
    probs = unnormalized / jnp.sum(unnormalized, axis=-1, keepdims=True)
    out = jnp.einsum("GBKTS,BSKH->BTKGH", probs.astype(k.dtype), v)
    out = jnp.reshape(out, (b, t, n, v.shape[3]))
    if qlen is not None:
        rows = jnp.arange(t)[None, :] < qlen[:, None]
        out = out * rows[:, :, None, None].astype(out.dtype)
    if not residual:
        return out
    lse = jnp.log(jnp.sum(jnp.exp(logits - m), axis=-1)) + m[..., 0]
    lse = jnp.reshape(jnp.transpose(lse, (1, 3, 2, 0)), (b, t, n)).astype(k.dtype)
    return out, stop_gradient(lse)


def _logits_precision(dtype):
    """The logits dot's algorithm, as JAX's XLA path sets it, so that the backward's products
    take the float32 cotangent as JAX's do: BF16_BF16_F32 for bfloat16 inputs (it takes
    the float32 cotangent as it is: XLA's GPU backend rounds it to bfloat16, its CPU backend
    contracts in float32); F16_F16_F32 for float16 inputs on a GPU (the cotangent rounded
    to float16). XLA's CPU backend does not run F16_F16_F32 (under `jax.jit` JAX raises
    there; eagerly it falls back to no algorithm, as here); other dtypes get none."""
    dt = np.dtype(dtype)
    if dt == pdt.bfloat16:
        return DotAlgorithmPreset.BF16_BF16_F32
    if dt == np.float16 and pjrt.is_gpu():
        return DotAlgorithmPreset.F16_F16_F32
    return None


def _and(a, c):
    return c if a is None else jnp.logical_and(a, c)


def _grouped(x, kh, g):
    """A [b, n, T, S] bias or mask as [G, b, K, T, S] (n = 1 broadcasts)."""
    bb, bn, tt, ss = x.shape
    if bn == 1:
        return jnp.reshape(x, (1, bb, 1, tt, ss))
    return jnp.transpose(jnp.reshape(x, (bb, kh, g, tt, ss)), (2, 0, 1, 3, 4))
