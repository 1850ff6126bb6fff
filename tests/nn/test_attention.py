"""The attention op family and purejit.nn.dot_product_attention: type rules, the NumPy
reference and the XLA-path lowering against jax.nn.dot_product_attention(implementation="xla"),
differentiation through the fused backward, batching, the fallback when XLA refuses a cuDNN
call (fault injection, on the CPU device), and JAX's errors for implementation="cudnn".

Written for the CPU and run on a GPU too: there float32 dots at XLA's default precision are
TF32 (10-bit mantissa, ~1e-3 off here), so numeric comparisons run both libraries at
`default_matmul_precision("highest")` (`_highest`), which keeps their tolerances tight on
every platform; the fused kernels' own numerics are tests/nn/test_attention_gpu.py's."""

from __future__ import annotations

import contextlib
import json
import warnings

import jax
import ml_dtypes
import numpy as np
import pytest

import purejit
import purejit.nn as pnn
from purejit.backend import cudnn_fmha
from purejit.ir import Builder, IRTypeError, TensorType, dtypes
from purejit.ir.ops.attention import (
    attention_attrs,
    attention_grads,
    attention_op,
    attention_reference,
    make_attention_op,
)
from purejit.passes.remat import _may_recompute

R = np.random.default_rng(0)
BF16 = ml_dtypes.bfloat16
B, T, S, N, K, H = 2, 6, 6, 4, 2, 8


@contextlib.contextmanager
def _highest():
    """float32 dots at full precision in JAX and purejit alike: XLA's default on a GPU is TF32
    (on a CPU it is float32 already). purejit's attention op takes the precision in force
    where it is traced into its decomposed dots, as JAX's XLA path does."""
    with jax.default_matmul_precision("highest"), purejit.default_matmul_precision("highest"):
        yield


def _qkv(b=B, t=T, s=S, n=N, k=K, h=H, dtype=np.float32):
    r = np.random.default_rng(t * 100 + n)
    return tuple(
        r.normal(size=shape).astype(dtype) for shape in ((b, t, n, h), (b, s, k, h), (b, s, k, h))
    )


# ---- the op's rules -------------------------------------------------------------------------


def test_type_rule_and_builder():
    bd = Builder("f")
    q, k, v = (bd.param(TensorType(x.shape, x.dtype)) for x in _qkv())
    lens = [bd.param(TensorType((B,), np.int32)) for _ in range(2)]
    out, stats = attention_op(
        bd, q, k, v, scale=0.5, mask="padding", q_seq_lengths=lens[0],
        kv_seq_lengths=lens[1], return_stats=True,
    )  # fmt: skip
    assert str(out.type) == "f32[2,6,4,8]" and str(stats.type) == "f32[2,4,6]"
    bad_k = bd.param(TensorType((B, S, 3, H), np.float32))
    with pytest.raises(IRTypeError, match="multiple of k/v heads"):
        make_attention_op(q, bad_k, bad_k, scale=1.0)
    bias = bd.param(TensorType((B, 3, T, S), np.float32))
    with pytest.raises(IRTypeError, match="broadcast to"):
        make_attention_op(q, k, v, scale=1.0, bias=bias)
    with pytest.raises(ValueError, match="padding masks"):
        attention_attrs(scale=1.0, mask="causal", has_seq_lengths=True)
    with pytest.raises(ValueError, match="window"):
        attention_attrs(scale=1.0, window=(-1, 0))


def test_remat_saves_the_op():
    bd = Builder("f")
    q, k, v = (bd.param(TensorType(x.shape, x.dtype)) for x in _qkv())
    op = make_attention_op(q, k, v, scale=1.0)
    assert op.has_trait("saved") and not _may_recompute(op)


# (mask, window, bias shape): every mask kind, windows and biases among them
CASES = [
    ("none", None, None),
    ("none", (1, 2), (1, N, T, S)),
    ("causal", None, (B, 1, T, S)),
    ("causal", (1, 2), None),
    ("padding", None, (1, N, T, S)),
    ("padding_causal", (1, 2), None),
]
NN_CASES = {0, 2, 5}  # also run through purejit.nn (each compiles a forward and a gradient)


