"""The `scan` op in the IR: text round trip, type-rule errors through the verifier, and the
reference interpreter agreeing with the compiled StableHLO (forward, reverse, unroll,
length 0)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from purejit.ir import (
    Builder,
    IRTypeError,
    TensorType,
    VerifyError,
    interpret,
    parse,
    print_function,
    verify,
)

from purejit.backend import pjrt, stablehlo

# carry' = carry * k + x; y = carry (before the update)
SCAN = """\
func @main(%0: f32[], %1: f32[3], %2: f32[4,3]) -> (f32[3], f32[4,3]) {
  %3, %4 = scan(%0, %1, %2) {length=4, reverse=false, unroll=1, num_consts=1, num_carry=1} : (f32[3], f32[4,3]) region(%5: f32[], %6: f32[3], %7: f32[3]) {
    %8 = broadcast_in_dim(%5) {shape=[3], broadcast_dimensions=[]} : (f32[3])
    %9 = multiply(%6, %8) : (f32[3])
    %10 = add(%9, %7) : (f32[3])
    return %10, %6
  }
  return %3, %4
}"""

# two carries (one s32 counter), two ys, no consts; the body holds a scan of its own
NESTED = """\
func @main(%0: f32[], %1: s32[], %2: f32[5,2]) -> (f32[], s32[], f32[5,2], s32[5]) {
  %3, %4, %5, %6 = scan(%0, %1, %2) {length=5, reverse=true, unroll=2, num_consts=0, num_carry=2} : (f32[], s32[], f32[5,2], s32[5]) region(%7: f32[], %8: s32[], %9: f32[2]) {
    %10, %11 = scan(%7, %9) {length=2, reverse=false, unroll=1, num_consts=0, num_carry=1} : (f32[], f32[2]) region(%12: f32[], %13: f32[]) {
      %14 = add(%12, %13) : (f32[])
      return %14, %14
    }
    %15 = constant() {value=array<s32[]: [1]>} : (s32[])
    %16 = add(%8, %15) : (s32[])
    return %10, %16, %11, %8
  }
  return %3, %4, %5, %6
}"""


def run_xla(fn, *args):
    text = stablehlo.emit(fn)
    stablehlo.verify_module(text)
    exe = pjrt.compile(text, fn.param_types, fn.result_types)
    return [np.asarray(o) for o in exe.execute([pjrt.to_device(np.asarray(a)) for a in args])]


def _python_scan(k, c, xs, reverse):
    ys = np.zeros_like(xs)
    for i in range(len(xs))[::-1] if reverse else range(len(xs)):
        ys[i] = c
        c = c * k + xs[i]
    return c, ys


@pytest.mark.parametrize("text", [SCAN, NESTED])
def test_text_round_trip_and_verify(text):
    fn = verify(parse(text))
    assert print_function(fn) == text
    assert print_function(parse(print_function(fn))) == text


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 3, 4, 9])
def test_interpreter_and_compiled_agree_with_a_python_loop(reverse, unroll):
    text = SCAN.replace("reverse=false", f"reverse={str(reverse).lower()}")
    fn = verify(parse(text.replace("unroll=1", f"unroll={unroll}")))
    rng = np.random.default_rng(unroll)
    args = (np.float32(0.5), rng.normal(size=3).astype(np.float32))
    args += (rng.normal(size=(4, 3)).astype(np.float32),)
    want = _python_scan(*args, reverse)
    for got in (interpret(fn, *args), run_xla(fn, *args)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_nested_scan_with_counter_carry():
    fn = verify(parse(NESTED))
    xs = np.arange(10, dtype=np.float32).reshape(5, 2)
    ref = interpret(fn, np.float32(1.0), np.int32(10), xs)
    acc, rows, ys1 = 1.0, np.zeros((5, 2), np.float32), np.zeros(5, np.int32)
    for i, step in zip(range(4, -1, -1), range(5)):
        ys1[i] = 10 + step
        rows[i] = [acc + xs[i, 0], acc + xs[i, 0] + xs[i, 1]]
        acc = rows[i, 1]
    want = [np.float32(acc), np.int32(15), rows, ys1]
    for r, g, w in zip(ref, run_xla(fn, np.float32(1.0), np.int32(10), xs), want):
        np.testing.assert_array_equal(r, w)
        np.testing.assert_array_equal(g, w)


def test_length_zero_returns_init_and_empty_ys():
    text = SCAN.replace("length=4", "length=0").replace("4,3", "0,3")
    fn = verify(parse(text))
    args = (np.float32(2.0), np.ones(3, np.float32), np.zeros((0, 3), np.float32))
    for got in (interpret(fn, *args), run_xla(fn, *args)):
        np.testing.assert_array_equal(got[0], np.ones(3, np.float32))
        assert got[1].shape == (0, 3)


def _scan_op(operand_types, region_params, region_results, **attrs):
    """Build one scan op through the Builder, so the type rule runs."""
    attrs = {"length": 4, "reverse": False, "unroll": 1, "num_consts": 1, "num_carry": 1} | attrs
    r = Builder("body")
    ps = [r.param(t) for t in region_params]
    outs = [ps[i] for i in region_results]
    body = r.finish(outs)
    b = Builder()
    args = [b.param(t) for t in operand_types]
    return b.op("scan", args, attrs, [body])


F = np.float32
S, V3, XS = TensorType((), F), TensorType((3,), F), TensorType((4, 3), F)


def test_type_rule_accepts_and_infers_stacked_ys():
    (c, ys) = _scan_op([S, V3, XS], [S, V3, V3], [2, 1])
    assert c.type == V3 and ys.type == TensorType((4, 3), F)


BODY_RETURNS = (
    "scan: body returns (f32[], f32[3]), but it must return the carry (f32[3]) first, "
    "then one slice of each y"
)
BODY_TAKES = "scan: body takes (f32[], f32[3], f32[]), but (consts, carry, x slices) are"
XS_LENGTH = "scan: xs operand 0 is f32[5,3], but it must be stacked along a leading axis of"
BAD_CASES = [
    ([S, V3, XS], [S, V3, V3], [0, 1], {}, BODY_RETURNS),
    ([S, V3, XS], [S, V3, S], [1], {}, BODY_TAKES),
    ([S, V3, TensorType((5, 3), F)], [S, V3, V3], [1], {}, XS_LENGTH),
    ([S, V3, XS], [S, V3, V3], [1], {"unroll": 0}, "scan: attribute unroll must be an int >= 1"),
    ([S, V3, XS], [S, V3, V3], [1], {"length": -1}, "scan: attribute length must be an int"),
    ([S, V3, XS], [S, V3, V3], [1], {"num_carry": 3}, "num_carry=3 but the op has only 3 operands"),
    ([S, V3, XS], [S, V3, V3], [1], {"reverse": 1}, "scan: attribute reverse must be a bool"),
]


@pytest.mark.parametrize("operands,params,results,attrs,match", BAD_CASES)
def test_type_rule_errors_name_the_op_and_types(operands, params, results, attrs, match):
    with pytest.raises(IRTypeError, match=re.escape(match)):
        _scan_op(operands, params, results, **attrs)


def test_verifier_rejects_a_wrong_result_type_and_a_missing_region():
    bad = SCAN.replace(": (f32[3], f32[4,3]) region", ": (f32[3], f32[3,3]) region")
    bad = bad.replace("-> (f32[3], f32[4,3])", "-> (f32[3], f32[3,3])")
    with pytest.raises(VerifyError, match=r"scan: result types .* but the type rule gives"):
        verify(parse(bad))
    no_body = """\
func @main(%0: f32[3]) -> (f32[3]) {
  %1 = scan(%0) {length=2, reverse=false, unroll=1, num_consts=0, num_carry=1} : (f32[3])
  return %1
}"""
    with pytest.raises(VerifyError, match="expects 1 regions, has 0"):
        verify(parse(no_body))
