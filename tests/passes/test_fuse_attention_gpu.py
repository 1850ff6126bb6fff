"""Hand-written attention on an NVIDIA GPU (skipped elsewhere): `jit(grad)` of it compiles to
cuDNN's forward and backward custom calls with no [B, N, T, S] buffer left, and its
gradients agree with the written program's (fused_attention off) at JAX's tolerances."""

from __future__ import annotations

import re

import jax
import ml_dtypes
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import nn

pytestmark = pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs an NVIDIA GPU")
BF16 = ml_dtypes.bfloat16
B, T, N, H = 2, 256, 8, 64


def attn(q, k, v):  # as bench.train and nanoGPT write it: BNTH, @, mask by where
    q, k, v = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / np.sqrt(H))
    s = jnp.where(jnp.arange(T)[:, None] >= jnp.arange(T)[None, :], s, -1e4)
    p = nn.softmax(s.astype(jnp.float32), axis=-1).astype(q.dtype)
    return (p @ v).transpose(0, 2, 1, 3)


def loss(q, k, v):
    return (attn(q, k, v).astype(jnp.float32) ** 2).mean()


def test_grad_of_hand_written_attention_is_cudnn_forward_and_backward():
    r = np.random.default_rng(0)
    args = [r.normal(size=(B, T, N, H)).astype(BF16) for _ in range(3)]
    f = purejit.jit(purejit.grad(loss, argnums=(0, 1, 2)))
    hlo = f.lower(*args).compile().as_text()
    assert "__cudnn$fmhaSoftmax" in hlo and "__cudnn$fmhaSoftmaxBackward" in hlo
    bnts = re.compile(rf"\[{B},{N},{T},{T}\]")
    assert not bnts.search(hlo), "a [B, N, T, S] buffer is left"
    off = purejit.jit(
        purejit.grad(loss, argnums=(0, 1, 2)), compiler_options={"fused_attention": False}
    )
    assert "__cudnn$" not in off.lower(*args).compile().as_text()
    for a, b in zip(f(*args), off(*args)):
        a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
        np.testing.assert_allclose(a32, b32, atol=2e-2 * np.abs(b32).max(), rtol=2e-2)