def _jax_kwargs(mask, window, bias, lens):
    pad = mask.startswith("padding")
    return dict(
        bias=bias, scale=0.3, is_causal=mask.endswith("causal"), local_window_size=window,
        query_seq_lengths=lens[0] if pad else None,
        key_value_seq_lengths=lens[1] if pad else None,
    )  # fmt: skip


@pytest.mark.parametrize("case", range(len(CASES)))
def test_reference_and_nn_match_jax_xla(case):
    mask, window, bshape = CASES[case]
    q, k, v = _qkv()
    bias = None if bshape is None else R.normal(size=bshape).astype(np.float32)
    lens = (np.array([3, 6], np.int32), np.array([0, 6], np.int32))  # a batch with no key
    kw = _jax_kwargs(mask, window, bias, lens)
    pad = mask.startswith("padding")
    attrs = attention_attrs(scale=0.3, mask=mask, window=window, has_bias=bias is not None,
                            has_seq_lengths=pad)  # fmt: skip
    args = [q, k, v] + ([bias] if bias is not None else []) + (list(lens) if pad else [])
    d_out = R.normal(size=q.shape).astype(np.float32)

    def jx(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, implementation="xla", **kw)

    with _highest():
        want, want_g = jax.jit(lambda *a: (jx(*a), jax.vjp(jx, *a)[1](d_out)))(q, k, v)
    np.testing.assert_allclose(attention_reference(args, attrs)[0], want, atol=2e-6)
    for got, w in zip(attention_grads(args, attrs, d_out), want_g):
        np.testing.assert_allclose(got, w, atol=5e-6)
    if case not in NN_CASES:
        return
    for impl in (None, "xla"):

        def pj(q, k, v):
            return pnn.dot_product_attention(q, k, v, implementation=impl, **kw)

        loss = lambda q, k, v: (pj(q, k, v) * d_out).sum()  # noqa: E731
        with _highest():
            got, got_g = purejit.jit(
                lambda *a: (pj(*a), purejit.grad(loss, argnums=(0, 1, 2))(*a))
            )(q, k, v)
        np.testing.assert_allclose(got, want, atol=2e-6)
        for g, w in zip(got_g, want_g):
            np.testing.assert_allclose(g, w, atol=5e-6)


@pytest.mark.parametrize("kw", [dict(is_causal=True), dict(padding=True)])
def test_bf16_xla_path_gradient_is_jax_bit_for_bit(kw):
    # JAX's logits dot asks for BF16_BF16_F32, so the backward's dots take the float32
    # cotangent unrounded (XLA's CPU backend contracts it in float32); rounding it to bf16
    # first put dq and dk one bf16 ulp away on most elements. (Grouped heads: below.)
    if purejit.default_backend() != "cpu":
        pytest.skip("the CPU backend's arithmetic (a GPU rounds the cotangent either way)")
    r = np.random.default_rng(7)
    q, k, v, d_out = (r.normal(size=(2, 32, 2, 16)).astype(BF16) for _ in range(4))
    if kw.pop("padding", False):
        kw = dict(query_seq_lengths=np.array([32, 20], np.int32),
                  key_value_seq_lengths=np.array([32, 9], np.int32))  # fmt: skip

    def loss(lib):
        def f(q, k, v):
            out = lib.nn.dot_product_attention(q, k, v, implementation="xla", **kw)
            return (out.astype(np.float32) * d_out.astype(np.float32)).sum()

        return f

    got = purejit.jit(purejit.grad(loss(purejit), argnums=(0, 1, 2)))(q, k, v)
    want = jax.jit(jax.grad(loss(jax), argnums=(0, 1, 2)))(q, k, v)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == BF16
        np.testing.assert_array_equal(np.asarray(g, np.float32), np.asarray(w, np.float32))


