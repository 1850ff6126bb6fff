"""The projection split that runs with fused attention (`passes/split_projection.py`): a qkv
projection only sliced into the fused op's q, k and v becomes one product per part; every
other use of a product is left alone. IR before and after, the interpreter, and gradients
through `jit` as a GPU compile would run them (the op lowers decomposed on CPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import fused_attention, nn
from purejit.ir import interpret, print_function, verify
from purejit.passes.split_projection import split_projections

from tests.passes.attention_util import BF16, attention_ops, fuse, traced

B, T, D, N = 2, 16, 64, 4
H = D // N


def _attend(q, k, v):
    """Causal attention written by hand on [B, T, N, H] tensors."""
    s = jnp.einsum("btnh,bsnh->bnts", q, k) * (1.0 / math.sqrt(H))
    s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -1e9)
    p = nn.softmax(s.astype(jnp.float32)).astype(q.dtype)
    return jnp.einsum("bnts,bsnh->btnh", p, v)


def packed(x, w):
    """nanoGPT's form: one projection, reshaped to (3, N, H) and indexed."""
    qkv = jnp.reshape(x @ w, (B, T, 3, N, H))
    return _attend(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2])


def split_last(x, w):
    """`jnp.split` of the last dimension (no reshape between product and slices)."""
    q, k, v = jnp.split(x @ w, 3, axis=-1)
    return _attend(*(jnp.reshape(a, (B, T, N, H)) for a in (q, k, v)))


def _products(fn):
    return [op for op in fn.ops if op.name == "dot_general"]


def _fused_and_split(f):
    fn, args = traced(f, (B, T, D), (D, 3 * D))
    res = fuse(fn, split_min_flops=0)
    assert len(attention_ops(res.fn)) == 1, res.report
    verify(res.fn)
    return fn, res, args


@pytest.mark.parametrize("f", [packed, split_last])
def test_a_projection_sliced_into_q_k_v_becomes_three_products(f):
    fn, res, args = _fused_and_split(f)
    before = [op.results[0].type.shape for op in _products(fn)]
    after = [op.results[0].type.shape for op in _products(res.fn)]
    print("before:", print_function(fn), "after:", print_function(res.fn), sep="\n")
    assert (B, T, 3 * D) in before
    # q, k and v each from its own product with a D-column slice of w; no activation slice
    assert after.count((B, T, D)) == 3 and (B, T, 3 * D) not in after
    w = fn.params[1]
    cols = [op for op in res.fn.ops if op.name == "slice" and op.operands[0] is w]
    assert [(op.attrs["start_indices"][1], op.attrs["limit_indices"][1]) for op in cols] == [
        (0, D), (D, 2 * D), (2 * D, 3 * D)
    ]  # fmt: skip
    assert not [op for op in res.fn.ops if op.name == "slice" and op.operands[0] is not w]
    assert res.report["split"] and "product into 3 products" in res.report["split"][0]["split"]
    # the same numbers as the fused program without the split (float32 sums in the
    # interpreter over the same contraction)
    unsplit = fuse(fn, split_projections=False)
    assert "split" not in fuse(fn).report  # parts far below MIN_PART_FLOPS: one product
    assert "split" not in unsplit.report
    for a, b in zip(interpret(res.fn, *args), interpret(unsplit.fn, *args)):
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
    # and the written program's within attention's bf16 tolerance
    for a, b in zip(interpret(res.fn, *args), interpret(fn, *args)):
        a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
        np.testing.assert_allclose(a32, b32, atol=2e-2 * np.abs(b32).max(), rtol=2e-2)


def _still_one_product(f, *shapes):
    fn, _ = traced(f, *shapes)
    res = fuse(fn, split_min_flops=0)
    assert len(attention_ops(res.fn)) == 1, res.report
    assert "split" not in res.report
    wide = [op for op in _products(res.fn) if op.results[0].type.shape[-1] == 3 * D]
    assert len(wide) == 1
    return res


def test_a_projection_also_used_elsewhere_is_not_split():
    def f(x, w):
        y = x @ w
        qkv = jnp.reshape(y, (B, T, 3, N, H))
        return _attend(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]), y.sum()

    _still_one_product(f, (B, T, D), (D, 3 * D))


def test_a_slice_that_also_cuts_another_dimension_is_not_split():
    def f(x, w):
        qkv = jnp.reshape(x @ w, (B, T, 3, N, H))
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        return _attend(q, k, v), qkv[:, :4, 0].sum()  # a fourth slice, cut along T too

    _still_one_product(f, (B, T, D), (D, 3 * D))


def test_slices_that_feed_no_attention_are_left_alone():
    def f(x, w):
        qkv = jnp.reshape(x @ w, (B, T, 3, N, H))
        return qkv[:, :, 0] * qkv[:, :, 1] + qkv[:, :, 2]

    fn, _ = traced(f, (B, T, D), (D, 3 * D))
    res = fuse(fn, split_min_flops=0)
    assert not res.changed and res.fn is fn


def test_a_batched_product_is_not_split():
    def f(x, w):  # w per batch element: dot_general with batch dimensions
        qkv = jnp.reshape(jnp.einsum("btd,bde->bte", x, w), (B, T, 3, N, H))
        return _attend(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2])

    fn, _ = traced(f, (B, T, D), (B, D, 3 * D))
    res = fuse(fn, split_min_flops=0)
    assert len(attention_ops(res.fn)) == 1 and "split" not in res.report


def test_split_projections_leaves_a_program_without_attention_unchanged():
    fn, _ = traced(lambda x, w: jnp.split(x @ w, 3, axis=-1), (B, T, D), (D, 3 * D))
    out, report = split_projections(fn, 0)
    assert out is fn and report == []


def _loss(x, w):
    return (packed(x, w).astype(jnp.float32) ** 2).mean()


def test_grad_through_the_split_equals_the_unsplit_program(monkeypatch):
    # the op lowers to its decomposed program off-GPU, so the whole path runs on CPU
    monkeypatch.setattr(
        fused_attention, "target_options", lambda: {"max_head_dim": 256, "split_min_flops": 0}
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, T, D)).astype(BF16)
    w = (rng.standard_normal((D, 3 * D)) / math.sqrt(D)).astype(BF16)
    f = purejit.jit(purejit.value_and_grad(_loss, argnums=(0, 1)))
    lowered = f.lower(x, w)
    shapes = [op.results[0].type.shape for op in lowered.traced.walk() if op.name == "dot_general"]
    assert shapes.count((B, T, D)) >= 3 and (B, T, 3 * D) not in shapes
    value, grads = f(x, w)
    purejit.config.update("attention_split_projections", False)
    try:
        shapes0 = [op.results[0].type.shape for op in f.lower(x, w).traced.walk()
                   if op.name == "dot_general"]  # fmt: skip
        assert (B, T, 3 * D) in shapes0
        off = purejit.jit(purejit.value_and_grad(_loss, argnums=(0, 1)))
        v0, g0 = off(x, w)
    finally:
        purejit.config.update("attention_split_projections", True)
    np.testing.assert_allclose(float(value), float(v0), rtol=1e-2)
    for a, b in zip(grads, g0):
        a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
        np.testing.assert_allclose(a32, b32, atol=1e-2 * np.abs(b32).max(), rtol=1e-2)
