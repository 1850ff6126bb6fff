"""merge_threefry and expand_threefry: IR text in -> IR out, must-not-change cases, and the
reference interpreter, the compiled program and JAX's threefry_2x32 give the same bits."""

import jax
import numpy as np
import pytest
from jax.extend.random import threefry_2x32
from purejit.ir import interpret, parse, print_function, verify
from purejit.ir.ops.random import threefry2x32_reference
from purejit.passes.expand_threefry import ExpandThreefry
from purejit.passes.merge_threefry import MergeThreefry

from purejit.backend import pjrt, stablehlo

# three sampler-like hashes of 5 counters (keys u32[1]); the second reads the first one's
# bits as its keys, so the first stays and the other two (no hash reads them) merge
THREE = """func @f(%0: u32[1], %1: u32[1], %2: u32[1], %3: u32[1], %4: u32[5], %5: u32[5]) -> (u32[5], u32[5], u32[5], u32[5]) {
  %6, %7 = threefry2x32(%0, %1, %4, %5) : (u32[5], u32[5])
  %8 = slice(%6) {start_indices=[0], limit_indices=[1], strides=[1]} : (u32[1])
  %9 = slice(%7) {start_indices=[0], limit_indices=[1], strides=[1]} : (u32[1])
  %10, %11 = threefry2x32(%8, %9, %4, %5) : (u32[5], u32[5])
  %12, %13 = threefry2x32(%2, %3, %4, %5) : (u32[5], u32[5])
  %14 = xor(%10, %11) : (u32[5])
  return %6, %14, %12, %13
}"""

MERGED = """func @f(%0: u32[1], %1: u32[1], %2: u32[1], %3: u32[1], %4: u32[5], %5: u32[5]) -> (u32[5], u32[5], u32[5], u32[5]) {
  %6, %7 = threefry2x32(%0, %1, %4, %5) : (u32[5], u32[5])
  %8 = slice(%6) {start_indices=[0], limit_indices=[1], strides=[1]} : (u32[1])
  %9 = slice(%7) {start_indices=[0], limit_indices=[1], strides=[1]} : (u32[1])
  %10 = reshape(%8) {shape=[1, 1]} : (u32[1,1])
  %11 = reshape(%2) {shape=[1, 1]} : (u32[1,1])
  %12 = concatenate(%10, %11) {dimension=0} : (u32[2,1])
  %13 = reshape(%9) {shape=[1, 1]} : (u32[1,1])
  %14 = reshape(%3) {shape=[1, 1]} : (u32[1,1])
  %15 = concatenate(%13, %14) {dimension=0} : (u32[2,1])
  %16, %17 = threefry2x32(%12, %15, %4, %5) : (u32[2,5], u32[2,5])
  %18 = slice(%16) {start_indices=[0, 0], limit_indices=[1, 5], strides=[1, 1]} : (u32[1,5])
  %19 = reshape(%18) {shape=[5]} : (u32[5])
  %20 = slice(%17) {start_indices=[0, 0], limit_indices=[1, 5], strides=[1, 1]} : (u32[1,5])
  %21 = reshape(%20) {shape=[5]} : (u32[5])
  %22 = slice(%16) {start_indices=[1, 0], limit_indices=[2, 5], strides=[1, 1]} : (u32[1,5])
  %23 = reshape(%22) {shape=[5]} : (u32[5])
  %24 = slice(%17) {start_indices=[1, 0], limit_indices=[2, 5], strides=[1, 1]} : (u32[1,5])
  %25 = reshape(%24) {shape=[5]} : (u32[5])
  %26 = xor(%19, %21) : (u32[5])
  return %6, %26, %23, %25
}"""


def _args(fn, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 2**32, p.type.shape, dtype=np.uint32) for p in fn.params]


def _compiled(fn, args):
    text = stablehlo.emit(fn)
    stablehlo.verify_module(text)
    exe = pjrt.compile(text, fn.param_types, fn.result_types)
    return [np.asarray(o) for o in exe.execute([jax.device_put(a) for a in args])]


def _jax_three(args):
    """THREE's results computed by JAX's threefry_2x32."""
    k0, k1, k2, k3, x0, x1 = (jax.numpy.asarray(a) for a in args)

    def h(a, b):
        return threefry_2x32(jax.numpy.stack([a[0], b[0]]), jax.numpy.concatenate([x0, x1]))

    y = h(k0, k1)
    a, b = y[:5], y[5:]
    z = h(a[:1], b[:1])
    w = h(k2, k3)
    return [a, z[:5] ^ z[5:], w[:5], w[5:]]


def test_merges_the_hashes_no_hash_reads_and_keeps_the_one_read():
    fn = verify(parse(THREE))
    res = MergeThreefry()(fn)
    verify(res.fn)
    assert res.changed and res.report == {"hashes_merged": 2, "merged_hashes": 1}
    assert print_function(res.fn) == MERGED
    args = _args(fn)
    want = interpret(fn, *args)
    for got in (interpret(res.fn, *args), _compiled(res.fn, args), _jax_three(args)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)


