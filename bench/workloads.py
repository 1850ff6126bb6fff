"""The workloads of the benchmark suite. Each one is written once against a NumPy-like
namespace `xp` and built at a size that suits the platform (CPU or GPU) and mode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from bench import models


@dataclass
class Workload:
    name: str
    fn: Callable  # fn(xp, *args)
    args: tuple  # NumPy inputs
    eager: bool = True  # worth timing op by op (purejit eager, NumPy)
    note: str = ""
    needs_lax: bool = False  # fn(xp, lax, *args): no NumPy version
    host_inputs: bool = False  # both jits get the NumPy arrays themselves (transfer per call)


def _rng():
    return np.random.default_rng(0)


def complex_activation(xp, x):
    y = xp.sin(x) * xp.cos(x)
    y = y + x
    return xp.maximum(y * 0.5, 0.0)


def tiny_ops_chain(xp, x):
    x = x * 2.0
    x = x + 1.0
    x = 1.0 / (1.0 + xp.exp(-x))
    x = x * x
    x = xp.tanh(x)
    return x / (xp.abs(x) + 1.0)


def mlp_dead_matmul(xp, x, w1, w2, gating):
    h = xp.maximum(x @ w1, 0.0)
    _unused = x @ gating  # dead: a whole-program compiler drops it
    return h @ w2


def ln_linear_gelu_residual(xp, x, g, b, w):
    h = models.layer_norm(xp, x, g, b)
    return x + models.gelu(xp, h @ w)


def scan_rnn(xp, lax, h0, xs, w, u):
    def step(h, x):
        h = xp.tanh(h @ w + x @ u)
        return h, h

    h, hs = lax.scan(step, h0, xs)
    return h, hs


def cnn(xp, lax, params, x):
    return models.cnn(xp, lax, params, x)


def dispatch_tiny(xp, x):
    return x + 1.0


def build(platform: str, quick: bool) -> list[Workload]:
    gpu = platform == "gpu"
    r = _rng()
    n = (1 << 24) if gpu else (1 << 16 if quick else 1 << 20)
    d = 4096 if gpu else (256 if quick else 1024)
    bsz = 1024 if gpu else (64 if quick else 256)
    x1 = r.standard_normal(n).astype(np.float32)
    out = [
        Workload("complex_activation", complex_activation, (x1,)),
        Workload("tiny_ops_chain", tiny_ops_chain, (x1,)),
        Workload(
            "mlp_dead_matmul",
            mlp_dead_matmul,
            (
                r.standard_normal((bsz, d)).astype(np.float32),
                (r.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32),
                (r.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32),
                (r.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32),
            ),
        ),
        Workload(
            "layernorm_linear_gelu_residual",
            ln_linear_gelu_residual,
            (
                r.standard_normal((bsz, d)).astype(np.float32),
                np.ones(d, np.float32),
                np.zeros(d, np.float32),
                (r.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32),
            ),
        ),
    ]
    for layers in (12, 48):
        if quick and layers == 48:
            continue
        dm, seq, b, heads = (
            (1024, 512, 8, 16) if gpu else ((64, 32, 2, 4) if quick else (256, 128, 4, 8))
        )
        params = models.transformer_params(layers, dm, r)
        x = r.standard_normal((b, seq, dm)).astype(np.float32)
        out.append(
            Workload(
                f"transformer_{layers}l",
                lambda xp, p, x, heads=heads: models.transformer(xp, p, x, heads),
                (params, x),
                eager=layers == 12,
            )
        )
    steps, hid = (1000, 1024) if gpu else ((100, 64) if quick else (1000, 256))
    out.append(
        Workload(
            "scan_rnn",
            scan_rnn,
            (
                np.zeros((8, hid), np.float32),
                r.standard_normal((steps, 8, hid)).astype(np.float32),
                (r.standard_normal((hid, hid)) / np.sqrt(hid)).astype(np.float32),
                (r.standard_normal((hid, hid)) / np.sqrt(hid)).astype(np.float32),
            ),
            eager=False,
            needs_lax=True,
        )
    )
    batch = 8 if quick else 128
    out.append(
        Workload(
            "cnn",
            cnn,
            (models.cnn_params(r), r.standard_normal((batch, 32, 32, 3)).astype(np.float32)),
            eager=False,
            needs_lax=True,
            note=f"4 conv layers, {batch}x32x32x3",
        )
    )
    out.append(
        Workload(
            "dispatch_tiny", dispatch_tiny, (np.ones((), np.float32),), note="per-call overhead"
        )
    )
    out.append(
        Workload(
            "dispatch_numpy",
            dispatch_tiny,
            (np.ones((), np.float32),),
            eager=False,
            host_inputs=True,
            note="per-call overhead, NumPy argument",
        )
    )
    return out
