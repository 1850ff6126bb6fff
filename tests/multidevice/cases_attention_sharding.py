"""Fused attention in a partitioned jit (FSDP through in_shardings) on 8 CPU devices: cuDNN's
forward and backward calls are emitted per device inside `sdy.manual_computation`s split over
the batch axis (`passes/attention_sharding.py`), a refused proof leaves attention as written,
and on the CPU the program and its results are what they were.

The CUDA-target module is emitted on the CPU host with the fault-injection switch
(`PUREJIT_ATTENTION_INJECT_CUDA=1`) and Hopper's limits for the rewrite; XLA's CPU compiler
then refuses the cuDNN calls, purejit decomposes them (inside the manual computations) and
the step runs."""

import contextlib
import os
import re
import warnings

import numpy as np

import purejit
from bench import tp_train_model as model
from purejit import fused_attention
from purejit.backend import cudnn_fmha
from purejit.ir import dtypes, interpret
from purejit.sharding import Mesh

HOPPER = {"max_head_dim": 256, "distinct_v_head_dim": True, "window": True}
MESH = Mesh(np.array(purejit.devices()[:4]), ("fsdp",))
BATCH, SEQ, WIDTH, HIDDEN, HEADS = 8, 16, 32, 64, 2


@contextlib.contextmanager
def cuda_target():
    """Emit for a CUDA target with cuDNN (Hopper) on this CPU host."""
    old = fused_attention.target_options
    os.environ["PUREJIT_ATTENTION_INJECT_CUDA"] = "1"
    fused_attention.target_options = lambda: HOPPER
    cudnn_fmha.refusals.clear()
    try:
        yield
    finally:
        del os.environ["PUREJIT_ATTENTION_INJECT_CUDA"]
        fused_attention.target_options = old
        cudnn_fmha.refusals.clear()


def inputs():
    return model.make_inputs(1, BATCH, SEQ, WIDTH, HIDDEN, dtypes.bfloat16)


def fsdp_step(batch_spec=None, **options):
    """bench.tp_train's fsdp_jit step (one layer); `batch_spec` replaces x's and y's spec."""
    P = purejit.sharding.PartitionSpec
    st, xs, ys = model.state_specs(P, "fsdp_jit", 1)
    if batch_spec is not None:
        xs = ys = batch_spec
    sh = model.shardings(purejit, MESH, (st, xs, ys, P()))
    single = model.make_steps(purejit, {}, HEADS, 1)["single"]
    jit_options = {"compiler_options": options} if options else {}
    return purejit.jit(single, in_shardings=sh[:3], out_shardings=(sh[0], sh[3]), **jit_options)


