"""What makes a rolled program's first call cheap: every layer of a differentiated chain is
linearized alike, so the first layer rolls too (XLA then compiles the layer's forward and
backward once each, not twice), and rows of a scan's stacks are read at runtime indices, so
XLA compiles one kernel per row shape instead of one per row."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from purejit.ir import VerifyError, parse, verify

import purejit
import purejit.numpy as pnp

ROLL = {"roll_layers": True}


def _params(layers: int, d: int = 8):
    rng = np.random.default_rng(0)
    return [
        {
            "w": (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32),
            "b": rng.standard_normal(d).astype(np.float32),
        }
        for _ in range(layers)
    ]


def _loss(xp, layer):
    def loss(ps, x):
        for p in ps:
            x = layer(x, p)
        return xp.sum(x**2)

    return loss


def _dense(xp):
    return lambda x, p: xp.tanh(x @ p["w"] + p["b"])


def _calls(fn, suffix: str):
    return [op for op in fn.ops if op.name == "call" and op.attrs["callee"].endswith(suffix)]


@pytest.mark.parametrize("roll", [True, False])
def test_every_layer_is_linearized_alike_when_rolling(roll):
    ps, x = _params(4), np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    options = ROLL if roll else {}
    f = purejit.jit(purejit.grad(_loss(pnp, purejit.jit(_dense(pnp)))), compiler_options=options)
    traced = f.lower(ps, x).traced
    fwd, lin_t = _calls(traced, "_fwd"), _calls(traced, "_lin_t")
    assert len(fwd) == len(lin_t) == 4
    n_results = {len(op.results) for op in fwd}
    n_params = {len(op.regions[0].params) for op in lin_t}
    if roll:
        # x is not differentiated, yet the first layer gets a (zero) tangent for it: its
        # forward saves what the others save and its transposition takes the same operands
        assert len(n_results) == 1 and len(n_params) == 1
    else:
        # the default is as before: the first layer transposes over fewer operands
        assert len(n_params) == 2
        assert not any("linear" in op.attrs for op in traced.walk() if op.name == "call")
    got = f(ps, x)
    want = jax.jit(jax.grad(_loss(jnp, _dense(jnp))))(ps, x)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


def test_the_first_layer_rolls_in_a_gradient_wrt_the_input_too():
    # x differentiated as well: nothing is instantiated, every layer already alike
    ps, x = _params(3), np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    loss = _loss(pnp, purejit.jit(_dense(pnp)))
    f = purejit.jit(purejit.grad(loss, argnums=(0, 1)), compiler_options=ROLL)
    (rec,) = [r for r in f.lower(ps, x).records if r.name == "roll_layers"]
    assert [r["blocks"] for r in rec.report["rolled"]] == [3, 3]
    got = f(ps, x)
    want = jax.jit(jax.grad(_loss(jnp, _dense(jnp)), argnums=(0, 1)))(ps, x)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


def test_a_calls_linear_count_is_checked():
    src = """func @f(%0: f32[4]) -> (f32[4]) {
  %1 = call(%0) {callee="g", linear=2} : (f32[4]) region(%2: f32[4]) {
    %3 = negate(%2) : (f32[4])
    return %3
  }
  return %1
}"""
    with pytest.raises(VerifyError, match="linear must be an operand count"):
        verify(parse(src))
    verify(parse(src.replace("linear=2", "linear=1")))
