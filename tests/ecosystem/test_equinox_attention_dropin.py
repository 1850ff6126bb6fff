"""Equinox beyond its basics in drop-in mode: the same program
(`_equinox_attention_program.py`: an eqx.nn.MultiheadAttention classifier trained with
filter_grad under filter_jit and optax, per-example dropout keys through filter_vmap, and a
stateful BatchNorm under filter_vmap(axis_name=...), the checkpointed while_loop under
jit(grad), filter_checkpoint) run under JAX and under
`python -m purejit run` gives the same numbers. Skips where equinox or optax is missing."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from _dropin_compare import run_both, scaled_ulp

PROGRAM = pathlib.Path(__file__).resolve().parent / "_equinox_attention_program.py"

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("equinox", "optax")),
    reason="equinox or optax is not installed",
)

# within this many ulps of each array's largest magnitude (measured: at most 3, a LayerNorm
# bias after 5 adam steps): purejit transposes dot_general as x^T @ ct where JAX computes
# (ct^T @ x)^T, so weight gradients sum in another order
SCALED_ULP = 8


def test_equinox_attention_program_matches_jax(tmp_path):
    want, got = run_both(PROGRAM, tmp_path)
    assert sorted(want) == sorted(got)
    assert len(want) > 10  # the classifier's parameters, losses, logits, BatchNorm's state
    for k in want:
        w, g = want[k], got[k]
        assert (w.shape, w.dtype) == (g.shape, g.dtype), k
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=k)
        else:
            assert scaled_ulp(w, g) <= SCALED_ULP, f"{k}: {scaled_ulp(w, g)} ulp from JAX"
    assert want["losses"][-1] < want["losses"][0]
    # the checkpointed loop's gradient: bit for bit
    np.testing.assert_array_equal(got["loop_grad"], want["loop_grad"])
