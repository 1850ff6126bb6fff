"""DCE: IR text in -> IR text out, inside regions, effects kept, must-not-change, and the
interpreter gives the same numbers."""

import numpy as np
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes.dce import DCE


def _run(src: str, *, check_numbers: bool = True):
    fn = verify(parse(src))
    res = DCE()(fn)
    verify(res.fn)
    if check_numbers:
        rng = np.random.default_rng(0)
        args = [
            rng.standard_normal(p.type.shape).astype(p.type.dtype)
            if p.type.dtype.kind == "f"
            else np.asarray(rng.integers(0, 2, p.type.shape), p.type.dtype)
            for p in fn.params
        ]
        for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
            np.testing.assert_array_equal(b, a)
    return print_function(res.fn), res


def test_removes_dead_ops_and_dead_ops_inside_regions():
    src = """func @f(%0: f32[4], %1: s32[]) -> (f32[4]) {
  %2 = sine(%0) : (f32[4])
  %3 = cosine(%0) : (f32[4])
  %4 = tanh(%3) : (f32[4])
  %5 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %6 = case(%1, %0) : (f32[4]) region(%7: f32[4]) {
    %8 = exponential(%7) : (f32[4])
    %9 = log(%7) : (f32[4])
    return %8
  } region(%10: f32[4]) {
    return %10
  }
  %11 = add(%2, %6) : (f32[4])
  return %11
}"""
    out, res = _run(src)
    assert (
        out
        == """func @f(%0: f32[4], %1: s32[]) -> (f32[4]) {
  %2 = sine(%0) : (f32[4])
  %3 = case(%1, %0) : (f32[4]) region(%4: f32[4]) {
    %5 = exponential(%4) : (f32[4])
    return %5
  } region(%6: f32[4]) {
    return %6
  }
  %7 = add(%2, %3) : (f32[4])
  return %7
}"""
    )
    assert res.changed and res.report == {"removed_ops": 4}


def test_whole_dead_region_op_counts_its_body():
    src = """func @f(%0: f32[4], %1: s32[]) -> (f32[4]) {
  %2 = case(%1, %0) : (f32[4]) region(%3: f32[4]) {
    %4 = exponential(%3) : (f32[4])
    return %4
  } region(%5: f32[4]) {
    return %5
  }
  return %0
}"""
    out, res = _run(src)
    assert out == "func @f(%0: f32[4], %1: s32[]) -> (f32[4]) {\n  return %0\n}"
    assert res.report == {"removed_ops": 2}


def test_must_not_change_live_program_and_collectives():
    # every op is live, or is a collective (never removed: other devices take part in it)
    src = """func @f(%0: f32[4]) -> (f32[4]) {
  %1 = all_reduce(%0) {replica_groups=[[0, 1]], computation="add"} : (f32[4])
  %2 = sine(%0) : (f32[4])
  %3 = multiply(%2, %2) : (f32[4])
  return %3
}"""
    out, res = _run(src, check_numbers=False)
    assert out == src and not res.changed