def test_bf16_xla_path_gradient_with_grouped_heads_rounds_as_jax():
    # grouped heads in JAX's order ([G,B,K,T,S], as its vmap over the groups leaves them): in
    # purejit's old [B,K,G,T,S], XLA's CPU backend fused the dp product into the softmax's
    # backward and dropped its bf16 rounding at this size, leaving dq and dk one bf16 ulp
    # off on 41% of elements. What is left is the order of a few float32 sums.
    if purejit.default_backend() != "cpu":
        pytest.skip("the CPU backend's fusion")
    r = np.random.default_rng(7)
    q, d_out = (r.normal(size=(2, 256, 8, 64)).astype(BF16) for _ in range(2))
    k, v = (r.normal(size=(2, 256, 4, 64)).astype(BF16) for _ in range(2))

    def loss(lib):
        def f(q, k, v):
            out = lib.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")
            return (out.astype(np.float32) * d_out.astype(np.float32)).sum()

        return f

    got = purejit.jit(purejit.grad(loss(purejit), argnums=(0, 1, 2)))(q, k, v)
    want = jax.jit(jax.grad(loss(jax), argnums=(0, 1, 2)))(q, k, v)
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float32), np.asarray(w, np.float32)
        assert np.mean(g != w) < 1e-3
        np.testing.assert_allclose(g, w, rtol=2**-7, atol=2**-7)


def test_float16_xla_path_asks_for_f16_f16_f32_where_the_backend_runs_it(monkeypatch):
    # JAX's XLA path asks float16 logits for F16_F16_F32 (a GPU's backward rounds the float32
    # cotangent to float16 for it); XLA's CPU backend cannot run it, and there JAX's eager
    # fallback has no algorithm: its backward contracts the float32 cotangent in float32
    q, k, v = _qkv(dtype=np.float16)

    def loss(lib):
        def f(q, k, v):
            out = lib.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")
            return (out.astype(np.float32) ** 2).sum()

        return f

    grad = purejit.grad(loss(purejit), argnums=(0, 1, 2))
    monkeypatch.setattr(pnn.attention.pjrt, "is_gpu", lambda: False)
    assert "algorithm=" not in str(purejit.make_jaxpr(grad)(q, k, v))
    monkeypatch.undo()
    if purejit.default_backend() == "cpu":
        got = purejit.jit(grad)(q, k, v)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = jax.grad(loss(jax), argnums=(0, 1, 2))(q, k, v)  # eager: JAX's fallback
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.float16
            np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(w, np.float32),
                                       rtol=2e-3, atol=2e-3)  # fmt: skip
    monkeypatch.setattr(pnn.attention.pjrt, "is_gpu", lambda: True)
    ir = str(purejit.make_jaxpr(grad)(q, k, v))
    assert ir.count('algorithm=["f16", "f16", "f32", 1, 1, 1, false]') == 3
    # the logits' cotangent, rounded to float16 for each of the two backward products
    assert ir.count("{dtype=f16} : (f16[2,2,6,2,6])") == 2


# ---- purejit.nn.dot_product_attention ----------------------------------------------------------


def test_grouped_heads_vmap_and_value_and_grad():
    def pj(q, k, v):
        return pnn.dot_product_attention(q, k, v, is_causal=True)

    def jx(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=True)

    def loss(f):
        return lambda q, k, v: (f(q, k, v) ** 2).sum()

    for groups in (1, 2, 4):
        q, k, v = _qkv(n=4, k=4 // groups)
        with _highest():
            val, g = purejit.jit(purejit.value_and_grad(loss(pj), argnums=(0, 1, 2)))(q, k, v)
            jval, jg = jax.jit(jax.value_and_grad(loss(jx), argnums=(0, 1, 2)))(q, k, v)
        np.testing.assert_allclose(val, jval, rtol=1e-5)
        for a, b in zip(g, jg):
            np.testing.assert_allclose(a, b, atol=5e-6)
    # vmap over a new leading axis, k and v shared by every example, and its gradient
    qs = np.stack([q, 2 * q])

    def both(lib, f):
        def run(*a):
            vm = lib.vmap(f, in_axes=(0, None, None))(*a)
            return vm, lib.vmap(lib.grad(loss(f)), in_axes=(0, None, None))(*a)

        return run

    with _highest():
        got = purejit.jit(both(purejit, pj))(qs, k, v)
        want = jax.jit(both(jax, jx))(qs, k, v)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, atol=5e-6)


