"""roll_layers with `select_xs`: the per-layer parameters a rolled loop reads are not stacked
on every call but passed to the loop as they are, and a `case` on the trip's row returns the
trip's layer's values. IR text in -> IR text out, the interpreter's numbers before and after,
and jitted models (an MLP stack and its gradient, a transformer forward) compiled on this
back end's route to the numbers of the unrolled program and of JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes.roll_layers import RollLayers

import purejit
import purejit.numpy as pnp
from tests.passes.roll_layers_util import ROLL, dense, leaves, mlp, mlp_params, roll_report
from bench.cold_start_hlo import stacking_bytes
from bench.models import transformer, transformer_params


CHAIN = """func @f(%0: f32[4], %1: f32[4], %2: f32[4], %3: f32[4], %4: f32[4]) -> (f32[4]) {
  %5 = call(%0, %1, %4) {callee="layer"} : (f32[4]) region(%6: f32[4], %7: f32[4], %8: f32[4]) {
    %9 = multiply(%6, %7) : (f32[4])
    %10 = add(%9, %8) : (f32[4])
    %11 = tanh(%10) : (f32[4])
    return %11
  }
  %12 = call(%5, %2, %4) {callee="layer"} : (f32[4]) region(%13: f32[4], %14: f32[4], %15: f32[4]) {
    %16 = multiply(%13, %14) : (f32[4])
    %17 = add(%16, %15) : (f32[4])
    %18 = tanh(%17) : (f32[4])
    return %18
  }
  %19 = call(%12, %3, %1) {callee="layer"} : (f32[4]) region(%20: f32[4], %21: f32[4], %22: f32[4]) {
    %23 = multiply(%20, %21) : (f32[4])
    %24 = add(%23, %22) : (f32[4])
    %25 = tanh(%24) : (f32[4])
    return %25
  }
  return %19
}"""


def _roll(src: str, **options):
    fn = verify(parse(src))
    res = RollLayers(**options)(fn)
    verify(res.fn)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.type.shape).astype(p.type.dtype) for p in fn.params]
    for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
        np.testing.assert_array_equal(b, a)
    return print_function(res.fn), res


def test_the_layers_arguments_are_read_by_a_case_not_stacked():
    # per block: the weight (%1, %2, %3) and the bias (%4, %4, then %1: one argument read by
    # two blocks as different operands); each distinct argument is one loop constant, and
    # branch k of the case returns block k's values; the row index is the one xs
    out, res = _roll(CHAIN, select_xs=True)
    (run,) = res.report["rolled"]
    assert run["xs_selected"] == 2 and run["stacked_bytes"] == 0 and run["xs_packed"] == 0
    assert out == (
        """func @f(%0: f32[4], %1: f32[4], %2: f32[4], %3: f32[4], %4: f32[4]) -> (f32[4]) {
  %5 = constant() {value=array<s32[3]: [0, 1, 2]>} : (s32[3])
  %6 = scan(%1, %2, %3, %4, %0, %5) {length=3, reverse=false, unroll=1, num_consts=4, num_carry=1} : (f32[4]) region(%7: f32[4], %8: f32[4], %9: f32[4], %10: f32[4], %11: f32[4], %12: s32[]) {
    %13, %14 = case(%12, %7, %8, %9, %10) : (f32[4], f32[4]) region(%15: f32[4], %16: f32[4], %17: f32[4], %18: f32[4]) {
      return %15, %18
    } region(%19: f32[4], %20: f32[4], %21: f32[4], %22: f32[4]) {
      return %20, %22
    } region(%23: f32[4], %24: f32[4], %25: f32[4], %26: f32[4]) {
      return %25, %23
    }
    %27 = multiply(%11, %13) : (f32[4])
    %28 = add(%27, %14) : (f32[4])
    %29 = tanh(%28) : (f32[4])
    return %29
  }
  return %6
}"""
    )
    # the default stacks them (one concatenate of the blocks' values, side by side)
    out, res = _roll(CHAIN)
    assert "case(" not in out and "concatenate(" in out
    assert res.report["rolled"][0]["stacked_bytes"] == 3 * 2 * 16


def _roll_pass(monkeypatch, **options):
    """The compiler's roll pass with `options`, whatever this back end's defaults."""
    from purejit.passes import pipeline

    default = pipeline.RollLayers
    monkeypatch.setattr(pipeline, "RollLayers", lambda **kw: default(**{**kw, **options}))


@pytest.fixture
def selected_xs(monkeypatch):
    """`select_xs` on for every argument, however small and whoever else reads it."""
    _roll_pass(monkeypatch, select_xs=True, select_min_bytes=0)


@pytest.mark.usefixtures("selected_xs")
def test_a_rolled_gradient_reads_the_parameters_by_case_in_both_loops():
    ps, x = mlp_params(5), np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    model = mlp(pnp, purejit.jit(dense(pnp)))

    def loss(ps, x):
        return pnp.sum(model(ps, x) ** 2)

    rolled = purejit.jit(purejit.grad(loss), compiler_options=ROLL)
    fwd, bwd = roll_report(rolled, ps, x)["rolled"]
    # the backward reads w, not b (a bias's gradient needs no bias)
    assert fwd["xs_selected"] == 2 and bwd["xs_selected"] == 1 and bwd["reverse"]
    lowered = rolled.lower(ps, x)
    hlo = lowered.compile().as_text()
    # no stack of the parameters is written; the loops stay loops and pick their layer's
    # parameters with a conditional
    moved = stacking_bytes(hlo)
    assert moved["loops"] == 2 and moved["stack"] == 0
    assert hlo.count(" conditional(") == 2
    assert "per-block parameters read per trip by a case" in str(lowered.explain())
    got = rolled(ps, x)
    interpreted = interpret(lowered.fn, *leaves((ps, x)))
    unrolled = purejit.jit(purejit.grad(loss))(ps, x)
    jmodel = mlp(jnp, dense(jnp))
    want = jax.jit(jax.grad(lambda ps, x: jnp.sum(jmodel(ps, x) ** 2)))(ps, x)
    for a, b, c, j in zip(leaves(got), interpreted, leaves(unrolled), leaves(want)):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, j, rtol=1e-4, atol=1e-5)


def test_the_cpu_compiler_selects_and_a_transformer_forward_matches_jax():
    d, heads, layers = 16, 2, 6
    ps = transformer_params(layers, d, np.random.default_rng(2))
    x = np.random.default_rng(3).standard_normal((2, 8, d)).astype(np.float32)
    block = purejit.jit(lambda x, p: transformer(pnp, [p], x, heads))
    want = jax.jit(lambda ps, x: transformer(jnp, ps, x, heads))(ps, x)
    on_gpu = purejit.devices()[0].platform in ("gpu", "cuda", "rocm")
    # the back end's choice when the program builds its stacks (stacked_params off):
    # stacked on GPU, read by a case on CPU; with the stacks as arguments (the default),
    # stacked everywhere (the stack is a parameter, built by dispatch)
    for stacked in (False, True):
        options = {**ROLL, "stacked_params": stacked}
        rolled = purejit.jit(mlp(pnp, block), compiler_options=options)
        (run,) = roll_report(rolled, ps, x)["rolled"]
        stacks = on_gpu or stacked
        assert (run["xs_selected"] == 0) == stacks and (run["stacked_bytes"] > 0) == stacks
        got = np.asarray(rolled(ps, x))
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-4, atol=1e-5)


def test_parameters_both_loops_read_stay_one_stack_when_small(monkeypatch):
    # a training step's backward reads the forward's parameters: below select_min_bytes
    # they are stacked once for both loops (the buffer is reused from call to call), above
    # it each loop reads them by its own case
    ps, x = mlp_params(5), np.random.default_rng(4).standard_normal((2, 8)).astype(np.float32)
    model = mlp(pnp, purejit.jit(dense(pnp)))

    def loss(ps, x):
        return pnp.sum(model(ps, x) ** 2)

    def roll(**options):
        _roll_pass(monkeypatch, select_xs=True, **options)
        # the program building its stacks (what select_min_bytes decides between)
        inside = {**ROLL, "stacked_params": False}
        rolled = purejit.jit(purejit.grad(loss), compiler_options=inside)
        return rolled, roll_report(rolled, ps, x)["rolled"]

    rolled, (fwd, bwd) = roll()
    assert fwd["xs_selected"] == bwd["xs_selected"] == 0
    assert fwd["xs_packed"] == 2 and bwd["stacks_reused"] >= 1
    want = rolled(ps, x)
    rolled, (fwd, bwd) = roll(select_min_bytes=1)  # every stack is this large: selected
    assert fwd["xs_selected"] == 2 and bwd["xs_selected"] == 1
    for a, b in zip(leaves(rolled(ps, x)), leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    # a forward pass alone (no other loop reads them) selects them however small
    _roll_pass(monkeypatch, select_xs=True)
    inside = {**ROLL, "stacked_params": False}
    (run,) = roll_report(purejit.jit(model, compiler_options=inside), ps, x)["rolled"]
    assert run["xs_selected"] == 2


@pytest.mark.usefixtures("selected_xs")
def test_a_donated_training_step_reads_its_parameters_by_case():
    # the parameters the loops read by their cases are donated and overwritten by the
    # update after both loops: the same numbers as the unrolled step's, step after step
    ps, x = mlp_params(4), np.random.default_rng(5).standard_normal((2, 8)).astype(np.float32)
    model = mlp(pnp, purejit.jit(dense(pnp)))

    def step(ps, x):
        value, grads = purejit.value_and_grad(lambda ps, x: pnp.sum(model(ps, x) ** 2))(ps, x)
        return purejit.tree_util.tree_map(lambda p, g: p - 0.1 * g, ps, grads), value

    rolled = purejit.jit(step, donate_argnums=0, compiler_options=ROLL)
    unrolled = purejit.jit(step, donate_argnums=0)
    fwd, _ = roll_report(rolled, ps, x)["rolled"]
    assert fwd["xs_selected"] == 2
    a = purejit.tree_util.tree_map(lambda v: pnp.asarray(v) + 0, ps)
    b = purejit.tree_util.tree_map(lambda v: pnp.asarray(v) + 0, ps)
    for _ in range(3):
        (a, va), (b, vb) = rolled(a, x), unrolled(b, x)
        np.testing.assert_allclose(float(va), float(vb), rtol=1e-5)
    for p, q in zip(leaves(a), leaves(b)):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
