"""Automatic rematerialisation: the plan on IR text (what is saved, what is recomputed), the
rewritten programs give the same numbers (interpreter), and through the API: remat off /
automatic / budgets give JAX's values, `explain` lists residuals, DCE drops residuals no
backward pass reads, a user's checkpoint policy wins, scan bodies are planned too."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jjnp
import purejit
import purejit.numpy as jnp
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes import remat as rp
from purejit.passes.dce import DCE

# the forward program of `sum(tanh(x @ w))` differentiated: outputs, then residuals
FWD = """func @fwd(%0: f32[4,8], %1: f32[8,8]) -> (f32[], f32[4,8], f32[4,8]) {
  %2 = dot_general(%0, %1) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[4,8])
  %3 = tanh(%2) : (f32[4,8])
  %4 = multiply(%3, %3) : (f32[4,8])
  %5 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %6 = broadcast_in_dim(%5) {shape=[4, 8], broadcast_dimensions=[]} : (f32[4,8])
  %7 = subtract(%6, %4) : (f32[4,8])
  %8 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %9 = reduce(%3, %8) {dimensions=[0, 1]} : (f32[]) region(%10: f32[], %11: f32[]) {
    %12 = add(%10, %11) : (f32[])
    return %12
  }
  return %9, %3, %7
}"""

# its linear program: the tangent of x, then one parameter per residual
LIN = """func @lin(%0: f32[4,8], %1: f32[4,8], %2: f32[4,8]) -> (f32[4,8]) {
  %3 = multiply(%0, %2) : (f32[4,8])
  %4 = add(%3, %1) : (f32[4,8])
  return %4
}"""


def _args(fn, rng):
    return [rng.standard_normal(p.type.shape).astype(np.float32) for p in fn.params]


def test_plan_recomputes_the_cheap_coefficient_and_saves_the_expensive_chain():
    fwd = verify(parse(FWD))
    p = rp.plan(fwd, 1, free=fwd.params)
    res = fwd.results[1:]
    assert p.saved == [res[0]]  # tanh(x @ w): the dot is never recomputed
    assert p.recomputed == [res[1]]  # 1 - tanh**2, from tanh
    assert [op.name for op in p.ops] == ["multiply", "constant", "broadcast_in_dim", "subtract"]
    assert (p.all_bytes, p.saved_bytes) == (256, 128)


def test_rewrite_keeps_the_numbers_and_recomputes_behind_a_barrier():
    fwd, lin = verify(parse(FWD)), verify(parse(LIN))
    p = rp.plan(fwd, 1, free=fwd.params)
    fwd2, lin2 = rp.rewrite(fwd, 1, lin, 1, p)
    verify(fwd2), verify(lin2)
    # the forward no longer computes the coefficient; the linear program starts with it
    assert "subtract" not in print_function(fwd2)
    assert (
        print_function(lin2)
        == """func @lin(%0: f32[4,8], %1: f32[4,8]) -> (f32[4,8]) {
  %2 = optimization_barrier(%1) : (f32[4,8])
  %3 = multiply(%2, %2) : (f32[4,8])
  %4 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %5 = broadcast_in_dim(%4) {shape=[4, 8], broadcast_dimensions=[]} : (f32[4,8])
  %6 = subtract(%5, %3) : (f32[4,8])
  %7 = multiply(%0, %6) : (f32[4,8])
  %8 = add(%7, %1) : (f32[4,8])
  return %8
}"""
    )
    rng = np.random.default_rng(0)
    x = _args(fwd, rng)
    t = rng.standard_normal((4, 8)).astype(np.float32)
    out = interpret(fwd, *x)
    out2 = interpret(fwd2, *x)
    np.testing.assert_array_equal(out2[0], out[0])
    want = interpret(lin, t, *out[1:])
    got = interpret(lin2, t, *out2[1:])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


def test_budget_zero_recomputes_from_the_inputs_and_pins_win():
    fwd = verify(parse(FWD))
    p = rp.plan(fwd, 1, free=fwd.params, budget=0.0)
    assert p.saved_bytes == 0 and set(p.saved) <= set(fwd.params)
    assert "dot_general" in [op.name for op in p.ops]
    pinned = rp.plan(fwd, 1, free=fwd.params, pinned=[fwd.results[2]], budget=0.0)
    assert fwd.results[2] in pinned.saved
    everything = rp.plan(fwd, 1, free=fwd.params, budget=1.0)
    assert everything.saved == fwd.results[1:] and not everything.ops


def test_must_not_change_a_residual_only_an_expensive_op_makes():
    src = """func @fwd(%0: f32[4,8], %1: f32[8,8]) -> (f32[4,8], f32[4,8]) {
  %2 = dot_general(%0, %1) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[4,8])
  return %2, %2
}"""
    fwd = verify(parse(src))
    p = rp.plan(fwd, 1, free=fwd.params)
    assert p.saved == [fwd.results[1]] and not p.recomputed and not p.ops
    # residuals out of program order keep their order (the linear program reads them so)
    src2 = src.replace("-> (f32[4,8], f32[4,8])", "-> (f32[4,8], f32[4,8], f32[4,8])").replace(
        "  return %2, %2",
        "  %3 = dot_general(%2, %1) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], "
        "lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[4,8])\n"
        "  return %3, %3, %2",
    )
    fwd2 = verify(parse(src2))
    p2 = rp.plan(fwd2, 1, free=fwd2.params)
    assert p2.saved == fwd2.results[1:] and not p2.recomputed


# ---- through the API ----------------------------------------------------------------------

MODES = [{"remat": False}, {}, {"remat_budget": 0.4}, {"remat_budget": 0.0}]


def _mlp(xp):
    def loss(params, x):
        h = x
        for w, b in params:
            h = xp.tanh(h @ w + b)
        z = h - xp.max(h, axis=-1, keepdims=True)
        return -xp.mean(z - xp.log(xp.sum(xp.exp(z), axis=-1, keepdims=True)))

    return loss


def _assert_tree_close(a, b, rtol=2e-5, atol=1e-6):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def test_mlp_same_numbers_with_remat_off_on_and_budgets():
    rng = np.random.default_rng(1)
    sizes = [6, 16, 16, 5]
    params = [
        (rng.standard_normal((a, b)).astype(np.float32) / 3, np.zeros(b, np.float32))
        for a, b in zip(sizes[:-1], sizes[1:])
    ]
    x = rng.standard_normal((4, 6)).astype(np.float32)
    want = jax.value_and_grad(_mlp(jjnp))(params, x)
    records = {}
    for opts in MODES:
        f = purejit.jit(purejit.value_and_grad(_mlp(jnp)), compiler_options=opts)
        _assert_tree_close(f(params, x), want)
        (rec,) = f.lower(params, x).residuals
        records[rec.mode] = rec
    assert records["off"].saved_bytes == records["off"].all_bytes > 0
    assert not records["off"].recomputed
    auto = records["auto"]
    assert auto.recomputed and auto.saved_bytes < records["off"].saved_bytes
    assert records["budget=0.4"].saved_bytes <= 0.4 * records["off"].all_bytes
    assert records["budget=0"].saved_bytes == 0


def test_explain_lists_saved_and_recomputed_residuals_with_lines():
    def loss(w, x):
        h = jnp.tanh(x @ w)  # the line explain names
        return jnp.sum(h * h)

    w = np.eye(8, dtype=np.float32)
    x = np.ones((4, 8), np.float32)
    ex = purejit.explain(purejit.jit(purejit.value_and_grad(loss)), w, x)
    text = str(ex)
    assert "residuals (saved by the forward pass for the backward pass)" in text
    assert "remat auto" in text and "recomputed in the backward pass" in text
    line = loss.__code__.co_firstlineno + 1
    (row,) = [r for r in text.splitlines() if "output of tanh" in r]
    assert row.split()[:3] == ["f32[4,8]", "128", "B"]
    assert row.endswith(f"test_remat.py:{line}")
    assert "a value it closes over    - (an input: not copied)" in text  # x
    assert ex.saved_bytes == 128 and "total saved: 128 B" in text


def test_dce_drops_residuals_no_backward_pass_reads():
    # the aux output's tangent needs cos(x); no cotangent reaches it, so the saved copy is
    # unread and the optimised program no longer computes it
    def f(x):
        return jnp.sum(x * x), jnp.sin(x) * 2.0

    x = np.linspace(0, 1, 8, dtype=np.float32)
    vg = purejit.jit(purejit.value_and_grad(f, has_aux=True), compiler_options={"remat": False})
    lowered = vg.lower(x)
    (rec,) = lowered.residuals
    unread = [r for r in rec.saved if not r.read]
    assert "output of cosine" in [r.what for r in unread]
    assert "cosine(" in print_function(lowered.traced)
    assert "cosine(" not in lowered.ir()
    (v, aux), g = vg(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-6)


def test_dce_removes_a_residual_nobody_reads_from_a_joint_program():
    # value_and_grad(lambda x: (sum(x * x), sin(x))), has_aux: the forward computes the
    # residual cos(x) for the aux output's tangent, which no cotangent reaches
    src = """func @step(%0: f32[4]) -> (f32[], f32[4], f32[4]) {
  %1 = multiply(%0, %0) : (f32[4])
  %2 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %3 = reduce(%1, %2) {dimensions=[0]} : (f32[]) region(%4: f32[], %5: f32[]) {
    %6 = add(%4, %5) : (f32[])
    return %6
  }
  %7 = sine(%0) : (f32[4])
  %8 = cosine(%0) : (f32[4])
  %9 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %10 = broadcast_in_dim(%9) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %11 = multiply(%10, %0) : (f32[4])
  %12 = add(%11, %11) : (f32[4])
  return %3, %7, %12
}"""
    fn = verify(parse(src))
    out = DCE()(fn).fn
    assert (
        print_function(out)
        == """func @step(%0: f32[4]) -> (f32[], f32[4], f32[4]) {
  %1 = multiply(%0, %0) : (f32[4])
  %2 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %3 = reduce(%1, %2) {dimensions=[0]} : (f32[]) region(%4: f32[], %5: f32[]) {
    %6 = add(%4, %5) : (f32[])
    return %6
  }
  %7 = sine(%0) : (f32[4])
  %8 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %9 = broadcast_in_dim(%8) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %10 = multiply(%9, %0) : (f32[4])
  %11 = add(%10, %10) : (f32[4])
  return %3, %7, %11
}"""
    )
    x = np.linspace(0, 1, 4, dtype=np.float32)
    for a, b in zip(interpret(fn, x), interpret(out, x)):
        np.testing.assert_array_equal(a, b)


def test_scan_body_residuals_are_planned_and_give_the_same_numbers():
    def rnn(xp, lax):
        def loss(w, xs):
            def step(h, x):
                h = xp.tanh(h @ w + x)
                return h, xp.sum(h * h)

            h, ys = lax.scan(step, xp.zeros((3, 8), xp.float32), xs)
            return xp.sum(ys) + xp.sum(h)

        return loss

    rng = np.random.default_rng(2)
    w = rng.standard_normal((8, 8)).astype(np.float32) / 3
    xs = rng.standard_normal((5, 3, 8)).astype(np.float32)
    want = jax.value_and_grad(rnn(jjnp, jax.lax))(w, xs)
    for opts in MODES:
        f = purejit.jit(purejit.value_and_grad(rnn(jnp, purejit.lax)), compiler_options=opts)
        _assert_tree_close(f(w, xs), want)
        if not opts:
            recs = f.lower(w, xs).residuals
            (body,) = [r for r in recs if r.where.startswith("scan body")]
            assert body.where == "scan body (length 5)"
            assert body.recomputed and body.saved_bytes < body.all_bytes
            assert all(r.type.shape[0] == 5 for r in body.saved if not r.free)


def test_a_users_checkpoint_policy_wins():
    ad = purejit.ad_checkpoint

    def f(x):
        g = purejit.checkpoint(
            lambda x: jnp.sin(jnp.sin(x)), policy=ad.checkpoint_policies.everything_saveable
        )
        return jnp.sum(g(x) * x)

    x = np.linspace(0, 1, 16, dtype=np.float32)
    saved = {}
    for opts in [{"remat": False}, {}]:
        vg = purejit.jit(purejit.value_and_grad(f), compiler_options=opts)
        lowered = vg.lower(x)
        (rec,) = lowered.residuals
        saved[rec.mode] = sorted((r.what, str(r.type)) for r in rec.saved)
        _assert_tree_close(
            vg(x), jax.value_and_grad(lambda x: jjnp.sum(jjnp.sin(jjnp.sin(x)) * x))(x)
        )
    assert saved["auto"] == saved["off"]
    assert ("output of sine", "f32[16]") in saved["auto"]


def test_options_are_checked_and_config_sets_the_default():
    with pytest.raises(ValueError, match="remat_budget=2"):
        purejit.jit(lambda x: x, compiler_options={"remat_budget": 2})
    with pytest.raises(ValueError, match="remat="):
        purejit.jit(lambda x: x, compiler_options={"remat": "yes"})
    x = np.ones(4, np.float32)

    def f(x):
        return jnp.sum(jnp.sin(x))

    purejit.config.update("remat", False)
    try:
        (rec,) = purejit.jit(purejit.grad(f)).lower(x).residuals
    finally:
        purejit.config.update("remat", True)
    assert rec.mode == "off"
    (rec,) = purejit.jit(purejit.grad(f), compiler_options={"remat_budget": 0.5}).lower(x).residuals
    assert rec.mode == "budget=0.5"