def test_barrier_materialises_the_merged_words():
    res = MergeThreefry(barrier=True)(verify(parse(THREE)))
    verify(res.fn)
    out = print_function(res.fn)
    assert "%18, %19 = optimization_barrier(%16, %17)" in out
    args = _args(res.fn, 1)
    for g, w in zip(interpret(res.fn, *args), interpret(parse(THREE), *args)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize(
    "src",
    [
        # a chain: each hash reads the previous one's bits
        """func @f(%0: u32[], %1: u32[], %2: u32[2]) -> (u32[2]) {
  %3, %4 = threefry2x32(%0, %1, %2, %2) : (u32[2], u32[2])
  %5 = slice(%3) {start_indices=[0], limit_indices=[1], strides=[1]} : (u32[1])
  %6 = slice(%4) {start_indices=[1], limit_indices=[2], strides=[1]} : (u32[1])
  %7, %8 = threefry2x32(%5, %6, %2, %2) : (u32[2], u32[2])
  return %7
}""",
        # independent, but one is larger than max_size
        """func @f(%0: u32[], %1: u32[], %2: u32[8], %3: u32[2]) -> (u32[8], u32[2]) {
  %4, %5 = threefry2x32(%0, %1, %2, %2) : (u32[8], u32[8])
  %6, %7 = threefry2x32(%1, %0, %3, %3) : (u32[2], u32[2])
  return %4, %6
}""",
        # independent, of different shapes
        """func @f(%0: u32[], %1: u32[], %2: u32[3], %3: u32[2]) -> (u32[3], u32[2]) {
  %4, %5 = threefry2x32(%0, %1, %2, %2) : (u32[3], u32[3])
  %6, %7 = threefry2x32(%1, %0, %3, %3) : (u32[2], u32[2])
  return %4, %6
}""",
        # independent, but one is dead
        """func @f(%0: u32[], %1: u32[], %2: u32[2]) -> (u32[2]) {
  %3, %4 = threefry2x32(%0, %1, %2, %2) : (u32[2], u32[2])
  %5, %6 = threefry2x32(%1, %0, %2, %2) : (u32[2], u32[2])
  return %3
}""",
    ],
)
def test_must_not_change(src):
    fn = verify(parse(src))
    res = MergeThreefry(max_size=4)(fn)
    assert not res.changed and res.fn is fn


def test_runs_respect_max_total():
    src = """func @f(%0: u32[3], %1: u32[1], %2: u32[4]) -> (u32[4], u32[4], u32[4]) {
  %3 = slice(%0) {start_indices=[0], limit_indices=[1], strides=[1]} : (u32[1])
  %4 = slice(%0) {start_indices=[1], limit_indices=[2], strides=[1]} : (u32[1])
  %5 = slice(%0) {start_indices=[2], limit_indices=[3], strides=[1]} : (u32[1])
  %6, %7 = threefry2x32(%3, %1, %2, %2) : (u32[4], u32[4])
  %8, %9 = threefry2x32(%4, %1, %2, %2) : (u32[4], u32[4])
  %10, %11 = threefry2x32(%5, %1, %2, %2) : (u32[4], u32[4])
  return %6, %9, %10
}"""
    fn = verify(parse(src))
    res = MergeThreefry(max_total=8)(fn)
    verify(res.fn)
    assert res.report == {"hashes_merged": 2, "merged_hashes": 1}
    args = _args(fn, 3)
    for g, w in zip(interpret(res.fn, *args), interpret(fn, *args)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("rolled_max_size", [0, 1 << 16])
def test_expand_gives_the_reference_bits(rolled_max_size):
    src = """func @f(%0: u32[2,1], %1: u32[1], %2: u32[3], %3: u32[2,3]) -> (u32[2,3], u32[2,3]) {
  %4, %5 = threefry2x32(%0, %1, %2, %3) : (u32[2,3], u32[2,3])
  return %4, %5
}"""
    fn = verify(parse(src))
    res = ExpandThreefry(rolled_max_size=rolled_max_size)(fn)
    verify(res.fn)
    out = print_function(res.fn)
    assert "threefry2x32" not in out
    assert ("while(" in out) == bool(rolled_max_size)
    args = _args(fn, 2)
    want = threefry2x32_reference(*args)
    for got in (interpret(res.fn, *args), _compiled(res.fn, args), _compiled(fn, args)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    # JAX's threefry_2x32 on the broadcast operands, keys taken row by row
    k1, k2, x1, x2 = np.broadcast_arrays(*args)
    for r in range(2):
        y = threefry_2x32(np.array([k1[r, 0], k2[r, 0]]), np.concatenate([x1[r], x2[r]]))
        np.testing.assert_array_equal(np.asarray(y), np.concatenate([want[0][r], want[1][r]]))


def test_expand_without_a_size_leaves_the_op_to_the_lowering():
    fn = verify(parse(THREE))
    res = ExpandThreefry()(fn)
    assert not res.changed and res.fn is fn
