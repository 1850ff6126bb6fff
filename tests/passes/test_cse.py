"""CSE: IR text in -> IR text out, commutative operands, regions, effects, must-not-change,
and the interpreter gives the same numbers."""

import numpy as np
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes.cse import CSE


def _run(src: str, *, check_numbers: bool = True):
    fn = verify(parse(src))
    res = CSE()(fn)
    verify(res.fn)
    if check_numbers:
        rng = np.random.default_rng(0)
        args = [rng.standard_normal(p.type.shape).astype(p.type.dtype) for p in fn.params]
        for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
            np.testing.assert_array_equal(b, a)
    return print_function(res.fn), res


def test_merges_repeats_commutative_operands_and_equal_constants():
    src = """func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = add(%0, %1) : (f32[4])
  %3 = add(%1, %0) : (f32[4])
  %4 = subtract(%0, %1) : (f32[4])
  %5 = subtract(%1, %0) : (f32[4])
  %6 = constant() {value=array<f32[]: [2.0]>} : (f32[])
  %7 = constant() {value=array<f32[]: [2.0]>} : (f32[])
  %8 = broadcast_in_dim(%6) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %9 = broadcast_in_dim(%7) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %10 = multiply(%2, %8) : (f32[4])
  %11 = multiply(%3, %9) : (f32[4])
  %12 = add(%10, %11) : (f32[4])
  %13 = add(%4, %5) : (f32[4])
  %14 = add(%12, %13) : (f32[4])
  return %14
}"""
    out, res = _run(src)
    assert (
        out
        == """func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = add(%0, %1) : (f32[4])
  %3 = subtract(%0, %1) : (f32[4])
  %4 = subtract(%1, %0) : (f32[4])
  %5 = constant() {value=array<f32[]: [2.0]>} : (f32[])
  %6 = broadcast_in_dim(%5) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %7 = multiply(%2, %6) : (f32[4])
  %8 = add(%7, %7) : (f32[4])
  %9 = add(%3, %4) : (f32[4])
  %10 = add(%8, %9) : (f32[4])
  return %10
}"""
    )
    assert res.report == {"merged_ops": 4}  # add(%1, %0), a constant, its broadcast, a multiply


def test_equal_regions_merge_and_cse_runs_inside_regions():
    src = """func @f(%0: f32[4,3]) -> (f32[4]) {
  %1 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %2 = reduce(%0, %1) {dimensions=[1]} : (f32[4]) region(%3: f32[], %4: f32[]) {
    %5 = add(%3, %4) : (f32[])
    %6 = add(%3, %4) : (f32[])
    return %6
  }
  %7 = reduce(%0, %1) {dimensions=[1]} : (f32[4]) region(%8: f32[], %9: f32[]) {
    %10 = add(%8, %9) : (f32[])
    return %10
  }
  %11 = reduce(%0, %1) {dimensions=[1]} : (f32[4]) region(%12: f32[], %13: f32[]) {
    %14 = maximum(%12, %13) : (f32[])
    return %14
  }
  %15 = add(%2, %7) : (f32[4])
  %16 = add(%15, %11) : (f32[4])
  return %16
}"""
    out, _ = _run(src)
    # the first reduce's body is cleaned, the second (equal to the cleaned first only in
    # the next round) stays this round; the max-reduce differs and stays
    assert out.count("reduce(") == 3 and out.count("add(%3, %4)") == 1
    out2, res2 = _run(out)  # a second round
    assert out2.count("reduce(") == 2 and res2.report == {"merged_ops": 1}
    assert "maximum" in out2


def test_must_not_change_effects_and_different_attributes():
    src = """func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = all_reduce(%0) {replica_groups=[[0, 1]], computation="add"} : (f32[4])
  %3 = all_reduce(%0) {replica_groups=[[0, 1]], computation="add"} : (f32[4])
  %4 = compare(%0, %1) {comparison_direction="LT"} : (pred[4])
  %5 = compare(%0, %1) {comparison_direction="GT"} : (pred[4])
  %6 = select(%4, %2, %3) : (f32[4])
  %7 = select(%5, %6, %1) : (f32[4])
  return %7
}"""
    out, res = _run(src, check_numbers=False)
    assert out == src and not res.changed