def manual_regions(text):
    """(in_shardings, out_shardings, body text) of each sdy.manual_computation."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"in_shardings=\[(.*)\] out_shardings=\[(.*)\] manual_axes", line)
        if "sdy.manual_computation" not in line or m is None:
            continue
        depth, body = len(line) - len(line.lstrip()), []
        for inner in lines[i + 1 :]:
            if len(inner) - len(inner.lstrip()) <= depth:
                break
            body.append(inner)
        out.append((m.group(1), m.group(2), "\n".join(body)))
    return out


def case_fsdp_step_emits_cudnn_forward_and_backward_per_device():
    with cuda_target():
        state, x, y = inputs()
        lowered = fsdp_step().lower(state, x, y)
        text = lowered.as_text()
        regions = manual_regions(text)
        calls = re.findall(r"__cudnn\$fmha\w*", text)
        assert sorted(calls) == ["__cudnn$fmhaSoftmax", "__cudnn$fmhaSoftmaxBackward"], calls
        (fwd,) = [r for r in regions if 'fmhaSoftmax"' in r[2] or "fmhaSoftmax(" in r[2]]
        (bwd,) = [r for r in regions if "fmhaSoftmaxBackward" in r[2]]
        split4 = '<@mesh, [{"fsdp"}, {}, {}, {}]>'
        split3 = '<@mesh, [{"fsdp"}, {}, {}]>'
        # q, k, v split over the batch axis; out and the statistics leave the forward split
        # as the backward takes them in (q, k, v, out, stats, d_out)
        assert fwd[0] == ", ".join([split4] * 3) and fwd[1] == f"{split4}, {split3}", fwd[:2]
        assert bwd[0] == ", ".join([split4] * 4 + [split3, split4]), bwd[0]
        assert bwd[1] == ", ".join([split4] * 3), bwd[1]
        # cuDNN sees the per-device batch: 8 over 4 devices
        assert "tensor<2x16x2x16xbf16>" in fwd[2] and "tensor<8x16x2x16xbf16>" not in fwd[2]
        notes = [e for e in lowered.attention if e["where"] == "shardings"]
        assert [e["batch_axes"] for e in notes] == [("fsdp",)] * 2, notes


def case_a_refused_proof_leaves_attention_as_written():
    P = purejit.sharding.PartitionSpec
    with cuda_target():
        state, x, y = inputs()
        # the batch is replicated: no split to run the attention per device over
        lowered = fsdp_step(batch_spec=P()).lower(state, x, y)
        assert "__cudnn" not in lowered.as_text()
        assert not [op for op in lowered.fn.walk() if op.name.startswith("dot_product_att")]
        notes = [e for e in lowered.attention if e["where"] == "shardings"]
        assert len(notes) == 2 and not any(e["fused"] for e in notes), notes
        assert "does not provably follow" in notes[0]["reason"], notes
        assert "left as written" in notes[0]["reason"], notes
        off = fsdp_step(batch_spec=P(), fused_attention=False).lower(state, x, y)
        assert lowered.ir() == off.ir()


def case_on_the_cpu_the_partitioned_program_is_unchanged():
    state, x, y = inputs()
    lowered = fsdp_step().lower(state, x, y)
    off = fsdp_step(fused_attention=False).lower(state, x, y)
    assert lowered.ir() == off.ir() and "manual_computation" not in lowered.ir()
    assert lowered.as_text() == off.as_text()
    # the same module: the same results as before per-device attention existed


def case_per_device_attention_keeps_the_results():
    # interpreter: the per-device program against the same program run whole; compiled:
    # XLA's CPU refuses cuDNN's calls, they are decomposed inside the manual computations,
    # and the step matches the one whose attention stays as written
    with cuda_target():
        state, x, y = inputs()
        lowered = fsdp_step().lower(state, x, y)
        flat = [np.asarray(a) for a in purejit.tree_util.tree_leaves((state, x, y))]
        fn = lowered.fn
        assert any(op.name == "manual_computation" for op in fn.ops)
        whole = fsdp_step(fused_attention=False).lower(state, x, y).fn
        wants = interpret(whole, *flat)
        for got, want in zip(interpret(fn, *flat), wants):
            np.testing.assert_allclose(np.float32(got), np.float32(want), atol=2e-2, rtol=2e-2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = fsdp_step()(*inputs())
        assert any("refused fused attention" in str(m.message) for m in w)
        for got, want in zip(purejit.tree_util.tree_leaves(out), wants):
            np.testing.assert_allclose(np.float32(got), np.float32(want), atol=2e-2, rtol=2e-2)


def case_undoing_the_rewrite_keeps_explicit_attention_per_device():
    # the hand-written attention reads a replicated argument (refused), the explicit call a
    # split one (proved): the program is traced again without the rewrite, and the explicit
    # call still runs per device
    import purejit.numpy as jnp
    from purejit import nn as pnn
    from purejit.sharding import NamedSharding, PartitionSpec as P

    bf = dtypes.bfloat16
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SEQ, 2, 16)).astype(bf)
    m = rng.standard_normal((BATCH, SEQ, 3, 2, 16)).astype(bf)
    causal = np.tril(np.ones((SEQ, SEQ), bool))

    def loss(x, m):
        a = pnn.dot_product_attention(x, x, x, is_causal=True)
        b = model._attention_by_hand(jnp, m, causal)
        return (a.astype(np.float32) ** 2).sum() + (b.astype(np.float32) ** 2).sum()

    sh = (NamedSharding(MESH, P("fsdp")), NamedSharding(MESH, P()))
    with cuda_target():
        lowered = purejit.jit(purejit.grad(loss, argnums=(0, 1)), in_shardings=sh).lower(x, m)
        ops = [op.name for op in lowered.fn.walk()]
        assert ops.count("dot_product_attention") == 1 and ops.count("manual_computation") == 2
        notes = [e for e in lowered.attention if e["where"] == "shardings"]
        assert [e["fused"] for e in notes] == [False, False, True, True], notes
        assert "left as written" in notes[0]["reason"], notes


def case_a_partitioned_program_keeps_its_projections_whole():
    # the projection split's barrier would hold each weight's columns with the layer's input,
    # and the partitioner's all-gather of those columns behind it would wait for the layer
    # (passes/split_projection.py, fused_attention.make_pass): a jit with shardings keeps one
    # product per projection; the same step on one device is split (so this can fail)
    old = fused_attention.target_options
    with cuda_target():
        fused_attention.target_options = lambda: {**HOPPER, "split_min_flops": 0}
        try:
            state, x, y = inputs()
            single = model.make_steps(purejit, {}, HEADS, 1)["single"]
            one = purejit.jit(single).lower(state, x, y)
            sharded = fsdp_step().lower(state, x, y)
        finally:
            fused_attention.target_options = old
    dots = [sum(op.name == "dot_general" for op in lowered.fn.walk()) for lowered in (one, sharded)]
    assert dots[0] > dots[1], dots
    assert "manual_computation" in sharded.ir()
    assert not [op for op in sharded.fn.walk() if op.name == "optimization_barrier"]