def test_vmap_of_the_bias_gradient_sums_a_broadcast_batch():
    q, k, v = _qkv()
    bias = R.normal(size=(3, 1, N, T, S)).astype(np.float32)  # per example, B = 1

    def f(lib, impl):
        def loss(bias):
            out = lib.nn.dot_product_attention(q, k, v, bias, implementation=impl)
            return (out**2).sum()

        return loss

    with _highest():
        got = purejit.jit(purejit.vmap(purejit.grad(f(purejit, None))))(bias)
        want = jax.jit(jax.vmap(jax.grad(f(jax, "xla"))))(bias)
    np.testing.assert_allclose(got, want, atol=5e-6)


def test_three_d_inputs_mask_and_residual():
    q, k, v = (x[0] for x in _qkv())
    mask = R.random((N, T, S)) > 0.3
    mask[..., 0] = True
    f = lambda lib: lambda *a: lib.nn.dot_product_attention(*a, mask=mask, return_residual=True)  # noqa: E731
    with _highest():
        got, res = purejit.jit(f(purejit))(q, k, v)
        want, wres = jax.jit(f(jax))(q, k, v)
    assert got.shape == (T, N, H) and res.shape == (T, N)
    np.testing.assert_allclose(got, want, atol=2e-6)
    np.testing.assert_allclose(res, wres, atol=2e-5)


def test_gradient_runs_the_fused_backward_op():
    q, k, v = _qkv()

    def loss(q, k, v):
        return pnn.dot_product_attention(q, k, v, is_causal=True).sum()

    ir = purejit.jit(purejit.grad(loss, argnums=(0, 1, 2))).lower(q, k, v).ir()
    print(ir)
    assert "dot_product_attention_bwd(" in ir
    assert "dot_product_attention_lin(" not in ir  # transposed away, never lowered


def test_the_decomposed_op_takes_the_matmul_precision_in_force():
    # JAX's XLA path reads `default_matmul_precision` where it is traced; the op keeps it for
    # every dot of its decomposed forward, backward, batched backward and tangent (it once
    # emitted them at XLA's default: TF32 on a GPU whatever the user asked, ~1e-3 off JAX's)
    q, k, v = _qkv()

    def f(q, k, v):
        return pnn.dot_product_attention(q, k, v, is_causal=True)

    def loss(q, k, v):
        return (f(q, k, v) ** 2).sum()

    cases = [
        (purejit.jit(f), (q, k, v)),
        (purejit.jit(purejit.grad(loss, argnums=(0, 1, 2))), (q, k, v)),
        (purejit.jit(purejit.vmap(purejit.grad(loss), in_axes=(0, None, None))),
         (np.stack([q, q]), k, v)),
        (purejit.jit(lambda q, t: purejit.jvp(lambda q: f(q, k, v), (q,), (t,))[1]), (q, q)),
    ]  # fmt: skip
    pair = "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]"
    for fn, args in cases:
        assert "precision_config" not in fn.lower(*args).as_text()
        with purejit.default_matmul_precision("highest"):
            text = fn.lower(*args).as_text()
        assert "__cudnn" not in text  # float32: decomposed on every platform
        assert text.count(pair) == text.count("stablehlo.dot_general") >= 2, text


def test_second_derivatives_through_the_decomposition():
    q, k, v = _qkv(b=1, t=4, s=4, n=2, k=1, h=4)

    def f(lib):
        def loss(q):
            return (lib.nn.dot_product_attention(q, k, v, is_causal=True) ** 2).sum()

        return loss

    t = R.normal(size=q.shape).astype(np.float32)
    with _highest():
        got = purejit.jit(lambda q, t: purejit.jvp(purejit.grad(f(purejit)), (q,), (t,))[1])(q, t)
        want = jax.jit(lambda q, t: jax.jvp(jax.grad(f(jax)), (q,), (t,))[1])(q, t)
    np.testing.assert_allclose(got, want, atol=1e-4)


