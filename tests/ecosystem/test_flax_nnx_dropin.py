"""Flax nnx in drop-in mode: the same program (`_flax_nnx_program.py`: an MLP with Dropout
and BatchNorm trained with nnx.Optimizer under nnx.jit, the nnx MNIST tutorial's CNN, a Linear trained through
nnx.split/merge under jax.jit, nnx.MultiHeadAttention, and an outer Variable mutated inside
jit) run under JAX and under `python -m purejit run` gives the same numbers and the same
error. Skips where flax or optax is not installed."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from _dropin_compare import run_both, scaled_ulp

PROGRAM = pathlib.Path(__file__).resolve().parent / "_flax_nnx_program.py"

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("flax", "optax")),
    reason="flax or optax is not installed",
)

# bit for bit: the tutorial CNN's training (Conv, avg_pool, Linear, adamw, metrics), the
# split/merge Linear's training, attention eager and jitted, the
# transformations (vmap, scan, grad through scan, remat, cond), and the integer state
# (Dropout's rng key data and counter)
EXACT_PREFIXES = ("cnn", "linear", "mha_", "tr_", "mlp['dropout']")
# the MLP within this many ulps of each array's largest magnitude (measured: 1): purejit
# transposes dot_general as x^T @ ct where JAX computes (ct^T @ x)^T, so weight gradients
# sum in another order
SCALED_ULP = 4


def test_flax_nnx_program_matches_jax(tmp_path):
    want, got = run_both(PROGRAM, tmp_path)
    assert sorted(want) == sorted(got)
    # mutating an outer Variable inside jit raises nnx's error on both sides
    assert str(want["leak_error"]) == str(got["leak_error"]) == "TraceContextError"
    for k in want:
        w, g = want[k], got[k]
        assert (w.shape, w.dtype) == (g.shape, g.dtype), k
        if k.startswith(EXACT_PREFIXES) or w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=k)
        else:
            assert scaled_ulp(w, g) <= SCALED_ULP, f"{k}: {scaled_ulp(w, g)} ulp from JAX"
    assert want["mlp_losses"][-1] < want["mlp_losses"][0]
    assert want["linear_losses"][-1] < want["linear_losses"][0]
