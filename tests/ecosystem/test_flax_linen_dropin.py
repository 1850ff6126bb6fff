"""Flax linen in drop-in mode: the same program (`_flax_linen_program.py`: an MLP and a
Conv/attention/LayerNorm/Dropout/BatchNorm block, initialised, applied and trained with optax
under jax.jit; nn.scan, nn.remat, nn.vmap) run under JAX and under `python -m purejit run` gives the same numbers.
Skips where flax or optax is not installed."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from _dropin_compare import run_both, scaled_ulp


PROGRAM = pathlib.Path(__file__).resolve().parent / "_flax_linen_program.py"

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("flax", "optax")),
    reason="flax or optax is not installed",
)

# bit for bit: an MLP's forward pass (Dense: one dot_general and an add per layer), and the
# lifted transformations (nn.scan forward and under jit(grad), nn.remat, nn.vmap)
EXACT = ("mlp_init_out", "lift_")
# everything else within this many ulps of each array's largest magnitude (measured: at most
# 10, LayerNorm's bias after 4 momentum steps). Two purejit lowerings differ from JAX's:
# purejit transposes dot_general as x^T @ ct where JAX computes (ct^T @ x)^T (gradients sum in
# another order), and purejit's eager `x / n` divides exactly where XLA CPU's fused
# broadcast-divide multiplies by the reciprocal (eager means, LayerNorm/BatchNorm statistics)
SCALED_ULP = 16
# the attention key bias's gradient is zero in exact arithmetic (softmax is invariant to a
# shift per query); both sides hold rounding noise of about 1e-9, compared in absolute terms
NOISE = {"block/['params']['MultiHeadDotProductAttention_0']['key']['bias']": 1e-8}


def test_flax_linen_program_matches_jax(tmp_path):
    want, got = run_both(PROGRAM, tmp_path)
    assert sorted(want) == sorted(got)
    assert len(want) > 20  # both models' parameters, losses and outputs
    for k in want:
        w, g = want[k], got[k]
        assert (w.shape, w.dtype) == (g.shape, g.dtype), k
        if k.startswith(EXACT):
            np.testing.assert_array_equal(g, w, err_msg=k)
        elif k in NOISE:
            assert np.abs(w - g).max() <= NOISE[k], k
        else:
            assert scaled_ulp(w, g) <= SCALED_ULP, f"{k}: {scaled_ulp(w, g)} ulp from JAX"
    # training did something on both sides
    assert want["block_losses"][-1] < want["block_losses"][0]
    assert want["mlp_losses"][-1] < want["mlp_losses"][0]
