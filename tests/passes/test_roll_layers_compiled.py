"""roll_layers through `jit`: jitted models (an MLP stack, a tiny transformer, their
gradients, a layer holding a scan, a layer with effects, a donated training step, random
keys per layer, layers under vmap) compile with `roll_layers` to the numbers of the unrolled
program and of JAX; `explain` says what rolled and what was refused; XLA keeps the loop and
reads the stacks in place, and the backward scan reads the forward's stacks instead of
stacking again. IR text in -> out: test_roll_layers.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from purejit.ir import interpret
from purejit.passes.roll_layers import RollLayers

import purejit
import purejit.numpy as pnp
from bench.cold_start_hlo import kernel_counts, stacking_bytes, trip_kernels
from bench.models import transformer, transformer_params
from purejit import lax
from tests.passes.roll_layers_util import (
    ROLL,
    dense,
    leaves,
    mlp,
    mlp_params,
    residual,
    roll_report,
)


@pytest.mark.parametrize("layers", [4, 8])
def test_mlp_stack_rolls_and_matches_unrolled_and_jax(layers):
    ps, x = mlp_params(layers), np.random.default_rng(1).standard_normal((2, 8), np.float32)
    model = mlp(pnp, purejit.jit(dense(pnp)))
    rolled = purejit.jit(model, compiler_options=ROLL)
    report = roll_report(rolled, ps, x)
    assert report["blocks_rolled"] == layers and not report["refused"]
    lowered = rolled.lower(ps, x)
    assert lowered.module.count("stablehlo.while") == 1
    # the traced program and the rolled one agree in the interpreter, bit for bit
    args = leaves((ps, x))
    before = interpret(lowered.traced, *args)
    after = interpret(RollLayers()(lowered.traced).fn, *args)
    np.testing.assert_array_equal(after[0], before[0])
    want = jax.jit(mlp(jnp, dense(jnp)))(ps, x)
    got, unrolled = rolled(ps, x), purejit.jit(model)(ps, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(unrolled), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16])
def test_mlp_gradient_rolls_forward_and_backward(dtype):
    ps, x = mlp_params(6), np.random.default_rng(2).standard_normal((2, 8), np.float32)
    ps, x = jax.tree.map(lambda a: np.asarray(a, dtype), (ps, x))
    model = mlp(pnp, purejit.jit(dense(pnp)))

    def loss(ps, x):
        return pnp.sum(model(ps, x) ** 2)

    def jloss(ps, x):
        return jnp.sum(mlp(jnp, dense(jnp))(ps, x) ** 2)

    rolled = purejit.jit(purejit.grad(loss), compiler_options=ROLL)
    report = roll_report(rolled, ps, x)
    # every layer rolls, the first too: rolling linearizes each call with a tangent for its
    # input, so the first layer (whose input x is not differentiated) is linearized alike
    assert report["runs_rolled"] == 2 and not report["refused"]
    fwd, bwd = report["rolled"]
    assert fwd["blocks"] == bwd["blocks"] == 6
    assert not fwd["reverse"] and bwd["reverse"] and bwd["stacks_reused"] >= 2
    got, unrolled = rolled(ps, x), purejit.jit(purejit.grad(loss))(ps, x)
    want = jax.jit(jax.grad(jloss))(ps, x)
    # float32 to rounding; bfloat16 within JAX's bf16 tolerance (2 bf16 ulps at 1)
    tol = 1e-5 if dtype == np.float32 else 2e-2
    for g, u, w in zip(leaves(got), leaves(unrolled), leaves(want)):
        g, u, w = (np.asarray(a, np.float32) for a in (g, u, w))
        np.testing.assert_allclose(g, u, rtol=tol, atol=tol)
        np.testing.assert_allclose(g, w, rtol=10 * tol, atol=10 * tol)


def test_tiny_transformer_forward_and_gradient():
    d, heads, layers = 16, 2, 3
    ps = transformer_params(layers, d, np.random.default_rng(3))
    x = np.random.default_rng(4).standard_normal((2, 8, d)).astype(np.float32)
    block = purejit.jit(lambda x, p: transformer(pnp, [p], x, heads))

    def model(ps, x):
        for p in ps:
            x = block(x, p)
        return x

    def loss(ps, x):
        return pnp.mean(model(ps, x) ** 2)

    rolled = purejit.jit(model, compiler_options=ROLL)
    assert roll_report(rolled, ps, x)["blocks_rolled"] == layers
    want = jax.jit(lambda ps, x: transformer(jnp, ps, x, heads))(ps, x)
    np.testing.assert_allclose(np.asarray(rolled(ps, x)), np.asarray(want), rtol=1e-4, atol=1e-4)
    g = purejit.jit(purejit.grad(loss), compiler_options=ROLL)(ps, x)
    gu = purejit.jit(purejit.grad(loss))(ps, x)
    for a, b in zip(leaves(g), leaves(gu)):  # (the unrolled gradient is JAX's: tests/nn)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_layer_holding_a_scan_rolls():
    @purejit.jit
    def layer(x, p):
        def step(h, w):
            return pnp.tanh(h * w), h.sum()

        h, ys = lax.scan(step, x, p["ws"])
        return h + ys.mean()

    def jlayer(x, p):
        def step(h, w):
            return jnp.tanh(h * w), h.sum()

        h, ys = jax.lax.scan(step, x, p["ws"])
        return h + ys.mean()

    rng = np.random.default_rng(5)
    ps = [{"ws": rng.standard_normal((3, 4)).astype(np.float32)} for _ in range(4)]
    x = rng.standard_normal(4).astype(np.float32)
    rolled = purejit.jit(mlp(pnp, layer), compiler_options=ROLL)
    assert roll_report(rolled, ps, x)["blocks_rolled"] == 4
    want = jax.jit(mlp(jnp, jlayer))(ps, x)
    np.testing.assert_allclose(np.asarray(rolled(ps, x)), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_a_layer_with_effects_is_left_alone():
    @purejit.jit
    def layer(x, p):
        purejit.debug.print("layer {}", x.sum())
        return pnp.tanh(x @ p["w"] + p["b"])

    ps, x = mlp_params(3), np.ones((2, 8), np.float32)
    report = roll_report(purejit.jit(mlp(pnp, layer), compiler_options=ROLL), ps, x)
    assert report["runs_rolled"] == 0
    assert "effects" in report["refused"][0]["reason"]


def test_donated_training_step_rolls():
    model = mlp(pnp, purejit.jit(dense(pnp)))

    def step(ps, x):
        g = purejit.grad(lambda ps: pnp.sum(model(ps, x) ** 2))(ps)
        return jax.tree.map(lambda p, g: p - 0.1 * g, ps, g)

    def jstep(ps, x):
        g = jax.grad(lambda ps: jnp.sum(mlp(jnp, dense(jnp))(ps, x) ** 2))(ps)
        return jax.tree.map(lambda p, g: p - 0.1 * g, ps, g)

    ps, x = mlp_params(5), np.random.default_rng(6).standard_normal((2, 8), np.float32)
    want = jax.jit(jstep)(ps, x)
    rolled = purejit.jit(step, donate_argnums=0, compiler_options=ROLL)
    assert roll_report(rolled, ps, x)["runs_rolled"] == 2
    donated = jax.tree.map(purejit.numpy.asarray, ps)
    got = rolled(donated, x)
    assert all(a.is_deleted() for a in jax.tree.leaves(donated))
    for a, b in zip(leaves(got), leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_the_option_is_checked_and_off_by_default():
    ps, x = mlp_params(3), np.ones((2, 8), np.float32)
    model = mlp(pnp, purejit.jit(dense(pnp)))
    names = [r.name for r in purejit.jit(model).lower(ps, x).records]
    assert "roll_layers" not in names
    with pytest.raises(ValueError, match="roll_layers=1 must be True, False or .host."):
        purejit.jit(model, compiler_options={"roll_layers": 1}).lower(ps, x)


@pytest.mark.usefixtures("stacked_xs")
def test_explain_reports_what_was_rolled_and_refused():
    ps, x = mlp_params(5), np.ones((2, 8), np.float32)
    ps[4]["b"] = ps[4]["b"][:1]  # the last layer's bias broadcasts: another signature
    model = mlp(pnp, purejit.jit(dense(pnp)))

    def loss(ps, x):
        return pnp.sum(model(ps, x))

    inside = {**ROLL, "stacked_params": False}  # the stacks built in the program
    text = str(purejit.explain(purejit.jit(purejit.grad(loss), compiler_options=inside), ps, x))
    lines = text.split("repeated layers")[1].split("\n\n")[0].splitlines()
    rolled = [line for line in lines if line.startswith("  rolled")]
    refused = [line for line in lines if line.startswith("  refused")]
    assert len(rolled) == 2 and "4 blocks -> one scan" in rolled[0]
    assert "reverse" in rolled[1] and "3 stacks read from an earlier scan" in rolled[1]
    # the 4 layers' w (8x8) and b (8) of float32 are stacked once, for the forward scan; the
    # backward scan reads them, the saved layer outputs and the layer inputs from the
    # forward's stacks (the first input, the program's x, a loop constant read at row -1)
    assert "copies 1.1 KB per call to stack parameters" in rolled[0]
    assert "copies" not in rolled[1]
    assert len(refused) == 2 and all("differs from block 0" in line for line in refused)
    assert "(off by default: stacking copies 1.1 KB per call" in text


def test_per_layer_random_keys_become_per_block_inputs():
    @purejit.jit
    def layer(x, p, key):
        keep = purejit.random.bernoulli(key, 0.8, x.shape)
        return pnp.where(keep, pnp.tanh(x @ p["w"] + p["b"]), 0.0)

    def model(ps, x, keys):
        for p, k in zip(ps, keys):
            x = layer(x, p, k)
        return x

    ps, x = mlp_params(4), np.random.default_rng(7).standard_normal((2, 8), np.float32)
    keys = list(purejit.random.split(purejit.random.key(0), 4))
    rolled = purejit.jit(model, compiler_options=ROLL)
    (run,) = roll_report(rolled, ps, x, keys)["rolled"]
    assert run["blocks"] == 4 and run["per_block"] == 3  # w, b and the key
    got, want = rolled(ps, x, keys), purejit.jit(model)(ps, x, keys)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.usefixtures("stacked_xs")
def test_xla_keeps_the_loop_and_copies_no_stacked_weights():
    ps, x = mlp_params(6, d=16), np.ones((4, 16), np.float32)
    rolled = purejit.jit(mlp(pnp, purejit.jit(dense(pnp))), compiler_options=ROLL)
    hlo = rolled.lower(ps, x).compile().as_text()
    assert hlo.count(" while(") == 1  # not unrolled by XLA
    stacked = [line for line in hlo.splitlines() if " copy(" in line and "f32[6," in line]
    assert not stacked, stacked  # the stacked weights are read in place on every trip
    # what a trip adds to the layer: the weight's row copied for the dot (XLA's CPU dot
    # takes no strided operand) and the counter; each kernel of the body counted once
    (trip,) = trip_kernels(hlo)
    assert sum(trip.values()) == kernel_counts(hlo)["loop_bodies"][0]
    assert trip["row reads"] == 1 and trip["row writes"] == 0 and trip["counter"] >= 1
    assert trip["compute"] >= 1


@pytest.mark.parametrize("jitted", [True, False], ids=["jitted_layer", "flat_loop"])
def test_layers_under_vmap_roll(jitted):
    ps = mlp_params(4)
    x = np.random.default_rng(11).standard_normal((3, 2, 8)).astype(np.float32)
    layer = purejit.jit(dense(pnp)) if jitted else residual(pnp)
    model = purejit.vmap(mlp(pnp, layer), in_axes=(None, 0))
    rolled = purejit.jit(model, compiler_options=ROLL)
    (run,) = roll_report(rolled, ps, x)["rolled"]
    assert run["blocks"] == 4
    got, want = rolled(ps, x), purejit.jit(model)(ps, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


def _chain_loss(layer):
    """The mean square output of `layer` applied once per entry of `ps`, in a Python loop."""

    def loss(ps, x):
        for p in ps:
            x = layer(x, p)
        return pnp.mean(x**2)

    return loss


def _transformer_block(heads):
    """One bench.models transformer layer, as a function of (x, its parameters)."""

    def block(x, p):
        return transformer(pnp, [p], x, heads)

    return block


def test_rolled_backward_stacks_what_a_layer_saves_inline():
    d, heads, layers = 16, 2, 4
    ps = transformer_params(layers, d, np.random.default_rng(12))
    x = np.random.default_rng(13).standard_normal((2, 8, d)).astype(np.float32)
    block = _transformer_block(heads)

    inline = purejit.jit(purejit.grad(_chain_loss(block))).lower(ps, x)
    (top,) = inline.residuals
    rolled = purejit.jit(purejit.grad(_chain_loss(purejit.jit(block))), compiler_options=ROLL)
    fn = rolled.lower(ps, x).fn
    fwd = [op for op in fn.ops if op.name == "scan" and not op.attrs["reverse"]]
    (scan,) = fwd
    n = scan.attrs["length"]
    assert n == layers
    ys = scan.results[scan.attrs["num_carry"] :]
    # per layer, the forward scan stacks what the inline program saves per layer (the
    # jitted layer's forward call used to return 3x as many residuals, 6x the bytes); the
    # first layer rolls too, saving what the others save
    assert sum(v.type.nbytes for v in ys) / n <= 1.05 * top.saved_bytes / layers
    got = rolled(ps, x)
    want = purejit.jit(purejit.grad(_chain_loss(block)))(ps, x)
    for a, b in zip(leaves(got), leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.usefixtures("stacked_xs")
def test_the_backward_scan_reads_rows_of_the_forward_stacks_in_place():
    ps, x = mlp_params(6, d=16), np.ones((4, 16), np.float32)
    model = mlp(pnp, residual(pnp))  # a flat loop: its first backward block differs

    def loss(ps, x):
        return pnp.sum(model(ps, x) ** 2)

    rolled = purejit.jit(purejit.grad(loss), compiler_options=ROLL)
    lowered = rolled.lower(ps, x)
    fwd, bwd = [op for op in lowered.fn.ops if op.name == "scan"]
    # the backward scan (5 blocks) takes the forward's stacks of 6 rows whole, as loop
    # constants, and reads its rows by an index passed as xs
    assert bwd.attrs["length"] == 5 and bwd.attrs["num_consts"] >= 2
    consts = bwd.operands[: bwd.attrs["num_consts"]]
    assert all(v.type.shape[0] == 6 for v in consts)
    assert "dynamic_slice" in [op.name for op in bwd.regions[0].ops]
    # XLA stacks each per-layer parameter once (a slice of the stack would become a second
    # concatenate of the same parameters); the one other stack is the backward's layer
    # inputs (x itself, then 4 rows of the forward's carried outputs)
    moved = stacking_bytes(lowered.compile().as_text())
    assert moved["loops"] == 2
    assert moved["stack"] == sum(np.asarray(a).nbytes for a in jax.tree.leaves(ps)) + 5 * x.nbytes
    got, want = rolled(ps, x), purejit.jit(purejit.grad(loss))(ps, x)
    for a, b in zip(leaves(got), leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.usefixtures("stacked_xs")
def test_the_backward_reads_each_layer_input_without_stacking_it_again():
    # a pre-LN transformer's backward reads each layer's input: the forward scan's saved
    # outputs but for the first rolled layer, whose input the unrolled first layer made
    d, heads, layers = 16, 2, 4
    ps = transformer_params(layers, d, np.random.default_rng(16))
    x = np.random.default_rng(17).standard_normal((2, 8, d)).astype(np.float32)
    block = _transformer_block(heads)

    # the stacks built in the program (what this counts)
    inside = {**ROLL, "stacked_params": False}
    rolled = purejit.jit(purejit.grad(_chain_loss(purejit.jit(block))), compiler_options=inside)
    fwd, bwd = roll_report(rolled, ps, x)["rolled"]
    assert bwd["reverse"] and bwd["rows_from_outside"] == 1
    lowered = rolled.lower(ps, x)
    # the only stacks written per call are the rolled layers' parameters (before, the
    # layers' inputs were stacked again for the backward scan)
    moved = stacking_bytes(lowered.compile().as_text())
    rolled_layers = ps[layers - fwd["blocks"] :]
    assert moved["stack"] == sum(np.asarray(a).nbytes for a in jax.tree.leaves(rolled_layers))
    got = rolled(ps, x)
    flat = leaves((ps, x))
    interpreted = interpret(lowered.fn, *flat)
    want = purejit.jit(purejit.grad(_chain_loss(block)))(ps, x)
    jloss = jax.grad(lambda ps, x: jnp.mean(transformer(jnp, ps, x, heads) ** 2))
    jwant = jax.jit(jloss)(ps, x)
    for a, b, c, j in zip(leaves(got), interpreted, leaves(want), leaves(jwant)):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, j, rtol=1e-4, atol=1e-5)
