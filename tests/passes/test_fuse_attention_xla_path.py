"""`purejit.nn.dot_product_attention(implementation="xla")` asks for the XLA path: the rewrite
never fuses it, as a GPU compile runs it (the pass and the pipeline on CPU with the target's
options), while the same program written by hand (`xla_attention` called directly) fuses.
The marked program computes bit for bit what the unmarked one does."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import fused_attention, nn
from purejit.nn.attention import xla_attention
from purejit.passes.fuse_attention import XLA_PATH, XLA_PATH_REASON

from tests.passes.attention_util import BF16, attention_ops, fuse, traced

B, T, N, K, H = 2, 8, 4, 2, 16
R = np.random.default_rng(0)
BIAS = R.standard_normal((1, N, T, T)).astype(BF16)

# case: (keyword arguments, the fused mask kind, k/v heads); "padding" takes the key/value
# sequence lengths as one more argument (traced: constant lengths are a constant mask; query
# lengths are left out as the rewrite refuses the XLA path's zeroing of rows past them)
CASES = {
    "plain": (dict(), "none", N),
    "causal": (dict(is_causal=True), "causal", N),
    "gqa": (dict(is_causal=True), "causal", K),
    "bias": (dict(bias=BIAS), "none", N),
    "padding": (dict(padding=True), "padding", N),
}


@pytest.fixture(autouse=True)
def gpu_target(monkeypatch):
    """Compile as for a GPU with the fused kernel (the op lowers decomposed on CPU)."""
    monkeypatch.setattr(fused_attention, "target_options", lambda: {"max_head_dim": 256})


def _by_nn(kw):
    def f(q, k, v, *lens):
        kw2 = {x: y for x, y in kw.items() if x != "padding"}
        if lens:
            kw2.update(key_value_seq_lengths=lens[0])
        return nn.dot_product_attention(q, k, v, implementation="xla", **kw2)

    return f


def _by_hand(kw):
    """The same program, written by hand: `xla_attention`'s ops with nothing marking them."""

    def f(q, k, v, *lens):
        bias = None if kw.get("bias") is None else jnp.asarray(kw["bias"])
        kl = lens[0] if lens else None
        return xla_attention(q, k, v, bias, None, kw.get("is_causal", False), H**-0.5,
                             None, kl, None, False)  # fmt: skip

    return f


def _shapes(kh, kw, lead=()):
    lens = [("int", (B,), T + 1)] if kw.get("padding") else []
    return [(*lead, B, T, N, H), (*lead, B, T, kh, H), (*lead, B, T, kh, H), *lens]


def _vmap(f, kw):
    """`f` mapped over a leading axis of q, k and v (the lengths shared)."""
    return purejit.vmap(f, in_axes=(0, 0, 0) + ((None,) if kw.get("padding") else ()))


def _loss(f):
    return lambda q, k, v, *lens: (f(q, k, v, *lens).astype(jnp.float32) ** 2).mean()


def _fused_ops(fn) -> int:
    return sum(op.name.startswith("dot_product_attention") for op in fn.walk())


@pytest.mark.parametrize("case", CASES)
def test_the_pass_refuses_the_xla_path_and_fuses_the_same_program_by_hand(case):
    kw, mask, kh = CASES[case]
    res = fuse(traced(_by_hand(kw), *_shapes(kh, kw))[0])
    assert res.changed and [op.attrs["mask"] for op in attention_ops(res.fn)] == [mask]
    fn, _ = traced(_by_nn(kw), *_shapes(kh, kw))
    calls = [op.attrs["callee"] for op in fn.ops if op.name == "call"]
    assert calls == [XLA_PATH]
    res = fuse(fn)
    assert not res.changed and res.fn is fn
    assert [r["reason"] for r in res.report["refused"]] == [XLA_PATH_REASON]
    # under vmap the call is batched, keeps its name and stays unfused
    fn, _ = traced(_vmap(_by_nn(kw), kw), *_shapes(kh, kw, (3,)))
    res = fuse(fn)
    assert not res.changed and res.report["refused"][0]["reason"] == XLA_PATH_REASON
    if case != "padding":  # (lengths over one of two folded batch axes are refused)
        fn, _ = traced(_vmap(_by_hand(kw), kw), *_shapes(kh, kw, (3,)))
        assert fuse(fn).changed