def _raised(fn) -> Exception:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return e
    raise AssertionError("no error raised")


def test_cudnn_implementation_raises_jax_errors():
    # float32: no cuDNN on a CPU; on a GPU, cuDNN takes fp16/bf16 only. Either way JAX's
    # error, its exact class (NotImplementedError is a RuntimeError) and message
    q, k, v = _qkv()
    want = _raised(lambda: jax.nn.dot_product_attention(q, k, v, implementation="cudnn"))
    got = _raised(lambda: pnn.dot_product_attention(q, k, v, implementation="cudnn"))
    assert (type(got), str(got)) == (type(want), str(want))
    if purejit.default_backend() == "cpu":
        assert (type(got), str(got)) == (RuntimeError, "cuDNN is not detected.")
    else:
        assert type(got) is NotImplementedError and "fp16/bf16" in str(got)
    with pytest.raises(ValueError, match="Unsupported implementation"):
        pnn.dot_product_attention(q, k, v, implementation="triton")
    tgt = cudnn_fmha.Target(90800, (9, 0))
    f32, bf = TensorType((1, 8, 2, 64), np.float32), TensorType((1, 8, 2, 64), dtypes.bfloat16)
    a = attention_attrs(scale=1.0)
    assert "fp16/bf16" in cudnn_fmha.unsupported_reason(f32, f32, f32, a, None, tgt, training=0)
    odd = TensorType((1, 7, 2, 64), dtypes.bfloat16)
    bias = TensorType((1, 2, 7, 7), dtypes.bfloat16)
    ab = attention_attrs(scale=1.0, has_bias=True)
    assert "sequence length" in cudnn_fmha.unsupported_reason(
        odd, odd, odd, ab, bias, tgt, training=True
    )
    aw = attention_attrs(scale=1.0, window=(4, 2))
    assert "right window" in cudnn_fmha.unsupported_reason(bf, bf, bf, aw, None, tgt, training=0)
    old = cudnn_fmha.Target(90100, (9, 0))
    aw = attention_attrs(scale=1.0, mask="causal", window=(4, 0))
    assert "9.2" in cudnn_fmha.unsupported_reason(bf, bf, bf, aw, None, old, training=0)


# ---- safe by construction: a refused call is decomposed, remembered, said once ---------------


def test_refused_calls_are_decomposed_remembered_and_said_once(tmp_path, monkeypatch):
    # cuDNN calls emitted for the CPU device, whose XLA backend refuses them (pinned to it: a
    # GPU takes these calls; tests/nn/test_attention_gpu.py has a GPU's own refusals)
    monkeypatch.setenv("PUREJIT_ATTENTION_INJECT_CUDA", "1")
    purejit.config.update("cache_dir", str(tmp_path))
    cudnn_fmha.refusals.clear()
    cpu = contextlib.ExitStack()
    cpu.enter_context(purejit.default_device("cpu"))
    cpu.enter_context(jax.default_device(jax.devices("cpu")[0]))
    try:
        q, k, v = _qkv(t=16, s=16, k=N, h=32, dtype=dtypes.bfloat16)

        def f(q, k, v):
            return pnn.dot_product_attention(q, k, v, is_causal=True)

        want = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        jf = purejit.jit(f)
        assert "__cudnn$fmhaSoftmax" in jf.lower(q, k, v).as_text()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = jf(q, k, v)
            g = purejit.jit(purejit.grad(lambda *a: f(*a).astype(np.float32).sum()))(q, k, v)
        said = [x for x in w if "refused fused attention" in str(x.message)]
        assert len(said) == 1, [str(x.message) for x in w]
        np.testing.assert_allclose(np.float32(got), np.float32(want), atol=1e-2)
        assert g.shape == q.shape
        keys = json.loads((tmp_path / cudnn_fmha.Refusals.FILE).read_text())
        assert keys == [
            "injected|90800|bf16|h32|causal|nobias|t0s0|bwd",
            "injected|90800|bf16|h32|causal|nobias|t0s0|fwd",
        ]
        # a new process reads the decision back: the module is decomposed at once
        cudnn_fmha.refusals.clear()
        assert "__cudnn" not in purejit.jit(f).lower(q, k, v).as_text()
        # fused_attention off: no cuDNN call is emitted at all
        purejit.config.update("cache_dir", None)
        cudnn_fmha.refusals.clear()
        purejit.config.update("fused_attention", False)
        assert "__cudnn" not in purejit.jit(f).lower(q, k, v).as_text()
    finally:
        cpu.close()
        purejit.config.update("fused_attention", True)
        purejit.config.update("cache_dir", None)
        cudnn_fmha.refusals.clear()


