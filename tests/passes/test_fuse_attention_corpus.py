"""Attention as others write it, reproduced in purejit.numpy the way each library writes it
in jax.numpy (Flax linen and nnx, Equinox, Haiku, jax.nn.dot_product_attention's XLA path, a
nanoGPT model): every one fuses, and the fused program gives the written one's numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import lax, nn

from tests.passes.attention_util import (
    assert_fused,
    assert_refused,
    attention_ops,
)

B, T, D, N, H = 2, 8, 32, 4, 8
X = (B, T, D)
W = (D, N, H)


# ---- Flax linen (flax/linen/attention.py) ---------------------------------------------------


def flax_dot_product_attention_weights(query, key, bias=None, mask=None):
    dtype = query.dtype
    depth = query.shape[-1]
    query = query / jnp.sqrt(depth).astype(dtype)
    attn_weights = jnp.einsum("...qhd,...khd->...hqk", query, key)
    if bias is not None:
        attn_weights = attn_weights + bias
    if mask is not None:
        big_neg = jnp.finfo(dtype).min
        attn_weights = jnp.where(mask, attn_weights, big_neg)
    return nn.softmax(attn_weights).astype(dtype)


def flax_dot_product_attention(query, key, value, bias=None, mask=None):
    attn_weights = flax_dot_product_attention_weights(query, key, bias, mask)
    return jnp.einsum("...hqk,...khd->...qhd", attn_weights, value)


def flax_make_causal_mask(x):
    idxs = jnp.broadcast_to(jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape)
    mask = jnp.greater_equal(jnp.expand_dims(idxs, -1), jnp.expand_dims(idxs, -2))
    return jnp.expand_dims(mask, -3).astype(jnp.bool_)


def dense_general(x, kernel, bias):  # DenseGeneral / nnx.LinearGeneral, features (N, H)
    y = lax.dot_general(x, kernel, (((x.ndim - 1,), (0,)), ((), ())))
    return y + bias


def linen_mha(x, wq, wk, wv, wo):
    zero = jnp.zeros((N, H), x.dtype)
    q, k, v = (dense_general(x, w, zero) for w in (wq, wk, wv))
    mask = flax_make_causal_mask(jnp.ones(x.shape[:2]))
    out = flax_dot_product_attention(q, k, v, mask=mask)
    return lax.dot_general(out, wo, (((2, 3), (0, 1)), ((), ())))


def test_flax_linen_multi_head_attention():
    assert_fused(linen_mha, X, W, W, W, (N, H, D), scale=0.3)


def nnx_mha(x, wq, wk, wv, wo):
    # nnx.MultiHeadAttention: the same attention function, its mask combined with
    # nnx.combine_masks (a logical_and) and a float32 softmax (force_fp32_for_softmax)
    q, k, v = (dense_general(x, w, jnp.zeros((N, H), x.dtype)) for w in (wq, wk, wv))
    mask = jnp.logical_and(flax_make_causal_mask(jnp.ones(x.shape[:2])), True)
    depth = q.shape[-1]
    q = q / jnp.sqrt(depth).astype(q.dtype)
    w = jnp.einsum("...qhd,...khd->...hqk", q, k)
    w = jnp.where(mask, w, jnp.finfo(q.dtype).min)
    w = nn.softmax(w.astype(jnp.float32)).astype(q.dtype)
    out = jnp.einsum("...hqk,...khd->...qhd", w, v)
    return lax.dot_general(out, wo, (((2, 3), (0, 1)), ((), ())))


def test_flax_nnx_multi_head_attention():
    assert_fused(nnx_mha, X, W, W, W, (N, H, D), scale=0.3)


# ---- Equinox (equinox/nn/_attention.py): per example, heads vmapped ---------------------------


def eqx_dot_product_attention_weights(query, key, mask=None):
    query = query / jnp.sqrt(query.shape[-1])
    logits = jnp.einsum("sd,Sd->sS", query, key)
    if mask is not None:
        logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
    dtype = jnp.result_type(logits.dtype, jnp.float32)
    return nn.softmax(logits.astype(dtype)).astype(logits.dtype)


def eqx_dot_product_attention(query, key_, value, mask=None):
    weights = eqx_dot_product_attention_weights(query, key_, mask)
    return jnp.einsum("sS,Sd->sd", weights, value)


def eqx_mha(x, wq, wk, wv, wo):  # one example: x [T, D]; weights [N*H, D] as eqx.nn.Linear
    def project(w, x):
        return purejit.vmap(lambda row: w @ row)(x).reshape(x.shape[0], N, H)

    q, k, v = project(wq, x), project(wk, x), project(wv, x)
    mask = jnp.tril(jnp.ones((x.shape[0], x.shape[0]), bool))
    attn = purejit.vmap(eqx_dot_product_attention, in_axes=(1, 1, 1, None), out_axes=1)(
        q, k, v, mask
    )
    return purejit.vmap(lambda row: wo @ row)(attn.reshape(x.shape[0], -1))


def test_equinox_multihead_attention_vmapped_over_the_batch():
    wt = (N * H, D)
    f = purejit.vmap(eqx_mha, in_axes=(0, None, None, None, None))
    assert_fused(f, X, wt, wt, wt, (D, D), scale=0.3)


# ---- Haiku (haiku/_src/attention.py) -----------------------------------------------------------


def haiku_mha(x, wq, wk, wv, wo):
    def heads(w):
        y = x @ w  # hk.Linear
        return y.reshape((*x.shape[:-1], N, H))

    query_heads, key_heads, value_heads = heads(wq), heads(wk), heads(wv)
    attn_logits = jnp.einsum("...thd,...Thd->...htT", query_heads, key_heads)
    attn_logits = attn_logits / np.sqrt(H).astype(x.dtype)
    mask = np.tril(np.ones((1, 1, T, T)))
    attn_logits = jnp.where(mask, attn_logits, -1e30)
    attn_weights = nn.softmax(attn_logits)
    attn = jnp.einsum("...htT,...Thd->...thd", attn_weights, value_heads)
    attn = jnp.reshape(attn, (*x.shape[:-1], -1))
    return attn @ wo


def test_haiku_multi_head_attention():
    assert_fused(haiku_mha, X, (D, D), (D, D), (D, D), (D, D), scale=0.3)


# ---- jax.nn.dot_product_attention(implementation="xla") (jax/_src/nn/functions.py) ---------


def _window_mask(t, s, local_window_size):
    # JAX writes jnp.array(range(t)); purejit.numpy.array does not take a range yet
    query_pos = jnp.array(list(range(t)))
    key_pos = jnp.array(list(range(s)))
    left_window, right_window = local_window_size
    left_mask = query_pos[..., None] <= key_pos[..., None, :] + left_window
    right_mask = query_pos[..., None] >= key_pos[..., None, :] - right_window
    return jnp.logical_and(right_mask, left_mask)


def _padding_mask_logits(t, s, q_seqlen, kv_seqlen):
    q_mask = True
    kv_mask = True
    if q_seqlen is not None:
        q_indices = jnp.arange(0, t, dtype=q_seqlen.dtype)[None, None, :, None]
        q_mask = q_indices < q_seqlen[:, None, None, None]
    if kv_seqlen is not None:
        kv_indices = jnp.arange(0, s, dtype=kv_seqlen.dtype)[None, None, None, :]
        kv_mask = kv_indices < kv_seqlen[:, None, None, None]
    return jnp.logical_and(q_mask, kv_mask)


def _padding_mask_encoded(t, q_seqlen):
    q_indices = jnp.arange(0, t, dtype=q_seqlen.dtype)[None, :]
    mask = q_indices < q_seqlen[:, None]
    return mask[:, :, None, None]


def _xla_core(query, key, value, bias, mask, is_causal, scale, window=None, ql=None, kl=None):
    logits = jnp.einsum("BTNH,BSNH->BNTS", query, key, preferred_element_type=jnp.float32)
    logits *= jnp.array(scale, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits.dtype)
    if mask is not None or is_causal or window is not None or ql is not None or kl is not None:
        combined = jnp.ones_like(logits, dtype=jnp.bool_)
        if mask is not None:
            combined = jnp.logical_and(combined, mask)
        if is_causal:
            t, s = logits.shape[2], logits.shape[3]
            causal = jnp.tril(jnp.ones((t, s), dtype=jnp.bool_))[None, None, :, :]
            combined = jnp.logical_and(combined, causal)
        if window is not None:
            t, s = logits.shape[2], logits.shape[3]
            combined = jnp.logical_and(combined, _window_mask(t, s, window)[None, None])
        if ql is not None or kl is not None:
            t, s = logits.shape[2], logits.shape[3]
            combined = jnp.logical_and(combined, _padding_mask_logits(t, s, ql, kl))
        large_negative = jnp.asarray(-0.7 * jnp.finfo(logits.dtype).max, dtype=logits.dtype)
        logits = jnp.where(combined, logits, large_negative)
    probs = nn.softmax(logits.astype(jnp.float32), axis=-1).astype(key.dtype)
    encoded = jnp.einsum("BNTS,BSNH->BTNH", probs, value)
    if ql is not None and kl is not None:
        encoded *= _padding_mask_encoded(encoded.shape[1], ql).astype(encoded.dtype)
    return encoded


def jax_xla_attention(
    query, key, value, bias=None, mask=None, is_causal=False, window=None, ql=None, kl=None
):
    b, t, n, h = query.shape
    k_heads = key.shape[2]
    g = n // k_heads
    scale = 1.0 / math.sqrt(h)
    query = jnp.reshape(query, (b, t, k_heads, g, h))

    def grouped(x):
        if x is None:
            return None
        if x.shape[1] == 1:
            return jnp.broadcast_to(x[:, :, None], (x.shape[0], 1, g, *x.shape[2:]))
        return jnp.reshape(x, (x.shape[0], k_heads, g, *x.shape[2:]))

    bias, mask = grouped(bias), grouped(mask)
    in_axes = (3, None, None, None if bias is None else 2, None if mask is None else 2, None, None)
    fn = purejit.vmap(
        lambda q, k, v, bi, m, a, c: _xla_core(q, k, v, bi, m, is_causal, scale, window, a, c),
        in_axes=in_axes,
        out_axes=3,
    )
    return jnp.reshape(fn(query, key, value, bias, mask, ql, kl), (b, t, n, h))


Q4 = (B, T, N, H)
KV2 = (B, T, 2, H)


@pytest.mark.parametrize("kv", [Q4, KV2], ids=["mha", "gqa"])
@pytest.mark.parametrize("kind", ["none", "causal", "mask", "bias", "window"])
def test_jax_nn_dot_product_attention_xla_path(kind, kv):
    if kind == "none":
        f, shapes, want = (lambda q, k, v: jax_xla_attention(q, k, v)), (), "none"
    elif kind == "causal":
        f, shapes, want = (lambda q, k, v: jax_xla_attention(q, k, v, is_causal=True)), (), "causal"
    elif kind == "mask":
        m = np.tril(np.ones((1, 1, T, T), bool))
        f, shapes, want = (lambda q, k, v: jax_xla_attention(q, k, v, mask=m)), (), "causal"
    elif kind == "window":
        f, shapes, want = (
            (lambda q, k, v: jax_xla_attention(q, k, v, is_causal=True, window=(2, 0))),
            (),
            "causal",
        )
    else:
        f, shapes, want = (
            (lambda q, k, v, b: jax_xla_attention(q, k, v, bias=b)),
            ((1, 1, T, T),),
            "none",
        )
    res = assert_fused(f, Q4, kv, kv, *shapes, mask=want)
    (op,) = attention_ops(res.fn)
    assert op.operands[1].type.shape == kv
    assert op.attrs["window"] == ((2, 0) if kind == "window" else None)


LENS = ("int", (B,), T + 1)  # 0 ..= T: a kv_len of 0 blanks whole rows, q_len 0 every row


@pytest.mark.parametrize("kv", [Q4, KV2], ids=["mha", "gqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["padding", "padding_causal"])
def test_jax_nn_dot_product_attention_xla_path_with_sequence_lengths(causal, kv):
    def both(q, k, v, ql, kl):
        return jax_xla_attention(q, k, v, is_causal=causal, ql=ql, kl=kl)

    want = "padding_causal" if causal else "padding"
    res = assert_fused(both, Q4, kv, kv, LENS, LENS, mask=want)
    (op,) = attention_ops(res.fn)
    assert [x.type.shape for x in op.operands[3:]] == [(B,), (B,)]

    def kv_only(q, k, v, kl):
        return jax_xla_attention(q, k, v, is_causal=causal, kl=kl)

    assert_fused(kv_only, Q4, kv, kv, LENS, mask=want)


def test_query_lengths_alone_are_not_fused():
    # the XLA path leaves rows past q_len with the mean of v; the fused op zeroes them
    def q_only(q, k, v, ql):
        return jax_xla_attention(q, k, v, ql=ql)

    assert_refused(q_only, Q4, Q4, Q4, LENS, reason="keep the mean of v")


# ---- nanoGPT (model.py: CausalSelfAttention in a two-layer model) ------------------------------


def _layer_norm(x, w):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + 1e-5) * w


def causal_self_attention(x, w_attn, w_proj, block):
    b, t, c = x.shape
    q, k, v = jnp.split(x @ w_attn, 3, axis=2)
    k = k.reshape(b, t, N, c // N).transpose(0, 2, 1, 3)
    q = q.reshape(b, t, N, c // N).transpose(0, 2, 1, 3)
    v = v.reshape(b, t, N, c // N).transpose(0, 2, 1, 3)
    att = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(k.shape[-1]))
    att = jnp.where(block[:, :, :t, :t] == 0, float("-inf"), att)
    att = nn.softmax(att, axis=-1)
    y = att @ v
    y = y.transpose(0, 2, 1, 3).reshape(b, t, c)
    return y @ w_proj


def nanogpt(x, w_attn, w_proj, w_fc, w_out, ln):
    block = np.tril(np.ones((16, 16))).reshape(1, 1, 16, 16)  # the registered buffer
    for _ in range(2):
        x = x + causal_self_attention(_layer_norm(x, ln), w_attn, w_proj, block)
        x = x + nn.gelu(_layer_norm(x, ln) @ w_fc) @ w_out
    return x


def test_nanogpt_model_fuses_every_layer():
    shapes = (X, (D, 3 * D), (D, D), (D, 4 * D), (4 * D, D), (D,))
    assert_fused(nanogpt, *shapes, n=2, tol=5e-2, scale=0.3)
