"""What makes a rolled program's first call cheap: every layer of a differentiated chain is
linearized alike, so the first layer rolls too (XLA then compiles the layer's forward and
backward once each, not twice), and rows of a scan's stacks are read at runtime indices, so
XLA compiles one kernel per row shape instead of one per row."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from purejit.ir import Function, VerifyError, interpret, parse, verify
from purejit.passes._row_index import RowIndices
from purejit.passes.constant_fold import ConstantFold
from purejit.passes.pipeline import FixedPoint
from purejit.passes.simplify import Simplify

import purejit
from purejit.backend import pjrt
import purejit.numpy as pnp
from tests.passes.roll_layers_util import ROLL, dense, mlp_params


def _loss(xp, layer):
    def loss(ps, x):
        for p in ps:
            x = layer(x, p)
        return xp.sum(x**2)

    return loss


def _calls(fn, suffix: str):
    return [op for op in fn.ops if op.name == "call" and op.attrs["callee"].endswith(suffix)]


@pytest.mark.parametrize("roll", [True, False])
def test_every_layer_is_linearized_alike_when_rolling(roll):
    ps, x = mlp_params(4), np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    options = ROLL if roll else {}
    f = purejit.jit(purejit.grad(_loss(pnp, purejit.jit(dense(pnp)))), compiler_options=options)
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
    want = jax.jit(jax.grad(_loss(jnp, dense(jnp))))(ps, x)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


def test_the_first_layer_rolls_in_a_gradient_wrt_the_input_too():
    # x differentiated as well: nothing is instantiated, every layer already alike
    ps, x = mlp_params(3), np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    loss = _loss(pnp, purejit.jit(dense(pnp)))
    f = purejit.jit(purejit.grad(loss, argnums=(0, 1)), compiler_options=ROLL)
    (rec,) = [r for r in f.lower(ps, x).records if r.name == "roll_layers"]
    assert [r["blocks"] for r in rec.report["rolled"]] == [3, 3]
    got = f(ps, x)
    want = jax.jit(jax.grad(_loss(jnp, dense(jnp)), argnums=(0, 1)))(ps, x)
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


def test_the_row_index_loop_returns_the_indices():
    out = []
    index = RowIndices(5, out)
    values = [index(i) for i in (3, 0, 4)]
    assert index(3) is values[0] and sum(op.name == "while" for op in out) == 1
    fn = verify(Function("rows", [], out, values))
    assert [int(a) for a in interpret(fn)] == [3, 0, 4]
    # purejit's cleanup leaves the loop to XLA (a loop of constants would be folded)
    kept = FixedPoint([ConstantFold(), Simplify()])(fn).fn
    assert any(op.name == "while" for op in kept.ops)


@pytest.mark.parametrize("stacked", [False, True])
def test_gradient_rows_are_read_at_runtime_indices(stacked):
    # width 16 with the stacks as arguments: each piece 64-byte aligned, as a view needs
    d = 16 if stacked else 8
    ps = mlp_params(6, d)
    x = np.random.default_rng(3).standard_normal((2, d)).astype(np.float32)
    loss = _loss(pnp, purejit.jit(dense(pnp)))

    def step(ps, x):  # what a training step does with each layer's gradient
        g = purejit.grad(loss)(ps, x)
        return jax.tree.map(lambda p, g: p - 0.1 * g, ps, g)

    f = purejit.jit(step, compiler_options={**ROLL, "stacked_params": stacked})
    lowered = f.lower(ps, x)
    reads = [op for op in lowered.fn.ops if op.name == "dynamic_slice"]
    shapes = ((d, d), (d,))
    per_layer = [r for r in reads if r.results[0].type.shape[1:] in shapes]
    if stacked:
        # the stacks are arguments and the updated parameters one stack: the update runs
        # over whole stacks (`stacked_outputs`), no row of them is read one by one
        assert not per_layer
    else:
        # w and b of 6 layers, rows of the backward scan's stacks (and the layer outputs
        # the backward scan stacks again with x, which no forward stack holds); a GPU packs
        # a layer's values of one dtype side by side in one row (`pack_xs`), so fewer of its
        # reads have a parameter's own shape
        if pjrt.platform() == "cpu":
            assert len(per_layer) == 12
        else:
            assert per_layer
        (loop,) = [op for op in lowered.fn.ops if op.name == "while"]
        assert all(r.operands[1] in loop.results for r in reads)
    # XLA sees no constant row offset: no slice of one row of a stack is left
    hlo = lowered.compile().as_text()
    one_row = re.compile(r" slice\(.*slice=\{\[(\d+):(\d+)\]")
    rows = [m for m in map(one_row.search, hlo.splitlines()) if m]
    assert not [m for m in rows if int(m.group(2)) - int(m.group(1)) == 1]
    assert stacked or not rows  # with stacks as arguments: whole columns of every row
    got = f(ps, x)
    jloss = _loss(jnp, dense(jnp))
    want = jax.tree.map(lambda p, g: p - 0.1 * g, ps, jax.grad(jloss)(ps, x))
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("roll", [True, False])
def test_identical_layers_are_linearized_and_transposed_once(roll, monkeypatch):
    from purejit.transforms.autodiff import call as call_rules

    made = []
    real = call_rules.remat.rematerialize_call

    def counted(make_split, name):
        made.append(name)
        return real(make_split, name)

    monkeypatch.setattr(call_rules.remat, "rematerialize_call", counted)
    transposed = []
    real_trace = call_rules.trace_to_function

    def traced(f, avals, name):
        transposed.append(name)
        return real_trace(f, avals, name=name)

    monkeypatch.setattr(call_rules, "trace_to_function", traced)
    ps, x = mlp_params(5), np.random.default_rng(4).standard_normal((2, 8)).astype(np.float32)
    layer = purejit.jit(dense(pnp))
    scaled = purejit.jit(lambda x, p: pnp.tanh(x @ p["w"] + p["b"]) * 0.5)

    def loss(ps, x):  # four layers of one body, then one whose body differs by a constant
        for p in ps[:4]:
            x = layer(x, p)
        return pnp.sum(scaled(x, ps[4]) ** 2)

    f = purejit.jit(purejit.grad(loss), compiler_options=ROLL if roll else {})
    lowered = f.lower(ps, x)
    # rolling: the four layers alike, then the other body; unrolled: the first layer (x
    # not differentiated) is linearized apart too
    assert len(made) == (2 if roll else 3)
    # and transposed once per body too
    assert len([n for n in transposed if n.endswith("_t")]) == (2 if roll else 3)
    # every call still leaves its record for explain
    assert sum(r.where.startswith("call ") for r in lowered.residuals) == 5
    # the calls' functions are copies: no two call ops share a region
    regions = [op.regions[0] for op in lowered.traced.walk() if op.name == "call"]
    assert len({id(r) for r in regions}) == len(regions)

    def jloss(ps, x):
        for p in ps[:4]:
            x = dense(jnp)(x, p)
        return jnp.sum((jnp.tanh(x @ ps[4]["w"] + ps[4]["b"]) * 0.5) ** 2)

    got, want = f(ps, x), jax.jit(jax.grad(jloss))(ps, x)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)
