"""The per-device attention of partitioned programs (`passes/attention_sharding.py`): which
mesh axes an attention op's batch provably follows, the refusals, and the rewrite into a
`manual_computation` (IR before/after, interpreter equal). The programs are traced on one
device; the mesh axes of each parameter are given as the pass takes them from in_shardings.
Emission and the partitioned compile run on 8 CPU devices (tests/multidevice)."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import nn as pnn
from purejit.ir import dtypes, interpret, parse, print_function, verify
from purejit.passes.attention_sharding import ShardAttention, prove

BF = dtypes.bfloat16
B, T, N, H = 4, 16, 2, 8
D = N * H
RNG = np.random.default_rng(0)
X = RNG.standard_normal((B, T, D)).astype(np.float32)
W = (RNG.standard_normal((D, 3 * D)) * 0.2).astype(np.float32)


def _heads(x, w):
    qkv = (x @ w).reshape(x.shape[0], T, 3, N, H).astype(BF)
    return qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]


def _training(loss, *args):
    """The program of jit(value_and_grad(loss)) (forward and backward attention ops)."""
    return purejit.jit(purejit.value_and_grad(loss)).lower(*args).fn


def _attention_loss(w, x):
    o = pnn.dot_product_attention(*_heads(x, w), is_causal=True)
    return jnp.mean(o.astype(np.float32) ** 2)


def _proved(fn, param_axes, sizes):
    return [(p.op.name, p.axes, p.reason) for p in prove(fn, param_axes, sizes)]


def test_batch_of_a_split_argument_is_proved_for_forward_and_backward():
    fn = _training(_attention_loss, W, X)
    # x split over "fsdp"; w split too (FSDP): its rows are contracted, which mixes w's
    # rows, not x's
    for w_axes in ((), ("fsdp",)):
        got = _proved(fn, (w_axes, ("fsdp",)), {"fsdp": 2})
        assert got == [
            ("dot_product_attention", ("fsdp",), None),
            ("dot_product_attention_bwd", ("fsdp",), None),
        ]
    got = _proved(fn, ((), ("data", "fsdp")), {"data": 2, "fsdp": 2})
    assert [a for _, a, _ in got] == [("data", "fsdp")] * 2


def test_batch_of_a_replicated_argument_is_refused():
    fn = _training(_attention_loss, W, X)
    for _, axes, why in _proved(fn, (("fsdp",), ()), {"fsdp": 2}):
        assert axes is None and "does not provably follow" in why, why


def test_batch_mixed_across_rows_is_refused():
    def normalised(w, x):  # every row reads the batch mean
        return _attention_loss(w, x - jnp.mean(x, axis=0, keepdims=True))

    fwd, _ = _proved(_training(normalised, W, X), ((), ("fsdp",)), {"fsdp": 2})
    assert fwd[1] is None and "mixed across the batch" in fwd[2] and "reduce" in fwd[2], fwd


def test_batch_mixed_by_a_transpose_across_rows_is_refused():
    def symmetrised(w, x):  # row i of x + xᵀ reads rows i and j of x
        return _attention_loss(w, x + jnp.swapaxes(x, 0, 1))

    sq = RNG.standard_normal((T, T, D)).astype(np.float32)
    fwd, _ = _proved(_training(symmetrised, W, sq), ((), ("fsdp",)), {"fsdp": 2})
    assert fwd[1] is None and "same rows along two axes" in fwd[2], fwd


def test_batch_from_a_transposed_argument_is_refused():
    def swapped(w, xt):  # xt is [T, B, D], split along T: the batch follows no split axis
        return _attention_loss(w, jnp.swapaxes(xt, 0, 1))

    xt = np.ascontiguousarray(np.swapaxes(X, 0, 1))
    got = _proved(_training(swapped, W, xt), ((), ("fsdp",)), {"fsdp": 2})
    assert all(a is None and "does not provably follow" in why for _, a, why in got), got


def test_indivisible_batch_and_different_splits_are_refused():
    fn = _training(_attention_loss, W, X)
    (_, axes, why), _ = _proved(fn, ((), ("fsdp",)), {"fsdp": 3})
    assert axes is None and "batch 4 does not divide over ('fsdp',) (3 devices)" in why

    def cross(x, m):  # q from x, k and v from m
        q = _heads(x, W)[0]
        _, k, v = _heads(m, W)
        return pnn.dot_product_attention(q, k, v)

    fn = purejit.jit(cross).lower(X, X).fn
    ((_, axes, why),) = _proved(fn, (("a",), ("b",)), {"a": 2, "b": 2})
    assert axes is None and "split differently" in why and "over ('b',)" in why, why
    ((_, axes, _),) = _proved(fn, (("a",), ("a",)), {"a": 2})
    assert axes == ("a",)  # different arguments split over the same axes agree


def test_attention_inside_control_flow_is_refused():
    def looped(w, x):
        def body(c, _):
            return c + _attention_loss(w, x), None

        return purejit.lax.scan(body, jnp.float32(0), None, length=2)[0]

    fn = purejit.jit(looped).lower(W, X).fn
    got = _proved(fn, ((), ("fsdp",)), {"fsdp": 2})
    assert got and all("control flow" in why for _, _, why in got), got


def test_the_rewrite_runs_each_proved_op_per_device():
    fn = _training(_attention_loss, W, X)
    shard = ShardAttention(("fsdp",), (2,), (0, 1), ((), ("fsdp",)))
    res = shard(fn)
    assert res.changed and [e["batch_axes"] for e in res.report["sharded"]] == [("fsdp",)] * 2
    verify(res.fn)
    manual = [op for op in res.fn.ops if op.name == "manual_computation"]
    assert [op.regions[0].ops[0].name for op in manual] == [
        "dot_product_attention",
        "dot_product_attention_bwd",
    ]
    fwd, bwd = manual
    # the statistics and the output leave the forward split as the backward takes them in
    assert fwd.attrs["out_specs"] == ((("fsdp",), (), (), ()), (("fsdp",), (), ()))
    outs = dict(zip(fwd.results, fwd.attrs["out_specs"]))
    for v, s in zip(bwd.operands, bwd.attrs["in_specs"]):
        assert s[0] == ("fsdp",)
        assert outs.get(v, s) == s
    assert fwd.regions[0].params[0].type.shape == (B // 2, T, N, H)
    for want, got in zip(interpret(fn, W, X), interpret(res.fn, W, X)):
        np.testing.assert_array_equal(np.float32(got), np.float32(want))
    # refused: the program is returned as it was
    same = ShardAttention(("fsdp",), (2,), (0, 1), ((), ()))(fn)
    assert same.fn is fn and not same.changed and len(same.report["refused"]) == 2


BEFORE = """\
func @f(%0: bf16[4,8,2,8], %1: bf16[4,8,2,8], %2: bf16[4,8,2,8]) -> (bf16[4,8,2,8]) {
  %3 = dot_product_attention(%0, %1, %2) {scale=0.5, mask="causal", window=none, \
has_bias=false, has_seq_lengths=false, return_stats=false} : (bf16[4,8,2,8])
  return %3
}"""

AFTER = """\
func @f(%0: bf16[4,8,2,8], %1: bf16[4,8,2,8], %2: bf16[4,8,2,8]) -> (bf16[4,8,2,8]) {
  %3 = manual_computation(%0, %1, %2) {axis_names=["x"], mesh_shape=[2], device_ids=[0, 1], \
in_specs=[[["x"], [], [], []], [["x"], [], [], []], [["x"], [], [], []]], \
out_specs=[[["x"], [], [], []]], check_vma=false} : (bf16[4,8,2,8]) \
region(%4: bf16[2,8,2,8], %5: bf16[2,8,2,8], %6: bf16[2,8,2,8]) {
    %7 = dot_product_attention(%4, %5, %6) {scale=0.5, mask="causal", window=none, \
has_bias=false, has_seq_lengths=false, return_stats=false} : (bf16[2,8,2,8])
    return %7
  }
  return %3
}"""


def test_ir_before_and_after():
    fn = parse(BEFORE)
    assert print_function(fn) == BEFORE
    res = ShardAttention(("x",), (2,), (0, 1), (("x",), ("x",), ("x",)))(fn)
    assert print_function(res.fn) == AFTER
    args = [RNG.standard_normal(t.shape).astype(BF) for t in fn.param_types]
    np.testing.assert_array_equal(
        np.float32(interpret(res.fn, *args)[0]), np.float32(interpret(fn, *args)[0])
    )


@pytest.mark.parametrize("axes", [(("x",), (), ("x",)), (("x",), ("y",), ("x",))])
def test_k_and_v_must_follow_q(axes):
    fn = parse(BEFORE)
    (p,) = prove(fn, axes, {"x": 2, "y": 2})
    assert p.axes is None


def test_explain_lists_each_decision():
    from purejit.compiler.explain import _attention_lines

    fn = _training(_attention_loss, W, X)
    res = ShardAttention(("fsdp",), (2,), (0, 1), ((), ("fsdp",)))(fn)
    entries = [{"where": "shardings", "fused": True, **e} for e in res.report["sharded"]]
    lines = _attention_lines(entries)
    assert "per device" in lines[0] and "batch split over ['fsdp']" in lines[0], lines
    refused = {"where": "shardings", "fused": False, "loc": "m.py:3", "reason": "no split"}
    assert "refused  m.py:3 (jit): no split" in _attention_lines([refused])[0]


def test_shard_map_bodies_are_left_alone():
    # their attention already runs per device: neither proved nor refused
    from purejit.sharding import Mesh, PartitionSpec as P

    mesh = Mesh(np.array(purejit.devices()[:1]), ("dp",))
    body = purejit.shard_map(
        lambda q, k, v: pnn.dot_product_attention(q, k, v, is_causal=True),
        mesh=mesh,
        in_specs=(P("dp"),) * 3,
        out_specs=P("dp"),
    )
    q = RNG.standard_normal((B, T, N, H)).astype(BF)
    fn = purejit.jit(body).lower(q, q, q).fn
    assert any(op.name == "dot_product_attention" for op in fn.walk())
    assert prove(fn, (("dp",),) * 3, {"dp": 1}) == []
    assert not ShardAttention(("dp",), (1,), (0,), (("dp",),) * 3)(fn).changed


def test_a_barrier_holding_a_batch_mixed_value_leaves_its_other_values_unmixed():
    # GPU programs hold several values behind one optimization_barrier (the projection
    # split's x with weight columns, gradients of unrelated layers): each result follows
    # its own operand, so a mean over the batch beside x does not mix x's rows
    def held(w, x):
        xb, mb = purejit.lax.optimization_barrier((x, jnp.mean(x, axis=0)))
        return _attention_loss(w, xb) + jnp.mean(mb)

    got = _proved(_training(held, W, X), ((), ("fsdp",)), {"fsdp": 2})
    assert [a for _, a, _ in got] == [("fsdp",)] * 2, got
