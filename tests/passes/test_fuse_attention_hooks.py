"""Where the attention rewrite runs: only for a target with the fused kernel and with
`fused_attention` on; on CPU programs are exactly what they were."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import fused_attention, nn
from purejit.compiler.explain import explain_lowered
from purejit.compiler.options import CompilerOptions

from tests.passes.attention_util import BF16


def attn(q, k, v):
    s = jnp.einsum("btnh,bsnh->bnts", q, k) * 0.25
    s = jnp.where(jnp.tril(jnp.ones((8, 8), bool)), s, -1e9)
    return jnp.einsum("bnts,bsnh->btnh", nn.softmax(s.astype(jnp.float32)).astype(q.dtype), v)


def _args():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((2, 8, 4, 16)).astype(BF16) for _ in range(3)]


def test_compiler_option_parses_and_overrides_the_config():
    assert CompilerOptions.parse({"fused_attention": False}).attention_enabled() is False
    assert CompilerOptions.parse({}).attention_enabled() is purejit.config.read("fused_attention")
    with pytest.raises(ValueError, match="fused_attention"):
        CompilerOptions.parse({"fused_attention": "yes"})
    s = CompilerOptions.parse({"fused_attention": False}).remat_settings()
    assert s.fused_attention is False


def test_cpu_runs_no_rewrite_and_results_are_unchanged():
    args = _args()
    on = purejit.jit(attn)
    off = purejit.jit(attn, compiler_options={"fused_attention": False})
    assert "fuse_attention" not in [r.name for r in on.lower(*args).records]
    assert fused_attention.make_pass(True) is None  # no fused kernel on this target
    np.testing.assert_array_equal(np.asarray(on(*args)), np.asarray(off(*args)))
    g_on = purejit.jit(purejit.grad(lambda *a: attn(*a).astype(jnp.float32).sum()))(*args)
    g_off = purejit.jit(
        purejit.grad(lambda *a: attn(*a).astype(jnp.float32).sum()),
        compiler_options={"fused_attention": False},
    )(*args)
    np.testing.assert_array_equal(np.asarray(g_on), np.asarray(g_off))


def test_a_gpu_target_heads_the_pipeline_with_the_pass(monkeypatch):
    monkeypatch.setattr(fused_attention, "target_options", lambda: {"max_head_dim": 128})
    opts = CompilerOptions.parse({})
    p = fused_attention.jit_pass(opts)
    assert p is not None and p.max_head_dim == 128
    assert set(fused_attention.softmax_rule_keys()) <= set(p.trusted_rules)
    assert opts.pipeline(None, p).names()[0] == "fuse_attention"
    assert fused_attention.jit_pass(CompilerOptions.parse({"fused_attention": False})) is None
    # the pass the pipeline would run fuses the traced program
    j = purejit.jit(attn)
    fn = j.trace_signature(j.signature(_args(), {}, shapes_only=True))
    res = p(fn)
    assert [op.name for op in res.fn.ops].count("dot_product_attention") == 1
    assert res.report["fused"][0]["mask"] == "causal"


def test_only_purejits_softmax_rules_are_trusted():
    @purejit.custom_jvp
    def softmax(x):
        return nn.softmax(x)

    softmax.defjvp(lambda p, t: (softmax(p[0]), t[0]))
    j = purejit.jit(lambda x: (softmax(x), nn.softmax(x), purejit.vmap(nn.softmax)(x)))
    fn = j.trace_signature(j.signature([np.ones((2, 3), np.float32)], {}, shapes_only=True))
    keys = [op.attrs["rule"] for op in fn.ops if op.name == "custom_jvp_call"]
    trusted = fused_attention.softmax_rule_keys()
    assert [k in trusted for k in keys] == [False, True, True]


def _loss(q, k, v):
    return (attn(q, k, v).astype(jnp.float32) ** 2).mean()


def test_grad_differentiates_the_fused_op_as_a_gpu_compile_would(monkeypatch):
    # the op lowers to its decomposed program off-GPU, so the whole path runs on CPU
    monkeypatch.setattr(fused_attention, "target_options", lambda: {"max_head_dim": 256})
    args = _args()
    f = purejit.jit(purejit.value_and_grad(_loss, argnums=(0, 1, 2)))
    lowered = f.lower(*args)
    names = [op.name for op in lowered.traced.walk()]
    assert "dot_product_attention" in names, "fused before linearize"
    assert "custom_jvp_call" not in names
    entries = lowered.attention
    assert [(e["where"], e["fused"], e["mask"]) for e in entries] == [("grad", True, "causal")]
    compiled = lowered.compile()
    text = str(explain_lowered(lowered, compiled=compiled))
    assert "fused    " in text and "under grad" in text
    value, grads = compiled(*args)
    off = purejit.jit(
        purejit.value_and_grad(_loss, argnums=(0, 1, 2)),
        compiler_options={"fused_attention": False},
    )
    v0, g0 = off(*args)
    np.testing.assert_allclose(float(value), float(v0), rtol=2e-2)
    for a, b in zip(grads, g0):
        a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
        np.testing.assert_allclose(a32, b32, atol=2e-2 * np.abs(b32).max(), rtol=2e-2)
    # forward-only programs: the jit pipeline's own run
    fwd = purejit.jit(attn).lower(*args)
    assert fwd.records[1].name == "fuse_attention" and fwd.records[1].changed


def test_grad_of_attention_inside_scan_fuses_in_the_loop_body(monkeypatch):
    monkeypatch.setattr(fused_attention, "target_options", lambda: {"max_head_dim": 256})

    def loss(q, k, v):
        def body(x, _):
            return attn(x, k, v), None

        out = purejit.lax.scan(body, q, None, length=2)[0]
        return (out.astype(jnp.float32) ** 2).mean()

    args = _args()
    on = purejit.jit(purejit.grad(loss, argnums=(0, 1, 2)))
    lowered = on.lower(*args)
    assert [e["fused"] for e in lowered.attention] == [True]
    off = purejit.jit(
        purejit.grad(loss, argnums=(0, 1, 2)), compiler_options={"fused_attention": False}
    )
    for a, b in zip(on(*args), off(*args)):
        a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
        np.testing.assert_allclose(a32, b32, atol=3e-2 * np.abs(b32).max(), rtol=3e-2)


def test_partitioned_programs_keep_attention_as_written(monkeypatch):
    # jit with in_shardings/out_shardings fuses only where cuDNN's call can be emitted (not
    # on this CPU host) and runs per device over a proved batch split (here none: the
    # arguments are replicated); tests/multidevice/cases_attention_sharding.py covers both
    from purejit.sharding import Mesh, NamedSharding, PartitionSpec

    monkeypatch.setattr(fused_attention, "target_options", lambda: {"max_head_dim": 256})
    mesh = Mesh(np.array(purejit.devices()[:1]), ("x",))
    rep = NamedSharding(mesh, PartitionSpec())
    args = _args()
    f = purejit.jit(purejit.grad(_loss), in_shardings=(rep, rep, rep))
    lowered = f.lower(*args)
    assert lowered.attention == []
    assert "dot_product_attention" not in [op.name for op in lowered.traced.walk()]
    assert "fuse_attention" not in [r.name for r in lowered.records]