def test_a_compile_failing_for_another_reason_is_not_taken_for_a_refusal(tmp_path, monkeypatch):
    """A compile that fails without any cuDNN call too (here a compile option XLA does not
    know) raises XLA's error as it is and records no refusal (it once persisted one)."""
    from purejit.backend import pjrt

    monkeypatch.setenv("PUREJIT_ATTENTION_INJECT_CUDA", "1")
    monkeypatch.setenv("PUREJIT_XLA_OPTIONS", "xla_no_such_option_for_this_test=false")
    pjrt.xla_option_overrides.cache_clear()
    purejit.config.update("cache_dir", str(tmp_path))
    cudnn_fmha.refusals.clear()
    try:
        q, k, v = _qkv(t=16, s=16, k=N, h=32, dtype=dtypes.bfloat16)
        jf = purejit.jit(lambda q, k, v: pnn.dot_product_attention(q, k, v, is_causal=True))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with pytest.raises(Exception, match="xla_no_such_option_for_this_test"):
                jf(q, k, v)
        assert not [x for x in w if "refused fused attention" in str(x.message)]
        assert not (tmp_path / cudnn_fmha.Refusals.FILE).exists()
        assert not cudnn_fmha.refusals._keys
    finally:
        monkeypatch.delenv("PUREJIT_XLA_OPTIONS")
        pjrt.xla_option_overrides.cache_clear()
        purejit.config.update("cache_dir", None)
        cudnn_fmha.refusals.clear()


def test_deterministic_mode_and_partitioned_programs_keep_the_backward_decomposed(monkeypatch):
    bd = Builder("f")
    q, k, v = (bd.param(TensorType(x.shape, dtypes.bfloat16)) for x in _qkv(k=N, h=64))
    op = make_attention_op(q, k, v, scale=1.0, mask="causal", return_stats=True)

    class Ctx:
        cudnn_target = cudnn_fmha.Target(90800, (9, 0))

    bwd = type("Op", (), {"operands": op.operands, "attrs": dict(op.attrs, bias_grad=False),
                          "name": "dot_product_attention_bwd"})()  # fmt: skip
    assert cudnn_fmha.plan(Ctx(), bwd, "cuda", backward=True) is not None
    # grouped query heads: the forward is fused, the backward decomposed (numerics contract)
    qg, kg, vg = (bd.param(TensorType(x.shape, dtypes.bfloat16)) for x in _qkv(h=64))
    gop = make_attention_op(qg, kg, vg, scale=1.0, mask="causal", return_stats=True)
    gbwd = type("Op", (), {"operands": gop.operands, "attrs": dict(gop.attrs, bias_grad=False),
                           "name": "dot_product_attention_bwd"})()  # fmt: skip
    assert cudnn_fmha.plan(Ctx(), gop, "cuda", backward=False) is not None
    assert cudnn_fmha.plan(Ctx(), gbwd, "cuda", backward=True) is None
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_deterministic_ops=true")
    assert cudnn_fmha.plan(Ctx(), bwd, "cuda", backward=True) is None
    assert cudnn_fmha.plan(Ctx(), op, "cuda", backward=False) is not None
    with cudnn_fmha.emission(enabled=False):  # what a partitioned program's lowering sets
        assert cudnn_fmha.plan(Ctx(), op, "cuda", backward=False) is None


