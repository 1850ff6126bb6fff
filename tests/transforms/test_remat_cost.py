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


# f32 probabilities (a dot's output here) that the backward pass reads in an elementwise
# product, and their bfloat16 copy that it reads in a dot
NARROWED = f"""func @fwd(%0: f32[4,8], %1: f32[8,16]) -> (f32[], f32[4,16], bf16[4,16]) {{
  %2 = dot_general(%0, %1) {_DOT} : (f32[4,16])
  %3 = convert(%2) {{dtype=bf16}} : (bf16[4,16])
  %4 = constant() {{value=array<f32[]: [0.0]>}} : (f32[])
  %5 = reduce(%2, %4) {{dimensions=[0, 1]}} : (f32[]) region(%6: f32[], %7: f32[]) {{
    %8 = add(%6, %7) : (f32[])
    return %8
  }}
  return %5, %2, %3
}}"""

NARROWED_LIN = f"""func @lin(%0: bf16[16,4], %1: f32[4,16], %2: bf16[4,16]) -> (bf16[4,4], f32[4,16]) {{
  %3 = dot_general(%2, %0) {_DOT} : (bf16[4,4])
  %4 = convert(%0) {{dtype=f32}} : (f32[16,4])
  %5 = transpose(%4) {{permutation=[1, 0]}} : (f32[4,16])
  %6 = multiply(%1, %5) : (f32[4,16])
  return %3, %6
}}"""


WIDENED = f"""func @fwd(%0: bf16[4,8], %1: bf16[8,16]) -> (f32[], bf16[4,16], f32[4,16]) {{
  %2 = dot_general(%0, %1) {_DOT} : (bf16[4,16])
  %3 = convert(%2) {{dtype=f32}} : (f32[4,16])
  %4 = constant() {{value=array<f32[]: [0.0]>}} : (f32[])
  %5 = reduce(%3, %4) {{dimensions=[0, 1]}} : (f32[]) region(%6: f32[], %7: f32[]) {{
    %8 = add(%6, %7) : (f32[])
    return %8
  }}
  return %5, %2, %3
}}"""

WIDENED_LIN = f"""func @lin(%0: f32[16,4], %1: bf16[4,16], %2: f32[4,16]) -> (f32[4,4], bf16[4,16]) {{
  %3 = dot_general(%2, %0) {_DOT} : (f32[4,4])
  %4 = convert(%0) {{dtype=bf16}} : (bf16[16,4])
  %5 = transpose(%4) {{permutation=[1, 0]}} : (bf16[4,16])
  %6 = multiply(%1, %5) : (bf16[4,16])
  return %3, %6
}}"""


def test_a_narrowing_copy_a_backward_dot_reads_is_saved_next_to_its_wide_source():
    fwd, lin = verify(parse(NARROWED)), verify(parse(NARROWED_LIN))
    wide, narrow = fwd.results[1:]
    uses = rp.backward_uses(lin, 1, [wide, narrow])
    assert uses[narrow] == (1, True) and uses[wide] == (1, False)
    # rebuilding the bf16 copy reads the f32 array (held anyway: the product reads it) and
    # writes the copy: 3x the bytes it frees, and the copy then sits next to its source in
    # the backward pass as a saved one would; priced above its bytes, it is saved
    traffic = rp.recompute_traffic(fwd, uses)
    assert traffic[narrow] * rp.TRAFFIC_WEIGHT > narrow.type.nbytes
    p = rp.plan(fwd, 1, free=fwd.params, uses=uses)
    assert p.saved == [wide, narrow] and not p.recomputed and p.saved_bytes == 256 + 128
    # must not change: a widening copy (reads 2 bytes, writes 4) is still rebuilt
    fwd, lin = verify(parse(WIDENED)), verify(parse(WIDENED_LIN))
    narrow, wide = fwd.results[1:]
    uses = rp.backward_uses(lin, 1, [narrow, wide])
    assert uses[wide] == (1, True)
    assert rp.recompute_traffic(fwd, uses)[wide] == 128 + 256  # reads the bf16, writes itself
    p = rp.plan(fwd, 1, free=fwd.params, uses=uses)
    assert p.saved == [narrow] and p.recomputed == [wide]


@pytest.mark.parametrize("keeps_barriers", [True, False], ids=["gpu", "cpu"])
def test_unfused_bf16_attention_saves_what_jax_saves(monkeypatch, keeps_barriers):
    # bench.attention's hand-written attention (bf16 q, k, v; f32 logits and softmax; the
    # probabilities cast back to bf16 for the second product). The backward pass reads the
    # f32 probabilities in the softmax's derivative and their bf16 copy in the dot for dv.
    # Rebuilding the copy from the f32 probabilities behind a barrier (the GPU plan before)
    # moved 6 bytes an element more and held 16 GiB against JAX's 12 GiB at T = 4096 on an
    # H100 (1.33x JAX's step); now both are saved, as JAX saves them, and only broadcasts
    # (the causal mask, the fill, the scale) are rebuilt, where their readers fuse them.
    from bench.attention import _loss, hand_written

    plain = CompilerOptions.remat_settings
    monkeypatch.setattr(
        CompilerOptions,
        "remat_settings",
        lambda self: dataclasses.replace(plain(self), keeps_barriers=keeps_barriers),
    )
    b, t, n, h = 1, 16, 2, 8
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((b, t, n, h)).astype(jjnp.bfloat16) for _ in range(3))
    w = rng.standard_normal((b, t, n, h)).astype(np.float32)
    loss = _loss(lambda q, k, v: hand_written(jnp, purejit.nn.softmax, q, k, v), w)
    vg = purejit.jit(
        purejit.value_and_grad(loss, argnums=(0, 1, 2)),
        compiler_options={"fused_attention": False},
    )
    lowered = vg.lower(q, k, v)
    (rec,) = lowered.residuals
    scores = (b, n, t, t)
    held = sorted(
        (r.what, str(r.type.dtype)) for r in rec.saved if not r.free and r.type.shape == scores
    )
    assert held == [("output of convert", "bfloat16"), ("output of custom_jvp_call", "float32")]
    assert rec.saved_bytes == 6 * b * n * t * t  # f32 and bf16 probabilities, as JAX
    rebuilt = {r.what for r in rec.recomputed if r.type.shape == scores}
    assert rebuilt == {"output of broadcast_in_dim"}
    assert "optimization_barrier" not in lowered.ir()  # nothing rebuilt from a saved value
    want = jax.value_and_grad(
        _loss(lambda q, k, v: hand_written(jjnp, jax.nn.softmax, q, k, v), w), argnums=(0, 1, 2)
    )(q, k, v)
    got = vg(q, k, v)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-5)
    for a, e in zip(got[1], want[1]):
        np.testing.assert_allclose(
            np.asarray(a, np.float32), np.asarray(e, np.float32), rtol=2e-2, atol=2e-2
        )


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
