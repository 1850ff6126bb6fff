"""CSE keeps a divisor's broadcast and the value it broadcasts apart: XLA's simplifier turns
`A / broadcast(B)` into `A * broadcast(1 / B)` (another rounding) only while `B` has one
user, before its own CSE. IR text in -> text out, the interpreter, and JAX's bits."""

import jax
import jax.numpy as jjnp
import numpy as np

import purejit
import purejit.numpy as pnp
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes.cse import CSE

SRC = """func @f(%0: f32[8], %1: f32[1], %2: s32[]) -> (f32[8], f32[1]) {
  %3 = constant() {value=array<s32[]: [1]>} : (s32[])
  %4 = add(%2, %3) : (s32[])
  %5 = convert(%4) {dtype=f32} : (f32[])
  %6 = broadcast_in_dim(%5) {shape=[8], broadcast_dimensions=[]} : (f32[8])
  %7 = divide(%0, %6) : (f32[8])
  %8 = add(%2, %3) : (s32[])
  %9 = convert(%8) {dtype=f32} : (f32[])
  %10 = broadcast_in_dim(%9) {shape=[1], broadcast_dimensions=[]} : (f32[1])
  %11 = divide(%1, %10) : (f32[1])
  return %7, %11
}"""


def test_divisor_chains_stay_apart_the_rest_merges():
    fn = verify(parse(SRC))
    res = CSE()(fn)
    verify(res.fn)
    # the second `n + 1` merges; each divisor keeps its own convert, as traced
    assert print_function(res.fn) == """func @f(%0: f32[8], %1: f32[1], %2: s32[]) -> (f32[8], f32[1]) {
  %3 = constant() {value=array<s32[]: [1]>} : (s32[])
  %4 = add(%2, %3) : (s32[])
  %5 = convert(%4) {dtype=f32} : (f32[])
  %6 = broadcast_in_dim(%5) {shape=[8], broadcast_dimensions=[]} : (f32[8])
  %7 = divide(%0, %6) : (f32[8])
  %8 = convert(%4) {dtype=f32} : (f32[])
  %9 = broadcast_in_dim(%8) {shape=[1], broadcast_dimensions=[]} : (f32[1])
  %10 = divide(%1, %9) : (f32[1])
  return %7, %10
}"""  # fmt: skip
    assert res.report == {"merged_ops": 1}
    args = [np.arange(8, dtype=np.float32), np.ones(1, np.float32), np.int32(2)]
    for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
        np.testing.assert_array_equal(a, b)


def test_running_mean_of_two_leaves_is_jax_bits():
    """optax's MultiSteps: `acc + (g - acc) / (n + 1)` for every parameter."""
    rng = np.random.default_rng(0)
    acc = {"w": rng.normal(size=(1000,)).astype(np.float32), "b": np.ones(1, np.float32)}
    g = {"w": rng.normal(size=(1000,)).astype(np.float32), "b": np.zeros(1, np.float32)}

    def mean(a, g, n):
        return {k: a[k] + (g[k] - a[k]) / (n + 1) for k in a}

    got = purejit.jit(mean)(acc, g, np.int32(2))
    want = jax.jit(mean)(acc, g, np.int32(2))
    assert pnp is not jjnp
    for k in acc:
        np.testing.assert_array_equal(np.asarray(got[k]).view(np.uint32),
                                      np.asarray(want[k]).view(np.uint32))  # fmt: skip
