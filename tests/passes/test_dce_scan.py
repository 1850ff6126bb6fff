"""DCE of `scan`: IR text in -> IR text out, the interpreter giving the same numbers, and a
must-not-change case."""

import numpy as np
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes.dce import DCE


def _run(src: str):
    fn = verify(parse(src))
    assert print_function(fn) == src
    res = DCE()(fn)
    verify(res.fn)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.type.shape).astype(p.type.dtype) for p in fn.params]
    for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
        np.testing.assert_array_equal(b, a)
    assert not DCE()(res.fn).changed  # one run reaches the fixed point
    return print_function(res.fn), res


# carries %16 (result used), %17 (result unused, read by %16's update), %18 (result unused,
# read only by %19's update), %19 (result unused); ys: the first used, the second not;
# const %14 is read only for %19, x %20 only for the dead y
SRC = """\
func @f(%0: f32[], %1: f32[], %2: f32[2], %3: f32[2], %4: f32[2], %5: f32[2], %6: f32[5,2], %7: f32[5,2]) -> (f32[2], f32[5,2]) {
  %8, %9, %10, %11, %12, %13 = scan(%0, %1, %2, %3, %4, %5, %6, %7) {length=5, reverse=false, unroll=1, num_consts=2, num_carry=4} : (f32[2], f32[2], f32[2], f32[2], f32[5,2], f32[5,2]) region(%14: f32[], %15: f32[], %16: f32[2], %17: f32[2], %18: f32[2], %19: f32[2], %20: f32[2], %21: f32[2]) {
    %22 = broadcast_in_dim(%15) {shape=[2], broadcast_dimensions=[]} : (f32[2])
    %23 = multiply(%16, %22) : (f32[2])
    %24 = add(%23, %17) : (f32[2])
    %25 = add(%17, %21) : (f32[2])
    %26 = broadcast_in_dim(%14) {shape=[2], broadcast_dimensions=[]} : (f32[2])
    %27 = multiply(%18, %26) : (f32[2])
    %28 = add(%19, %27) : (f32[2])
    %29 = sine(%18) : (f32[2])
    %30 = negate(%20) : (f32[2])
    return %24, %25, %29, %28, %16, %30
  }
  return %8, %12
}"""

WANT = """\
func @f(%0: f32[], %1: f32[], %2: f32[2], %3: f32[2], %4: f32[2], %5: f32[2], %6: f32[5,2], %7: f32[5,2]) -> (f32[2], f32[5,2]) {
  %8, %9, %10 = scan(%1, %2, %3, %7) {length=5, reverse=false, unroll=1, num_consts=1, num_carry=2} : (f32[2], f32[2], f32[5,2]) region(%11: f32[], %12: f32[2], %13: f32[2], %14: f32[2]) {
    %15 = broadcast_in_dim(%11) {shape=[2], broadcast_dimensions=[]} : (f32[2])
    %16 = multiply(%12, %15) : (f32[2])
    %17 = add(%16, %13) : (f32[2])
    %18 = add(%13, %14) : (f32[2])
    return %17, %18, %12
  }
  return %8, %10
}"""


def test_drops_dead_carries_ys_consts_and_xs_to_a_fixed_point():
    out, res = _run(SRC)
    assert out == WANT
    assert res.changed
    # removed: the 5 body ops of the dead carries and y; dropped: a const, two carries,
    # an x and a y
    assert res.report == {"removed_ops": 5, "pruned_loop_values": 5}


def test_a_carry_read_by_a_live_y_stays():
    src = """\
func @f(%0: f32[], %1: f32[], %2: f32[3]) -> (f32[3]) {
  %3, %4, %5 = scan(%0, %1, %2) {length=3, reverse=true, unroll=2, num_consts=0, num_carry=2} : (f32[], f32[], f32[3]) region(%6: f32[], %7: f32[], %8: f32[]) {
    %9 = add(%6, %8) : (f32[])
    %10 = multiply(%7, %6) : (f32[])
    return %9, %10, %10
  }
  return %5
}"""
    want = """\
func @f(%0: f32[], %1: f32[], %2: f32[3]) -> (f32[3]) {
  %3, %4, %5 = scan(%0, %1, %2) {length=3, reverse=true, unroll=2, num_consts=0, num_carry=2} : (f32[], f32[], f32[3]) region(%6: f32[], %7: f32[], %8: f32[]) {
    %9 = add(%6, %8) : (f32[])
    %10 = multiply(%7, %6) : (f32[])
    return %9, %10, %10
  }
  return %5
}"""
    out, res = _run(src)
    assert out == want and not res.changed


def test_must_not_change_a_scan_whose_every_part_is_used():
    src = """\
func @f(%0: f32[], %1: f32[2], %2: f32[4,2]) -> (f32[2], f32[4]) {
  %3, %4 = scan(%0, %1, %2) {length=4, reverse=false, unroll=1, num_consts=1, num_carry=1} : (f32[2], f32[4]) region(%5: f32[], %6: f32[2], %7: f32[2]) {
    %8 = broadcast_in_dim(%5) {shape=[2], broadcast_dimensions=[]} : (f32[2])
    %9 = add(%6, %7) : (f32[2])
    %10 = multiply(%9, %8) : (f32[2])
    %11 = constant() {value=array<f32[]: [0.0]>} : (f32[])
    %12 = reduce(%10, %11) {dimensions=[0]} : (f32[]) region(%13: f32[], %14: f32[]) {
      %15 = add(%13, %14) : (f32[])
      return %15
    }
    return %10, %12
  }
  return %3, %4
}"""
    fn = parse(src)
    res = DCE()(fn)
    assert res.fn is fn and not res.changed and res.report == {"removed_ops": 0}
    assert print_function(res.fn) == src


def test_a_dead_scan_goes_whole_and_a_nested_scan_is_pruned():
    src = """\
func @f(%0: f32[], %1: f32[3]) -> (f32[]) {
  %2, %3 = scan(%0, %1) {length=3, reverse=false, unroll=1, num_consts=0, num_carry=1} : (f32[], f32[3]) region(%4: f32[], %5: f32[]) {
    %6 = add(%4, %5) : (f32[])
    return %6, %6
  }
  %7, %8 = scan(%0, %1) {length=3, reverse=false, unroll=1, num_consts=0, num_carry=1} : (f32[], f32[3]) region(%9: f32[], %10: f32[]) {
    %11, %12, %13 = scan(%10, %9, %9) {length=2, reverse=false, unroll=1, num_consts=1, num_carry=2} : (f32[], f32[], f32[2]) region(%14: f32[], %15: f32[], %16: f32[]) {
      %17 = multiply(%15, %14) : (f32[])
      %18 = exponential(%16) : (f32[])
      return %17, %18, %18
    }
    return %11, %11
  }
  return %7
}"""
    want = """\
func @f(%0: f32[], %1: f32[3]) -> (f32[]) {
  %2 = scan(%0, %1) {length=3, reverse=false, unroll=1, num_consts=0, num_carry=1} : (f32[]) region(%3: f32[], %4: f32[]) {
    %5 = scan(%4, %3) {length=2, reverse=false, unroll=1, num_consts=1, num_carry=1} : (f32[]) region(%6: f32[], %7: f32[]) {
      %8 = multiply(%7, %6) : (f32[])
      return %8
    }
    return %5
  }
  return %2
}"""
    out, res = _run(src)
    assert out == want
    # the first scan (2 ops), the inner exponential; the outer y, the inner carry and y
    assert res.report == {"removed_ops": 3, "pruned_loop_values": 3}
