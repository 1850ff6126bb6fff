"""The attention rewrite: each form users write fuses (IR after, interpreter equivalence),
and each unproved form is left exactly as written with the reason in the report."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import lax, nn
from purejit.ir import parse, print_function, verify

from tests.passes.attention_util import (
    BF16,
    assert_fused,
    assert_refused,
    attention_ops,
    fuse,
    traced,
)

B, T, N, H = 2, 8, 4, 16
Q = (B, T, N, H)


def _causal_where(s, fill=-1e9):
    t, k = s.shape[-2], s.shape[-1]
    return jnp.where(jnp.tril(jnp.ones((t, k), bool)), s, fill)


def attn_einsum(q, k, v):
    s = jnp.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(q.shape[-1])
    p = nn.softmax(_causal_where(s).astype(jnp.float32), axis=-1).astype(q.dtype)
    return jnp.einsum("bnts,bsnh->btnh", p, v)


def test_einsum_f32_softmax_causal_fuses_into_one_op():
    res = assert_fused(attn_einsum, Q, Q, Q)
    (op,) = attention_ops(res.fn)
    assert op.attrs["scale"] == pytest.approx(0.25)
    assert [x.type.shape for x in op.operands] == [Q, Q, Q]  # BTNH read as written
    assert res.report["fused"][0]["mask"] == "causal"


def test_matmul_bnth_handwritten_softmax_scale_on_q():
    def f(q, k, v):
        q, k, v = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
        s = (q * 0.25) @ k.transpose(0, 1, 3, 2)
        e = jnp.exp(s - s.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        return (p @ v).transpose(0, 2, 1, 3)

    res = assert_fused(f, Q, Q, Q, mask="none")
    assert attention_ops(res.fn)[0].attrs["scale"] == 0.25


def test_scale_on_k_as_a_divide_and_dot_general():
    def f(q, k, v):
        k = k / 4.0
        dn = (((3,), (3,)), ((0, 2), (0, 2)))
        s = lax.dot_general(q, k, dn)  # [b, n, t, s]
        p = nn.softmax(s, axis=-1)
        o = lax.dot_general(p, v, (((3,), (1,)), ((0, 1), (0, 2))))  # [b, n, t, h]
        return o

    res = assert_fused(f, Q, Q, Q, mask="none")
    assert attention_ops(res.fn)[0].attrs["scale"] == 0.25


@pytest.mark.parametrize(
    "mask",
    [
        lambda t, s: jnp.tril(jnp.ones((t, s), bool)),
        lambda t, s: ~jnp.triu(jnp.ones((t, s), bool), k=1),
        lambda t, s: jnp.arange(t)[:, None] >= jnp.arange(s)[None, :],
        lambda t, s: jnp.asarray(np.tril(np.ones((t, s), bool))),
        lambda t, s: (
            lax.broadcasted_iota(jnp.int32, (t, s), 0) >= lax.broadcasted_iota(jnp.int32, (t, s), 1)
        ),
    ],
    ids=["tril", "not_triu", "arange_ge", "numpy_constant", "iota"],
)
def test_causal_masks_by_where(mask):
    def f(q, k, v):
        s = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25
        s = jnp.where(mask(T, T)[None, None], s, -jnp.inf)
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(s), v)

    assert_fused(f, Q, Q, Q)


def test_causal_mask_added_as_a_bias_and_finfo_min_fill():
    def f(q, k, v):
        s = jnp.einsum("btnh,bsnh->bnts", q, k).astype(jnp.float32) * 0.25
        add = jnp.where(jnp.tril(jnp.ones((T, T), bool)), 0.0, jnp.finfo(jnp.float32).min)
        p = nn.softmax(s + add, axis=-1).astype(BF16)
        return jnp.einsum("bnts,bsnh->btnh", p, v)

    assert_fused(f, Q, Q, Q)


def test_additive_bias_becomes_the_bias_operand():
    def f(q, k, v, bias):
        s = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25 + bias
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(s), v)

    res = assert_fused(f, Q, Q, Q, (B, N, T, T), mask="none")
    (op,) = attention_ops(res.fn)
    assert op.attrs["has_bias"] and op.operands[3].type.shape == (B, N, T, T)

    def f32_logits(q, k, v, bias):  # the bias is upcast with the logits: read before it
        s = jnp.einsum("btnh,bsnh->bnts", q, k).astype(jnp.float32) * 0.25 + bias
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(s).astype(q.dtype), v)

    res = assert_fused(f32_logits, Q, Q, Q, (B, N, T, T), mask="none")
    assert attention_ops(res.fn)[0].operands[3].type.dtype == BF16
    assert_refused(f, Q, Q, Q, (B, N, T, T), dtype=np.float32, reason="the fused kernel takes")


def test_grouped_query_by_repeat_broadcast_and_groups():
    kv = (B, T, 2, H)

    def by_repeat(q, k, v):
        k, v = jnp.repeat(k, 2, axis=2), jnp.repeat(v, 2, axis=2)
        return attn_einsum(q, k, v)

    def by_broadcast(q, k, v):
        def rep(x):
            return jnp.broadcast_to(x[:, :, :, None], (B, T, 2, 2, H)).reshape(Q)

        return attn_einsum(q, rep(k), rep(v))

    def by_groups(q, k, v):
        q5 = q.reshape(B, T, 2, 2, H)
        s = jnp.einsum("btkgh,bskh->bkgts", q5, k) * 0.25
        p = nn.softmax(_causal_where(s))
        return jnp.einsum("bkgts,bskh->btkgh", p, v).reshape(Q)

    for f in (by_repeat, by_broadcast, by_groups):
        res = assert_fused(f, Q, kv, kv)
        (op,) = attention_ops(res.fn)
        assert op.operands[1].type.shape == kv, f.__name__  # k keeps its 2 heads


def test_repeated_query_heads_stay_materialised():
    # q's heads repeated (not k's): the op shares k/v heads only, so q is read as repeated
    def f(q, k, v):
        return attn_einsum(jnp.repeat(q, 2, axis=2), k, v)

    res = assert_fused(f, (B, T, 2, H), Q, Q)
    assert attention_ops(res.fn)[0].operands[0].type.shape == Q


def test_under_vmap_and_in_3d_tnh():
    def one(q, k, v):  # [T, N, H], as Equinox writes it per example
        s = jnp.einsum("tnh,snh->nts", q, k) * 0.25
        return jnp.einsum("nts,snh->tnh", nn.softmax(_causal_where(s)), v)

    res = assert_fused(purejit.vmap(one), Q, Q, Q)
    assert attention_ops(res.fn)[0].operands[0].type.shape == Q


def test_inside_scan_over_layers():
    def f(q, k, v):
        def body(x, _):
            return attn_einsum(x, k, v), None

        return lax.scan(body, q, None, length=2)[0]

    res = assert_fused(f, Q, Q, Q)
    assert any(op.name == "scan" for op in res.fn.ops)


def test_ir_text_in_and_out():
    src = """func @f(%0: bf16[1,8,2,8], %1: bf16[1,8,2,8], %2: bf16[1,8,2,8]) -> (bf16[1,8,2,8]) {
  %3 = dot_general(%0, %1) {lhs_batching_dimensions=[0, 2], rhs_batching_dimensions=[0, 2], lhs_contracting_dimensions=[3], rhs_contracting_dimensions=[3]} : (bf16[1,2,8,8])
  %4 = constant() {value=array<bf16[]: [0.5]>} : (bf16[])
  %5 = broadcast_in_dim(%4) {shape=[1, 2, 8, 8], broadcast_dimensions=[]} : (bf16[1,2,8,8])
  %6 = multiply(%3, %5) : (bf16[1,2,8,8])
  %7 = constant() {value=array<bf16[]: [-inf]>} : (bf16[])
  %8 = reduce(%6, %7) {dimensions=[3]} : (bf16[1,2,8]) region(%9: bf16[], %10: bf16[]) {
    %11 = maximum(%9, %10) : (bf16[])
    return %11
  }
  %12 = broadcast_in_dim(%8) {shape=[1, 2, 8, 8], broadcast_dimensions=[0, 1, 2]} : (bf16[1,2,8,8])
  %13 = subtract(%6, %12) : (bf16[1,2,8,8])
  %14 = exponential(%13) : (bf16[1,2,8,8])
  %15 = constant() {value=array<bf16[]: [0.0]>} : (bf16[])
  %16 = reduce(%14, %15) {dimensions=[3]} : (bf16[1,2,8]) region(%17: bf16[], %18: bf16[]) {
    %19 = add(%17, %18) : (bf16[])
    return %19
  }
  %20 = broadcast_in_dim(%16) {shape=[1, 2, 8, 8], broadcast_dimensions=[0, 1, 2]} : (bf16[1,2,8,8])
  %21 = divide(%14, %20) : (bf16[1,2,8,8])
  %22 = dot_general(%21, %2) {lhs_batching_dimensions=[0, 1], rhs_batching_dimensions=[0, 2], lhs_contracting_dimensions=[3], rhs_contracting_dimensions=[1]} : (bf16[1,2,8,8])
  %23 = transpose(%22) {permutation=[0, 2, 1, 3]} : (bf16[1,8,2,8])
  return %23
}"""
    out = """func @f(%0: bf16[1,8,2,8], %1: bf16[1,8,2,8], %2: bf16[1,8,2,8]) -> (bf16[1,8,2,8]) {
  %3 = dot_product_attention(%0, %1, %2) {scale=0.5, mask="none", window=none, has_bias=false, has_seq_lengths=false, return_stats=false} : (bf16[1,8,2,8])
  %4 = transpose(%3) {permutation=[0, 2, 1, 3]} : (bf16[1,2,8,8])
  %5 = transpose(%4) {permutation=[0, 2, 1, 3]} : (bf16[1,8,2,8])
  return %5
}"""
    fn = verify(parse(src))
    res = fuse(fn)
    assert print_function(res.fn) == out
    assert print_function(verify(parse(out))) == out


# ---- must not fuse ----------------------------------------------------------------------------


def test_k_heads_permuted_against_v_heads_is_refused():
    kv = (B, T, 2, H)

    def f(q, k, v):  # k tiled (head n reads n % 2), v repeated (n // 2): not one GQA
        k = jnp.tile(k, (1, 1, 2, 1))
        return attn_einsum(q, k, jnp.repeat(v, 2, axis=2))

    assert_refused(f, Q, kv, kv, reason="repeat their heads differently")


def test_k_permuted_seq_and_head_axes_is_followed_exactly():
    # k arrives as [b, n, h, s] and is used as such: the op reads it through the permutation
    def f(q, k, v):
        s = jnp.einsum("btnh,bnhs->bnts", q, k) * 0.25
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(s), v)

    res = assert_fused(f, Q, (B, N, H, T), Q, mask="none")
    assert attention_ops(res.fn)[0].operands[1].type.shape == Q


def test_softmax_over_the_wrong_axis():
    def f(q, k, v):
        s = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(s, axis=-2), v)

    assert_refused(f, Q, Q, Q, reason="does not contract the key axis")


def test_traced_scale():
    def f(q, k, v, c):
        s = jnp.einsum("btnh,bsnh->bnts", q, k) * c
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(s), v)

    assert_refused(f, Q, Q, Q, (), reason="scale must be a positive constant")


def test_probabilities_used_twice():
    def f(q, k, v):
        s = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25
        p = nn.softmax(s)
        return jnp.einsum("bnts,bsnh->btnh", p, v), p

    assert_refused(f, Q, Q, Q, reason="probabilities is also returned")


def test_float32_inputs():
    assert_refused(attn_einsum, Q, Q, Q, dtype=np.float32, reason="the fused kernel takes")


@pytest.mark.parametrize(
    "t,s,mask",
    [
        (T, T, lambda t, s: jnp.tril(jnp.ones((t, s), bool), k=1)),
        (4, 8, lambda t, s: jnp.tril(jnp.ones((t, s), bool), k=s - t)),
    ],
    ids=["tril_k1", "bottom_right"],
)
def test_masks_that_are_not_causal(t, s, mask):
    def f(q, k, v):
        x = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25
        x = jnp.where(mask(t, s), x, -1e9)
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(x), v)

    assert_refused(f, (B, t, N, H), (B, s, N, H), (B, s, N, H), reason="not the causal pattern")


def test_a_band_that_looks_ahead_is_not_a_causal_window():
    def f(q, k, v):
        ti, si = np.indices((T, T))
        x = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25
        x = jnp.where(np.abs(ti - si) <= 2, x, -1e9)
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(x), v)

    assert_refused(f, Q, Q, Q, reason="not the causal pattern")


def test_users_custom_softmax():
    @purejit.custom_jvp
    def my_softmax(x):
        e = jnp.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    my_softmax.defjvp(lambda p, t: (my_softmax(p[0]), t[0]))

    def f(q, k, v):
        s = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25
        return jnp.einsum("bnts,bsnh->btnh", my_softmax(s), v)

    assert_refused(f, Q, Q, Q, reason="not purejit.nn.softmax's")


def test_data_dependent_mask():
    def f(q, k, v, m):
        s = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25
        s = jnp.where(m > 0, s, -1e9)
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(s), v)

    assert_refused(f, Q, Q, Q, (T, T), reason="depends on the data")


def test_target_limits():
    assert_refused(attn_einsum, Q, Q, Q, max_head_dim=8, reason="head dim 16")
    big = (B, T, N, 24)
    fn, _ = traced(attn_einsum, big, big, big)
    assert fuse(fn).changed  # 24: a multiple of 8


def test_nothing_to_do_leaves_the_function():
    fn, _ = traced(lambda x: jnp.exp(x) @ x, (8, 8))
    res = fuse(fn)
    assert res.fn is fn and not res.changed and res.report == {}


@pytest.mark.parametrize("seed", range(8))
def test_random_layouts_fuse_and_keep_the_numbers(seed):
    # every operand, the logits and the output in a random dimension order, the softmax
    # along wherever the key axis lands, a causal mask laid out to match
    r = np.random.default_rng(seed)

    def perm(s):
        return "".join(r.permutation(list(s)))

    ql, kl, vl, sl, ol = perm("btnh"), perm("bsnh"), perm("bsnh"), perm("bnts"), perm("btnh")
    dims = dict(b=B, t=T, s=T, n=N, h=H)

    def f(q, k, v):
        s = jnp.einsum(f"{ql},{kl}->{sl}", q, k) * 0.25
        keep = jnp.tril(jnp.ones((T, T), bool))
        if sl.index("t") > sl.index("s"):
            keep = keep.T
        shape = [dims[c] if c in "ts" else 1 for c in sl]
        s = jnp.where(keep.reshape(shape), s, -jnp.inf)
        p = nn.softmax(s.astype(jnp.float32), axis=sl.index("s")).astype(q.dtype)
        return jnp.einsum(f"{sl},{vl}->{ol}", p, v)

    shapes = [tuple(dims[c] for c in x) for x in (ql, kl, vl)]
    assert_fused(f, *shapes)


def test_long_sequence_causal_mask_is_proved_on_the_host():
    # T = S = 4096: the tril mask has 2**24 elements (beyond the old host limit, 2**22, which
    # left bench.attention's T = 4096 row unfused on an H200)
    long = (1, 4096, 1, 8)

    def f(q, k, v):
        s = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25
        s = jnp.where(jnp.tril(jnp.ones((4096, 4096), bool)), s, -1e30)
        return jnp.einsum("bnts,bsnh->btnh", nn.softmax(s), v)

    fn, _ = traced(f, long, long, long)
    res = fuse(fn)
    assert res.changed, res.report
    assert [op.attrs["mask"] for op in attention_ops(res.fn)] == ["causal"]
