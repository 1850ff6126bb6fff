"""What the remat plan does with a layer norm's row statistics (`LAYER_NORM_PLAN` in
`passes/_remat_cost.py`): "stats" (the default) saves the small mean and variance arrays and
rebuilds the normalised rows from them; "recompute" never saves them, so the backward pass
rebuilds the whole normalisation from its input behind one barrier. Both give the same
numbers as JAX's save-everything gradient."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jjnp
import ml_dtypes
import purejit
import purejit.numpy as jnp
from purejit.ir import interpret, parse, verify
from purejit.passes import _remat_cost
from purejit.passes import remat as rp

BF16 = np.dtype(ml_dtypes.bfloat16)

# a layer norm of x's rows written as users do (mean, then the variance of x - mean); the
# backward pass reads x - mean and 1 / sqrt(var + eps), as the linearization of
# (x - m) * r does
LN = """func @fwd(%0: f32[4,8]) -> (f32[4,8], f32[4,8], f32[4,8]) {
  %1 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %2 = reduce(%0, %1) {dimensions=[1]} : (f32[4]) region(%3: f32[], %4: f32[]) {
    %5 = add(%3, %4) : (f32[])
    return %5
  }
  %6 = constant() {value=array<f32[]: [8.0]>} : (f32[])
  %7 = broadcast_in_dim(%6) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %8 = divide(%2, %7) : (f32[4])
  %9 = broadcast_in_dim(%8) {shape=[4, 8], broadcast_dimensions=[0]} : (f32[4,8])
  %10 = subtract(%0, %9) : (f32[4,8])
  %11 = multiply(%10, %10) : (f32[4,8])
  %12 = reduce(%11, %1) {dimensions=[1]} : (f32[4]) region(%13: f32[], %14: f32[]) {
    %15 = add(%13, %14) : (f32[])
    return %15
  }
  %16 = divide(%12, %7) : (f32[4])
  %17 = sqrt(%16) : (f32[4])
  %18 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %19 = broadcast_in_dim(%18) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %20 = divide(%19, %17) : (f32[4])
  %21 = broadcast_in_dim(%20) {shape=[4, 8], broadcast_dimensions=[0]} : (f32[4,8])
  %22 = multiply(%10, %21) : (f32[4,8])
  return %22, %10, %21
}"""

LN_LIN = """func @lin(%0: f32[4,8], %1: f32[4,8], %2: f32[4,8]) -> (f32[4,8]) {
  %3 = multiply(%0, %2) : (f32[4,8])
  %4 = multiply(%3, %1) : (f32[4,8])
  return %4
}"""


LN_RECOMPUTED = """func @lin(%0: f32[4,8], %1: f32[4,8]) -> (f32[4,8]) {
  %2 = optimization_barrier(%1) : (f32[4,8])
  %3 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %4 = reduce(%2, %3) {dimensions=[1]} : (f32[4]) region(%5: f32[], %6: f32[]) {
    %7 = add(%5, %6) : (f32[])
    return %7
  }
  %8 = constant() {value=array<f32[]: [8.0]>} : (f32[])
  %9 = broadcast_in_dim(%8) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %10 = divide(%4, %9) : (f32[4])
  %11 = broadcast_in_dim(%10) {shape=[4, 8], broadcast_dimensions=[0]} : (f32[4,8])
  %12 = subtract(%2, %11) : (f32[4,8])
  %13 = multiply(%12, %12) : (f32[4,8])
  %14 = reduce(%13, %3) {dimensions=[1]} : (f32[4]) region(%15: f32[], %16: f32[]) {
    %17 = add(%15, %16) : (f32[])
    return %17
  }
  %18 = divide(%14, %9) : (f32[4])
  %19 = sqrt(%18) : (f32[4])
  %20 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %21 = broadcast_in_dim(%20) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %22 = divide(%21, %19) : (f32[4])
  %23 = broadcast_in_dim(%22) {shape=[4, 8], broadcast_dimensions=[0]} : (f32[4,8])
  %24 = multiply(%0, %23) : (f32[4,8])
  %25 = multiply(%24, %12) : (f32[4,8])
  return %25
}"""


@pytest.fixture
def recompute(monkeypatch):
    monkeypatch.setattr(_remat_cost, "LAYER_NORM_PLAN", "recompute")


def _names(fn, values):
    """`{%k}` names of `values` in the printed `fn`, for readable assertions."""
    position = {r: k for k, op in enumerate(fn.ops) for r in op.results}
    return sorted(f"{fn.ops[position[v]].name}:{v.type}" for v in values if v in position)


def test_row_statistics_are_the_sums_and_what_they_make_row_sized():
    fn = parse(LN)
    stats = _remat_cost.row_statistics(fn)
    assert _names(fn, stats) == [
        "divide:f32[4]",
        "divide:f32[4]",
        "divide:f32[4]",
        "reduce:f32[4]",
        "reduce:f32[4]",
        "sqrt:f32[4]",
    ]
    # the broadcasts back to the rows and the full-size values are not statistics
    assert not any(v.type.shape == (4, 8) for v in stats)


SOFTMAX = """func @fwd(%0: f32[4,8]) -> (f32[4,8]) {
  %1 = constant() {value=array<f32[]: [-inf]>} : (f32[])
  %2 = reduce(%0, %1) {dimensions=[1]} : (f32[4]) region(%3: f32[], %4: f32[]) {
    %5 = maximum(%3, %4) : (f32[])
    return %5
  }
  %6 = broadcast_in_dim(%2) {shape=[4, 8], broadcast_dimensions=[0]} : (f32[4,8])
  %7 = subtract(%0, %6) : (f32[4,8])
  %8 = exponential(%7) : (f32[4,8])
  %9 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %10 = reduce(%8, %9) {dimensions=[1]} : (f32[4]) region(%11: f32[], %12: f32[]) {
    %13 = add(%11, %12) : (f32[])
    return %13
  }
  %14 = reduce(%0, %9) {dimensions=[0, 1]} : (f32[]) region(%15: f32[], %16: f32[]) {
    %17 = add(%15, %16) : (f32[])
    return %17
  }
  %18 = reduce(%0, %9) {dimensions=[0]} : (f32[8]) region(%19: f32[], %20: f32[]) {
    %21 = add(%19, %20) : (f32[])
    return %21
  }
  %22 = broadcast_in_dim(%10) {shape=[4, 8], broadcast_dimensions=[0]} : (f32[4,8])
  %23 = divide(%8, %22) : (f32[4,8])
  return %23
}"""


def test_softmax_and_other_reductions_are_not_row_statistics():
    # a max (idempotent), a sum of exp (approximate), a whole sum and a column sum
    assert _remat_cost.row_statistics(parse(SOFTMAX)) == set()


def test_the_default_saves_the_statistics():
    fwd, lin = parse(LN), parse(LN_LIN)
    assert _remat_cost.LAYER_NORM_PLAN == "stats"
    p = rp.plan(fwd, 1, free=fwd.params, uses=rp.backward_uses(lin, 1, fwd.results[1:]))
    assert _names(fwd, p.saved) == ["divide:f32[4]", "divide:f32[4]"]
    assert not any(op.has_trait("reduction") for op in p.ops)


def test_recompute_saves_the_input_and_rebuilds_the_norm_behind_one_barrier(recompute):
    fwd, lin = parse(LN), parse(LN_LIN)
    p = rp.plan(fwd, 1, free=fwd.params, uses=rp.backward_uses(lin, 1, fwd.results[1:]))
    assert p.saved == [fwd.params[0]]
    assert sum(op.has_trait("reduction") for op in p.ops) == 2
    assert len(rp.groups(p)) == 1
    fwd2, lin2 = rp.rewrite(fwd, 1, lin, 1, p)
    verify(fwd2)
    verify(lin2)
    # the input behind one barrier, then the whole norm, then the linear program
    assert str(lin2) == LN_RECOMPUTED
    # the rewritten pair computes what the original did
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((2, 4, 8)).astype(np.float32)
    out, *res = interpret(fwd, x)
    out2, *saved = interpret(fwd2, x)
    np.testing.assert_array_equal(out2, out)
    np.testing.assert_array_equal(interpret(lin2, t, *saved)[0], interpret(lin, t, *res)[0])


def test_a_pinned_statistic_stays_saved(recompute):
    # a user's checkpoint policy wins over the plan
    fwd, lin = parse(LN), parse(LN_LIN)
    mean = fwd.ops[4].results[0]
    p = rp.plan(
        fwd, 1, free=fwd.params, pinned={mean}, uses=rp.backward_uses(lin, 1, fwd.results[1:])
    )
    assert mean in p.saved


def test_an_unknown_plan_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_remat_cost, "LAYER_NORM_PLAN", "normalised")
    with pytest.raises(ValueError, match=r"LAYER_NORM_PLAN='normalised' must be one of"):
        rp.plan(parse(LN), 1)


def _ln(xp, x, g, b, eps=1e-5):  # bench.train's layer norm
    m = xp.mean(x, axis=-1, keepdims=True)
    v = xp.mean((x - m) * (x - m), axis=-1, keepdims=True)
    return (x - m) * (1.0 / xp.sqrt(v + eps)) * g + b


def _loss(xp):
    def loss(x, g, b, w1, w2):
        h = _ln(xp, x, g, b)
        x = x + h @ w1
        h = _ln(xp, x, g, b) @ w2
        return (h.astype(xp.float32) ** 2).mean()

    return loss


def _args():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 16, 32)).astype(BF16)
    g = (1 + 0.1 * rng.standard_normal(32)).astype(BF16)
    b = (0.1 * rng.standard_normal(32)).astype(BF16)
    w1, w2 = (rng.standard_normal((2, 32, 32)) / np.sqrt(32)).astype(BF16)
    return x, g, b, w1, w2


def _stat_bytes(rec) -> int:
    """Bytes the record saves in arrays of one element per row ([2, 16, 1])."""
    return sum(r.nbytes for r in rec.saved if not r.free and r.type.shape[-1:] == (1,))


@pytest.mark.parametrize("plan", ["stats", "recompute"])
def test_each_plan_gives_jaxs_gradient_in_bf16(monkeypatch, plan):
    monkeypatch.setattr(_remat_cost, "LAYER_NORM_PLAN", plan)
    args = _args()
    f = purejit.jit(purejit.value_and_grad(_loss(jnp), argnums=(0, 1, 2, 3, 4)))
    lowered = f.lower(*args)
    (rec,) = lowered.residuals
    if plan == "stats":
        assert _stat_bytes(rec) > 0
    else:  # nothing of one element per row crosses to the backward pass
        assert _stat_bytes(rec) == 0
    value, grads = lowered.compile()(*args)
    jv, jg = jax.jit(jax.value_and_grad(_loss(jjnp), argnums=(0, 1, 2, 3, 4)))(*args)
    np.testing.assert_allclose(float(value), float(jv), rtol=1e-2)
    for a, b in zip(grads, jg):
        a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
        np.testing.assert_allclose(a32, b32, atol=2e-2 * np.abs(b32).max(), rtol=2e-2)


def test_the_step_profile_form_sets_the_plan_by_name():
    # `python -m bench.tools.step_profile --forms "purejit [LAYER_NORM_PLAN=recompute]"`
    from bench.tools.step_profile import _remat_patch

    base, patch = _remat_patch("purejit [LAYER_NORM_PLAN=recompute]")
    assert (base, patch) == ("purejit", {"LAYER_NORM_PLAN": "recompute"})
    assert _remat_patch("purejit [TRAFFIC_WEIGHT=16.0]")[1] == {"TRAFFIC_WEIGHT": 16.0}
    assert patch["LAYER_NORM_PLAN"] in _remat_cost.LAYER_NORM_PLANS
