"""What the attention rewrite tests share: tracing a function, running the pass as a GPU
compile would (on CPU), and checking the fused program against the written one."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import purejit
from purejit import fused_attention
from purejit.ir import interpret, verify
from purejit.passes.fuse_attention import FuseAttention

BF16 = ml_dtypes.bfloat16


def traced(f, *shapes, dtype=BF16, seed=0, scale=1.0):
    """`(fn, args)`: `f` traced by `purejit.jit` for random arrays of `shapes` (normal,
    times `scale`)."""
    rng = np.random.default_rng(seed)
    args = []
    for s in shapes:
        if isinstance(s, tuple) and s and s[0] == "int":  # ("int", shape, high)
            args.append(rng.integers(0, s[2], s[1]).astype(np.int32))
        else:
            args.append((scale * rng.standard_normal(s)).astype(dtype))
    j = purejit.jit(f)
    fn = j.trace_signature(j.signature(args, {}, shapes_only=True))
    return fn, args


def fuse(fn, **options):
    """The pass with purejit.nn.softmax's rules trusted (Hopper limits by default)."""
    return FuseAttention(trusted_rules=fused_attention.softmax_rule_keys(), **options)(fn)


def attention_ops(fn) -> list:
    return [op for op in fn.walk() if op.name == "dot_product_attention"]


def assert_fused(f, *shapes, mask="causal", n=1, tol=2e-2, dtype=BF16, scale=1.0, **options):
    """`f` fuses into `n` attention ops with `mask`, and the interpreter gives the written
    program's numbers within bf16 attention tolerance. Returns the pass result."""
    fn, args = traced(f, *shapes, dtype=dtype, scale=scale)
    res = fuse(fn, **options)
    assert res.changed, res.report
    verify(res.fn)
    ops = attention_ops(res.fn)
    assert len(ops) == n, res.report
    assert {op.attrs["mask"] for op in ops} == {mask}
    assert not any(op.name == "custom_jvp_call" for op in res.fn.walk())
    want = interpret(fn, *args)
    got = interpret(res.fn, *args)
    for a, b in zip(want, got):
        a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
        assert a32.shape == b32.shape
        np.testing.assert_allclose(b32, a32, atol=tol, rtol=tol)
    return res


def assert_refused(f, *shapes, reason: str, dtype=BF16, **options):
    """`f` is left exactly as written and the report names `reason`."""
    fn, _ = traced(f, *shapes, dtype=dtype)
    res = fuse(fn, **options)
    assert not res.changed
    assert res.fn is fn
    reasons = [r["reason"] for r in res.report.get("refused", [])]
    assert any(reason in r for r in reasons), reasons
    return res
