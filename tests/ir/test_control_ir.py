"""The control-flow, sort and window ops in the IR: text round trip, verifier, reference
interpreter, and the compiled StableHLO agreeing with the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from purejit.ir import VerifyError, interpret, parse, print_function, verify

from purejit.backend import pjrt, stablehlo

WHILE_CASE = """\
func @main(%0: f32[3], %1: f32[], %2: s32[]) -> (f32[3], s32[]) {
  %3 = constant() {value=array<s32[]: [0]>} : (s32[])
  %4, %5 = while(%3, %0, %1, %2) : (s32[], f32[3]) region(%6: s32[], %7: f32[3], %8: f32[], %9: s32[]) {
    %10 = compare(%6, %9) {comparison_direction="LT"} : (pred[])
    return %10
  } region(%11: s32[], %12: f32[3], %13: f32[], %14: s32[]) {
    %15 = constant() {value=array<s32[]: [1]>} : (s32[])
    %16 = add(%11, %15) : (s32[])
    %17 = broadcast_in_dim(%13) {shape=[3], broadcast_dimensions=[]} : (f32[3])
    %18 = add(%12, %17) : (f32[3])
    return %16, %18
  }
  %19 = case(%4, %5, %1) : (f32[3]) region(%20: f32[3], %21: f32[]) {
    return %20
  } region(%22: f32[3], %23: f32[]) {
    %24 = negate(%22) : (f32[3])
    return %24
  } region(%25: f32[3], %26: f32[]) {
    %27 = broadcast_in_dim(%26) {shape=[3], broadcast_dimensions=[]} : (f32[3])
    %28 = multiply(%25, %27) : (f32[3])
    return %28
  }
  return %19, %4
}"""

# sort by key (descending through the comparator), carrying a payload
SORT = """\
func @main(%0: f32[2,4], %1: s32[2,4]) -> (f32[2,4], s32[2,4]) {
  %2, %3 = sort(%0, %1) {dimension=1, is_stable=true} : (f32[2,4], s32[2,4]) region(%4: f32[], %5: f32[], %6: s32[], %7: s32[]) {
    %8 = compare(%4, %5) {comparison_direction="GT"} : (pred[])
    return %8
  }
  return %2, %3
}"""

TOP_K = """\
func @main(%0: f32[2,5]) -> (f32[2,3], s32[2,3]) {
  %1, %2 = top_k(%0) {k=3} : (f32[2,3], s32[2,3])
  return %1, %2
}"""

CUMSUM = """\
func @main(%0: f32[2,5]) -> (f32[2,5]) {
  %1 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %2 = reduce_window(%0, %1) {window_dimensions=[1, 5], window_strides=[1, 1], base_dilations=[1, 1], window_dilations=[1, 1], padding=[[0, 0], [4, 0]]} : (f32[2,5]) region(%3: f32[], %4: f32[]) {
    %5 = add(%3, %4) : (f32[])
    return %5
  }
  return %2
}"""

# a max-pool with stride 2, dilation and padding, through a general (two-op) region
POOL = """\
func @main(%0: f32[7,6]) -> (f32[4,3]) {
  %1 = constant() {value=array<f32[]: [-inf]>} : (f32[])
  %2 = reduce_window(%0, %1) {window_dimensions=[2, 2], window_strides=[2, 2], base_dilations=[1, 1], window_dilations=[1, 2], padding=[[1, 0], [0, 1]]} : (f32[4,3]) region(%3: f32[], %4: f32[]) {
    %5 = maximum(%3, %4) : (f32[])
    %6 = maximum(%5, %3) : (f32[])
    return %6
  }
  return %2
}"""


def run_xla(fn, *args):
    text = stablehlo.emit(fn)
    stablehlo.verify_module(text)
    exe = pjrt.compile(text, fn.param_types, fn.result_types)
    return [np.asarray(o) for o in exe.execute([pjrt.to_device(np.asarray(a)) for a in args])]


@pytest.mark.parametrize("text", [WHILE_CASE, SORT, TOP_K, CUMSUM, POOL])
def test_text_round_trip_and_verify(text):
    fn = parse(text)
    assert print_function(fn) == text
    assert print_function(parse(print_function(fn))) == text
    verify(fn)


@pytest.mark.parametrize("index,expect", [(2, [2.0, 3.0, 4.0]), (1, [-1.0, -2.0, -3.0])])
def test_while_and_case_interpret_and_compile(index, expect):
    fn = parse(WHILE_CASE)
    args = (np.arange(3, dtype=np.float32), np.float32(1.0), np.int32(index))
    # the loop adds 1.0 `index` times, then branch `index` runs (2: times 1.0, 1: negate)
    want = [np.array(expect, np.float32), np.int32(index)]
    ref = interpret(fn, *args)
    got = run_xla(fn, *args)
    for r, g, w in zip(ref, got, want):
        np.testing.assert_array_equal(r, w)
        np.testing.assert_array_equal(g, w)


def test_case_out_of_range_runs_last_branch():
    fn = parse(WHILE_CASE)
    args = (np.zeros(3, np.float32), np.float32(2.0), np.int32(7))  # 7 trips, branch 7 -> 2
    want = np.full(3, 14.0 * 2.0, np.float32)
    np.testing.assert_array_equal(interpret(fn, *args)[0], want)
    np.testing.assert_array_equal(run_xla(fn, *args)[0], want)


def test_sort_interpret_matches_xla():
    fn = parse(SORT)
    keys = np.array([[3, 1, 3, 2], [0, -1, 5, 5]], np.float32)
    vals = np.arange(8, dtype=np.int32).reshape(2, 4)
    ref = interpret(fn, keys, vals)
    np.testing.assert_array_equal(ref[0], [[3, 3, 2, 1], [5, 5, 0, -1]])
    np.testing.assert_array_equal(ref[1], [[0, 2, 3, 1], [6, 7, 4, 5]])  # stable
    for r, g in zip(ref, run_xla(fn, keys, vals)):
        np.testing.assert_array_equal(r, g)


def test_top_k_interpret_matches_xla():
    fn = parse(TOP_K)
    x = np.array([[1, np.nan, 3, 3, -np.inf], [0, 0, 0, 1, -1]], np.float32)
    ref = interpret(fn, x)
    np.testing.assert_array_equal(ref[0], [[np.nan, 3, 3], [1, 0, 0]])
    np.testing.assert_array_equal(ref[1], [[1, 2, 3], [3, 0, 1]])
    for r, g in zip(ref, run_xla(fn, x)):
        np.testing.assert_array_equal(r, g)


def test_reduce_window_cumsum_and_pool():
    x = np.random.default_rng(0).normal(size=(2, 5)).astype(np.float32)
    fn = parse(CUMSUM)
    np.testing.assert_allclose(interpret(fn, x)[0], np.cumsum(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(run_xla(fn, x)[0], np.cumsum(x, axis=1), rtol=1e-6)
    fn = parse(POOL)
    x = np.arange(42, dtype=np.float32).reshape(7, 6)
    # independent oracle: pad, then take the max over the dilated 2x2 windows
    p = np.pad(x, [(1, 0), (0, 1)], constant_values=-np.inf)
    want = np.array(
        [[p[2 * i : 2 * i + 2, 2 * j : 2 * j + 3 : 2].max() for j in range(3)] for i in range(4)],
        np.float32,
    )
    np.testing.assert_array_equal(interpret(fn, x)[0], want)
    np.testing.assert_array_equal(run_xla(fn, x)[0], want)


BAD = {
    "case branch results differ": (
        WHILE_CASE.replace("%24 = negate(%22) : (f32[3])\n    return %24", "return %23"),
        "branch 1 returns",
    ),
    "case index is not s32": (
        WHILE_CASE.replace("%19 = case(%4, %5, %1)", "%19 = case(%1, %5, %1)"),
        "index must be an s32 scalar",
    ),
    "while body changes the carry type": (
        WHILE_CASE.replace("return %16, %18", "return %16, %13"),
        "body returns",
    ),
    "while cond is not pred": (WHILE_CASE.replace("return %10\n", "return %6\n"), "pred[]"),
    "while region params differ": (
        WHILE_CASE.replace("%8: f32[], %9: s32[])", "%8: f32[])").replace("%6, %9)", "%6, %6)"),
        "cond region takes",
    ),
    "sort comparator types": (
        SORT.replace("%6: s32[], %7: s32[]", "%6: f32[], %7: f32[]"),
        "comparator",
    ),
    "top_k k too large": (TOP_K.replace("2,3]", "2,6]").replace("k=3", "k=6"), "k=6"),
    "reduce_window attr rank": (
        CUMSUM.replace("window_strides=[1, 1]", "window_strides=[1]"),
        "window_strides",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_verifier_rejects(name):
    text, needle = BAD[name]
    fn = parse(text)
    with pytest.raises(VerifyError) as e:
        verify(fn)
    assert needle in str(e.value)


def test_lowering_binds_captured_params_to_outer_names():
    text = stablehlo.emit(parse(WHILE_CASE))
    assert text.count('"stablehlo.while"') == 1
    assert text.count('"stablehlo.case"') == 1
    # the invariants of the loop (%arg1, %arg2) are read from above, not carried
    assert '"stablehlo.while"(%v1, %arg0)' in text
    assert "%arg2) {comparison_direction" in text


def test_traced_nested_control_flow_round_trips_and_interprets():
    import purejit
    from purejit import lax

    def f(x, xs):
        def step(c, xi):
            c = lax.cond(xi > 0, lambda v: v * xi, lambda v: v - x[0], c)
            return c, lax.sort(c)[0]

        c, ys = lax.scan(step, x, xs)
        return lax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 2.0 + 1.0, c), ys

    x, xs = np.array([3.0, 1.0, 2.0], np.float32), np.array([1.5, -1.0, 2.0], np.float32)
    fn = purejit.jit(f).lower(x, xs).traced
    text = print_function(fn)
    assert print_function(parse(text)) == text
    assert text.count("scan(") == 1 and text.count("while(") == 1
    assert text.count("case(") == 1 and text.count("sort(") == 1
    ref = interpret(parse(text), x, xs)
    for r, g, w in zip(ref, run_xla(fn, x, xs), purejit.jit(f)(x, xs)):
        np.testing.assert_allclose(r, np.asarray(w), rtol=1e-6)
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)
