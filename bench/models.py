"""Models written once against a NumPy-like namespace `xp` (purejit.numpy, jax.numpy or
numpy), so every framework runs exactly the same program."""

from __future__ import annotations

import math

import numpy as np


def gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def layer_norm(xp, x, g, b, eps=1e-5):
    m = xp.mean(x, axis=-1, keepdims=True)
    v = xp.mean((x - m) * (x - m), axis=-1, keepdims=True)
    return (x - m) / xp.sqrt(v + eps) * g + b


def softmax(xp, x):
    z = x - xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(z)
    return e / xp.sum(e, axis=-1, keepdims=True)


def transformer_params(layers: int, d: int, rng: np.random.Generator, dtype=np.float32):
    def w(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(dtype)

    return [
        {
            "ln1_g": np.ones(d, dtype),
            "ln1_b": np.zeros(d, dtype),
            "qkv": w(d, 3 * d),
            "proj": w(d, d),
            "ln2_g": np.ones(d, dtype),
            "ln2_b": np.zeros(d, dtype),
            "up": w(d, 4 * d),
            "down": w(4 * d, d),
        }
        for _ in range(layers)
    ]


def transformer(xp, params, x, heads: int):
    """Pre-LN transformer encoder forward: x is (batch, seq, d)."""
    bsz, seq, d = x.shape
    hd = d // heads
    for p in params:
        h = layer_norm(xp, x, p["ln1_g"], p["ln1_b"])
        qkv = xp.reshape(h @ p["qkv"], (bsz, seq, 3, heads, hd))
        q = xp.transpose(qkv[:, :, 0], (0, 2, 1, 3))
        k = xp.transpose(qkv[:, :, 1], (0, 2, 3, 1))
        v = xp.transpose(qkv[:, :, 2], (0, 2, 1, 3))
        att = softmax(xp, (q @ k) * (1.0 / math.sqrt(hd)))
        o = xp.reshape(xp.transpose(att @ v, (0, 2, 1, 3)), (bsz, seq, d))
        x = x + o @ p["proj"]
        h = layer_norm(xp, x, p["ln2_g"], p["ln2_b"])
        x = x + gelu(xp, h @ p["up"]) @ p["down"]
    return x


def cnn_params(rng: np.random.Generator, channels=(32, 32, 64, 64), classes=10, dtype=np.float32):
    """Four 3x3 convolutions (HWIO) and a dense head, for 32x32x3 images."""
    params, cin = {}, 3
    for i, c in enumerate(channels):
        params[f"conv{i}"] = (rng.standard_normal((3, 3, cin, c)) / math.sqrt(9 * cin)).astype(
            dtype
        )
        params[f"bias{i}"] = np.zeros(c, dtype)
        cin = c
    params["dense"] = (rng.standard_normal((8 * 8 * cin, classes)) / math.sqrt(64 * cin)).astype(
        dtype
    )
    return params


def cnn(xp, lax, params, x):
    """conv-relu-conv-relu-maxpool, twice, then dense: x is (batch, 32, 32, 3) NHWC."""
    dn = ("NHWC", "HWIO", "NHWC")

    def pool(h):
        return lax.reduce_window(h, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    h = x
    for i in range(4):
        h = lax.conv_general_dilated(h, params[f"conv{i}"], (1, 1), "SAME", dimension_numbers=dn)
        h = xp.maximum(h + params[f"bias{i}"], 0.0)
        if i % 2 == 1:
            h = pool(h)
    return xp.reshape(h, (h.shape[0], -1)) @ params["dense"]
