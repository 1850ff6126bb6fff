"""What the roll_layers tests share: the compiler option, a stack of dense or residual layers
written once for purejit.numpy and jax.numpy with its parameters, and the roll pass's report
of a jitted function. The `stacked_xs` fixture is in this folder's conftest.py."""

from __future__ import annotations

import jax
import numpy as np

ROLL = {"roll_layers": True}


def mlp(xp, layer_fn):
    def model(ps, x):
        for p in ps:
            x = layer_fn(x, p)
        return x

    return model


def dense(xp):
    def f(x, p):
        return xp.tanh(x @ p["w"] + p["b"])

    return f


def mlp_params(layers: int, d: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [
        {
            "w": (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32),
            "b": rng.standard_normal(d).astype(np.float32),
        }
        for _ in range(layers)
    ]


def leaves(t):
    return [np.asarray(v) for v in jax.tree.leaves(t)]


def roll_report(jitted, *args) -> dict:
    (rec,) = [r for r in jitted.lower(*args).records if r.name == "roll_layers"]
    return rec.report


def residual(xp):
    def f(x, p):  # enough ops for a block (RollLayers.min_block_ops)
        return x * 0.5 + xp.tanh(x @ p["w"] + p["b"]) * 0.25

    return f