def test_shard_map_bodies_and_proved_partitioned_jit_emit_the_fused_call(monkeypatch):
    # a shard_map body runs per device over manual mesh axes, so cuDNN's call needs no
    # sharding rule there (as JAX's cuDNN attention under shard_map); jit with shardings
    # has none to give XLA's partitioner, so its attention runs per device in a manual
    # computation where its batch provably follows a split argument, else decomposed
    monkeypatch.setenv("PUREJIT_ATTENTION_INJECT_CUDA", "1")
    from purejit.sharding import Mesh, NamedSharding, PartitionSpec as P

    q, k, v = _qkv(t=16, s=16, k=N, h=32, dtype=dtypes.bfloat16)
    mesh = Mesh(np.array(purejit.devices()[:1]), ("dp",))

    def f(q, k, v):
        return pnn.dot_product_attention(q, k, v, is_causal=True)

    def loss(q, k, v):
        return f(q, k, v).astype(np.float32).sum()

    spec = (P("dp"),) * 3
    body = purejit.shard_map(f, mesh=mesh, in_specs=spec, out_specs=P("dp"))
    text = purejit.jit(body).lower(q, k, v).as_text()
    manual = text[text.index("sdy.manual_computation") :]
    assert "__cudnn$fmhaSoftmax" in manual
    grad_body = purejit.shard_map(
        purejit.grad(loss, argnums=(0, 1, 2)), mesh=mesh, in_specs=spec, out_specs=spec
    )
    assert "__cudnn$fmhaSoftmaxBackward" in purejit.jit(grad_body).lower(q, k, v).as_text()
    off = purejit.jit(body, compiler_options={"fused_attention": False})
    assert "__cudnn" not in off.lower(q, k, v).as_text()
    sh = NamedSharding(mesh, P("dp"))
    partitioned = purejit.jit(f, in_shardings=(sh,) * 3, out_shardings=sh)
    text = partitioned.lower(q, k, v).as_text()
    assert "__cudnn$fmhaSoftmax" in text[text.index("sdy.manual_computation") :]
    rep = NamedSharding(mesh, P())
    replicated = purejit.jit(f, in_shardings=(rep,) * 3, out_shardings=rep)
    assert "__cudnn" not in replicated.lower(q, k, v).as_text()


def test_attention_written_by_hand_fuses_in_a_shard_map_training_step(monkeypatch):
    # under shard_map, constants that meet per-device values are typed by `pvary` (the mask,
    # the fill, the reductions' inits): the rewrite looks through it, as through a
    # broadcast, so bench.tp_train's data-parallel step gets the fused forward and backward
    from bench import tp_train_model

    from purejit import fused_attention

    monkeypatch.setenv("PUREJIT_ATTENTION_INJECT_CUDA", "1")
    hopper = {"max_head_dim": 256, "distinct_v_head_dim": True, "window": True}
    monkeypatch.setattr(fused_attention, "target_options", lambda: hopper)
    rng = np.random.default_rng(0)
    bf = dtypes.bfloat16
    state = tp_train_model.init_state(tp_train_model.init_params(1, 64, 128, rng, bf))
    x = rng.standard_normal((2, 32, 64)).astype(bf)
    devs = np.array(purejit.devices()[:1])
    meshes = {a: purejit.sharding.Mesh(devs, (a,)) for a in ("dp", "tp", "fsdp")}
    steps = tp_train_model.make_steps(purejit, meshes, 4, 1)
    for kind in ("dp", "fsdp"):
        lowered = purejit.jit(steps[kind]).lower(state, x, x)
        assert any(op.name == "pvary" for op in lowered.traced.walk()), kind
        text = lowered.as_text()
        manual = text[text.index("sdy.manual_computation") :]
        assert "__cudnn$fmhaSoftmax" in manual and "__cudnn$fmhaSoftmaxBackward" in manual, kind
