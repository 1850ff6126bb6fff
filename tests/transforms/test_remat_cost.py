"""The automatic remat plan's cost model: bytes held from the forward to the backward pass,
plus the memory traffic a recomputation adds to the backward pass (`TRAFFIC_WEIGHT` per
byte; nothing when it fuses into the kernel reading it). Reductions are saved, elementwise
chains recomputed (as one group), a copy a backward dot reads is saved rather than rebuilt,
and a user's `custom_vjp` residuals stay saved."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import jax
import jax.numpy as jjnp
import purejit
import purejit.numpy as jnp
from purejit.compiler.options import CompilerOptions
from purejit.ir import interpret, parse, verify
from purejit.passes import remat as rp

_DOT = (
    "{lhs_batching_dimensions=[], rhs_batching_dimensions=[], "
    "lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]}"
)

# softmax of a parameter: the backward pass reads the probabilities in a dot and the exp in
# an elementwise product
SOFTMAX = """func @fwd(%0: f32[4,8]) -> (f32[], f32[4,8], f32[4,8]) {
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
  %14 = broadcast_in_dim(%10) {shape=[4, 8], broadcast_dimensions=[0]} : (f32[4,8])
  %15 = divide(%8, %14) : (f32[4,8])
  %16 = reduce(%15, %9) {dimensions=[0, 1]} : (f32[]) region(%17: f32[], %18: f32[]) {
    %19 = add(%17, %18) : (f32[])
    return %19
  }
  return %16, %15, %8
}"""

SOFTMAX_LIN = f"""func @lin(%0: f32[8,4], %1: f32[4,8], %2: f32[4,8]) -> (f32[4,4], f32[4,8]) {{
  %3 = dot_general(%1, %0) {_DOT} : (f32[4,4])
  %4 = multiply(%2, %1) : (f32[4,8])
  return %3, %4
}}"""

# three slices of a dot's output, each transposed; the backward pass reads them in dots
QKV = f"""func @fwd(%0: f32[4,8], %1: f32[8,12]) -> (f32[], f32[4,4], f32[4,4], f32[4,4]) {{
  %2 = dot_general(%0, %1) {_DOT} : (f32[4,12])
  %3 = slice(%2) {{start_indices=[0, 0], limit_indices=[4, 4], strides=[1, 1]}} : (f32[4,4])
  %4 = transpose(%3) {{permutation=[1, 0]}} : (f32[4,4])
  %5 = slice(%2) {{start_indices=[0, 4], limit_indices=[4, 8], strides=[1, 1]}} : (f32[4,4])
  %6 = transpose(%5) {{permutation=[1, 0]}} : (f32[4,4])
  %7 = slice(%2) {{start_indices=[0, 8], limit_indices=[4, 12], strides=[1, 1]}} : (f32[4,4])
  %8 = transpose(%7) {{permutation=[1, 0]}} : (f32[4,4])
  %9 = constant() {{value=array<f32[]: [0.0]>}} : (f32[])
  %10 = reduce(%2, %9) {{dimensions=[0, 1]}} : (f32[]) region(%11: f32[], %12: f32[]) {{
    %13 = add(%11, %12) : (f32[])
    return %13
  }}
  return %10, %4, %6, %8
}}"""

QKV_LIN = f"""func @lin(%0: f32[4,4], %1: f32[4,4], %2: f32[4,4], %3: f32[4,4]) -> (f32[4,4]) {{
  %4 = dot_general(%0, %1) {_DOT} : (f32[4,4])
  %5 = dot_general(%4, %2) {_DOT} : (f32[4,4])
  %6 = dot_general(%5, %3) {_DOT} : (f32[4,4])
  return %6
}}"""


def test_reductions_are_saved_and_the_elementwise_chain_recomputed():
    fwd, lin = verify(parse(SOFTMAX)), verify(parse(SOFTMAX_LIN))
    res = fwd.results[1:]
    uses = rp.backward_uses(lin, 1, res)
    assert uses == {res[0]: (2, True), res[1]: (1, False)}  # probabilities: a dot reads them
    traffic = rp.recompute_traffic(fwd, uses)
    assert traffic[res[0]] == 2 * 128  # made in memory for the dot: reads exp, writes itself
    assert traffic[res[1]] == 0  # fuses into the product that reads it
    p = rp.plan(fwd, 1, free=fwd.params, uses=uses)
    made = {r: op.name for op in fwd.ops for r in op.results}
    # max and sum are saved (reductions are never recomputed); exp and divide are rebuilt
    assert sorted(made.get(v, "input") for v in p.saved) == ["input", "reduce", "reduce"]
    assert p.recomputed == res and p.saved_bytes == 32
    # the backward pass makes the recomputed ops as one group (exp shared by both residuals)
    (group,) = rp.groups(p)
    assert [op.name for op in group.ops] == [
        "broadcast_in_dim",
        "subtract",
        "exponential",
        "broadcast_in_dim",
        "divide",
    ]
    # the rewritten pair computes the same numbers
    fwd2, lin2 = rp.rewrite(fwd, 1, lin, 1, p)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    t = rng.standard_normal((8, 4)).astype(np.float32)
    out, out2 = interpret(fwd, x), interpret(fwd2, x)
    for got, want in zip(interpret(lin2, t, *out2[1:]), interpret(lin, t, *out[1:])):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_copy_a_backward_dot_reads_is_saved_rather_than_rebuilt_from_its_source():
    fwd, lin = verify(parse(QKV)), verify(parse(QKV_LIN))
    res = fwd.results[1:]
    dot_out = fwd.ops[0].results[0]
    # bytes alone tie (the three slices hold what the dot's output holds) and the one array
    # wins; knowing that dots read the transposes, rebuilding them costs a kernel each
    blind = rp.plan(fwd, 1, free=fwd.params)
    assert blind.saved == [dot_out] and blind.recomputed == res
    uses = rp.backward_uses(lin, 1, res)
    assert all(uses[r] == (1, True) for r in res)
    assert all(rp.recompute_traffic(fwd, uses)[r] == 2 * 64 for r in res)
    p = rp.plan(fwd, 1, free=fwd.params, uses=uses)
    assert p.saved == res and not p.recomputed and p.saved_bytes == 192


# the same slices reshaped (as q, k and v reach the fused attention op): a reshape is free,
# but a reader that cannot fuse it needs the slice itself in memory
QKV_RESHAPED = f"""func @fwd(%0: f32[4,8], %1: f32[8,12]) -> (f32[], f32[2,8], f32[2,8], f32[2,8]) {{
  %2 = dot_general(%0, %1) {_DOT} : (f32[4,12])
  %3 = slice(%2) {{start_indices=[0, 0], limit_indices=[4, 4], strides=[1, 1]}} : (f32[4,4])
  %4 = reshape(%3) {{shape=[2, 8]}} : (f32[2,8])
  %5 = slice(%2) {{start_indices=[0, 4], limit_indices=[4, 8], strides=[1, 1]}} : (f32[4,4])
  %6 = reshape(%5) {{shape=[2, 8]}} : (f32[2,8])
  %7 = slice(%2) {{start_indices=[0, 8], limit_indices=[4, 12], strides=[1, 1]}} : (f32[4,4])
  %8 = reshape(%7) {{shape=[2, 8]}} : (f32[2,8])
  %9 = constant() {{value=array<f32[]: [0.0]>}} : (f32[])
  %10 = reduce(%2, %9) {{dimensions=[0, 1]}} : (f32[]) region(%11: f32[], %12: f32[]) {{
    %13 = add(%11, %12) : (f32[])
    return %13
  }}
  return %10, %4, %6, %8
}}"""

QKV_RESHAPED_LIN = f"""func @lin(%0: f32[8,8], %1: f32[2,8], %2: f32[2,8], %3: f32[2,8])
    -> (f32[2,8], f32[2,8], f32[2,8]) {{
  %4 = dot_general(%1, %0) {_DOT} : (f32[2,8])
  %5 = dot_general(%2, %0) {_DOT} : (f32[2,8])
  %6 = dot_general(%3, %0) {_DOT} : (f32[2,8])
  return %4, %5, %6
}}"""


def test_a_slice_a_backward_dot_reads_through_a_reshape_is_saved():
    fwd, lin = verify(parse(QKV_RESHAPED)), verify(parse(QKV_RESHAPED_LIN))
    res = fwd.results[1:]
    slices = [fwd.ops[i].results[0] for i in (1, 3, 5)]
    uses = rp.backward_uses(lin, 1, res)
    assert all(uses[r] == (1, True) for r in res)
    traffic = rp.recompute_traffic(fwd, uses)
    assert all(traffic[r] == 0 for r in res)  # the reshapes: views of their operands
    assert all(traffic[s] == 2 * 64 for s in slices)  # each slice is a copy made in memory
    p = rp.plan(fwd, 1, free=fwd.params, uses=uses)
    # the slices' bytes are saved (as reshaped), not the product with three copies rebuilt
    assert fwd.ops[0].results[0] not in p.saved and p.saved_bytes == 192


def _attention(xp, lax):
    def loss(w, x):
        q, k = x @ w[0], x @ w[1]
        s = (q @ xp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
        s = s - xp.max(s, axis=-1, keepdims=True)
        e = xp.exp(s)
        att = e / xp.sum(e, axis=-1, keepdims=True)
        h = att @ x
        return xp.mean(xp.tanh(h) * h)

    return loss


@pytest.mark.parametrize("keeps_barriers", [True, False], ids=["gpu", "cpu"])
def test_attention_softmax_plan_and_jax_numbers(monkeypatch, keeps_barriers):
    # the divide's JVP reads its numerator, the exp (JAX's form, (-t x) * y**-2), so with
    # the barriers (GPU) or without (CPU, where a recomputed exp would merge into the
    # forward pass anyway) the exp is saved and the probabilities (the divide) recomputed
    plain = CompilerOptions.remat_settings
    monkeypatch.setattr(
        CompilerOptions,
        "remat_settings",
        lambda self: dataclasses.replace(plain(self), keeps_barriers=keeps_barriers),
    )
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((2, 8, 8)) / 3).astype(np.float32)
    x = rng.standard_normal((2, 16, 8)).astype(np.float32)
    want = jax.value_and_grad(_attention(jjnp, jax.lax))(w, x)
    vg = purejit.jit(purejit.value_and_grad(_attention(jnp, purejit.lax)))
    lowered = vg.lower(w, x)
    (rec,) = lowered.residuals
    saved = [r.what for r in rec.saved if not r.free]
    recomputed = [r.what for r in rec.recomputed]
    assert "output of divide" in recomputed
    assert "output of exponential" not in recomputed
    assert "output of exponential" in saved
    # one scores-sized float array is held: the scores or the exp the softmax is rebuilt from
    held = [r for r in rec.saved if not r.free and r.type.shape == (2, 16, 16)]
    assert sum(r.type.dtype == np.float32 for r in held) == 1
    got = vg(w, x)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=2e-5)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=2e-4, atol=1e-6)


def test_custom_vjp_residuals_stay_saved_even_when_cheap():
    @purejit.custom_vjp
    def f(x):
        return jnp.sin(x) * 2.0

    def f_fwd(x):
        return f(x), (x * 3.0,)  # a cheap elementwise residual the automatic plan would drop

    def f_bwd(res, g):
        (r,) = res
        return (g * jnp.cos(r / 3.0) * 2.0,)

    f.defvjp(f_fwd, f_bwd)

    def loss(x):
        return jnp.sum(f(jnp.tanh(x)))

    x = np.linspace(-1, 1, 16, dtype=np.float32)
    vg = purejit.jit(purejit.value_and_grad(loss))
    (rec,) = vg.lower(x).residuals
    assert "output of multiply" in [r.what for r in rec.saved]
    assert "output of multiply" not in [r.what for r in rec.recomputed]
    want = jax.value_and_grad(lambda x: jjnp.sum(jjnp.sin(jjnp.tanh(x)) * 2.0))(x)
    got = vg(x)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-5)