def _lower(f, args, **opts):
    return purejit.jit(f, compiler_options=opts or None).lower(*args)


@pytest.mark.parametrize("case", ["causal", "gqa", "bias", "padding"])
def test_jit_grad_vmap_scan_and_checkpoint_never_fuse_the_xla_path(case):
    kw, _, kh = CASES[case]
    _, args = traced(_by_nn(kw), *_shapes(kh, kw))

    def scanned(f):
        return lambda q, k, v, *ls: purejit.lax.scan(lambda c, _: (f(c, k, v, *ls), None), q,
                                                     None, length=2)[0]  # fmt: skip

    n = len(args)

    def forms(f):
        return {
            "jit": f,
            "grad": purejit.grad(_loss(f), argnums=(0, 1, 2)),
            "vmap(grad)": purejit.vmap(purejit.grad(_loss(f)), in_axes=(0, *[None] * (n - 1))),
            "grad(scan)": purejit.grad(_loss(scanned(f))),
            "grad(checkpoint)": purejit.grad(_loss(purejit.checkpoint(f)), argnums=(0, 1, 2)),
        }

    for name, g in forms(_by_nn(kw)).items():
        a = (np.stack([args[0]] * 2), *args[1:]) if name.startswith("vmap") else args
        lowered = _lower(g, a)
        assert _fused_ops(lowered.fn) == 0, name
        reasons = [e["reason"] for e in lowered.attention]
        for rec in lowered.records:
            if rec.name == "fuse_attention":
                reasons += [r["reason"] for r in rec.report.get("refused", [])]
        assert set(reasons) <= {XLA_PATH_REASON}, (name, reasons)
    for name, g in forms(_by_hand(kw)).items():
        a = (np.stack([args[0]] * 2), *args[1:]) if name.startswith("vmap") else args
        assert _fused_ops(_lower(g, a).fn) > 0, name


def _bits(x):
    return [np.asarray(a).view(np.uint16) for a in jax.tree_util.tree_leaves(x)]


def test_outputs_and_gradients_are_bit_identical_to_the_unmarked_program():
    # fused_attention off: the rewrite never runs, so the program is traced with no call
    kw, kh = dict(is_causal=True, padding=True), K
    _, args = traced(_by_nn(kw), *_shapes(kh, kw))
    f = _by_nn(kw)
    forms = [f, purejit.grad(_loss(f), argnums=(0, 1, 2)), _vmap(f, kw)]
    for g in forms:
        a = [np.stack([x, x[::-1]]) for x in args[:3]] + args[3:] if g is forms[-1] else args
        on = purejit.jit(g)
        off = purejit.jit(g, compiler_options={"fused_attention": False})
        assert "call" in [op.name for op in on.lower(*a).traced.walk()]
        assert "call" not in [op.name for op in off.lower(*a).traced.walk()]
        for x, y in zip(_bits(on(*a)), _bits(off(*a))):
            np.testing.assert_array_equal(x, y)
    # and within JAX's tolerance of jax.nn.dot_product_attention(implementation="xla")
    a32 = [np.asarray(x, np.float32) if x.dtype == BF16 else x for x in args]
    jkw = {k: (np.asarray(v, np.float32) if k == "bias" else v) for k, v in kw.items()}
    if jkw.pop("padding", False):
        jkw.update(key_value_seq_lengths=a32[3])
    want = jax.nn.dot_product_attention(*a32[:3], implementation="xla", **jkw)
    got = purejit.jit(_by_nn(kw))(*a32)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-6)


def test_the_emitted_module_has_no_cudnn_call(monkeypatch):
    # emission as for a CUDA device (cuDNN's custom calls in the text; nothing is compiled)
    monkeypatch.setenv("PUREJIT_ATTENTION_INJECT_CUDA", "1")
    kw, _, kh = CASES["gqa"]
    _, args = traced(_by_nn(kw), *_shapes(kh, kw))
    for f, fused in ((_by_nn(kw), False), (_by_hand(kw), True)):
        for g in (f, purejit.grad(_loss(f), argnums=(0, 1, 2))):
            assert ("__cudnn$fmhaSoftmax" in purejit.jit(g).lower(*args).as_text()) is fused
