"""The fusion pass: IR text in -> IR text out, what it must not fuse, the cost model, the
options a realising back end sets, and the interpreter (and XLA) give the same numbers."""

import numpy as np
import pytest
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes import cost
from purejit.passes.fusion import Fusion

REALISABLE = Fusion(
    multi_output=False, exclude_ops=("transpose", "reshape"), elementwise_after_reduction=True
)


def _run(src: str, fusion=None):
    fn = verify(parse(src))
    res = (fusion or Fusion())(fn)
    verify(res.fn)
    rng = np.random.default_rng(0)
    args = [
        rng.standard_normal(p.type.shape).astype(p.type.dtype)
        if p.type.dtype.kind == "f"
        else np.asarray(rng.integers(0, 3, p.type.shape), p.type.dtype)
        for p in fn.params
    ]
    for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
        np.testing.assert_array_equal(b, a)
    return print_function(res.fn), res


def test_elementwise_chain_with_broadcasts_is_one_group():
    src = """func @f(%0: f32[8,4], %1: f32[4]) -> (f32[8,4]) {
  %2 = sine(%0) : (f32[8,4])
  %3 = broadcast_in_dim(%1) {shape=[8, 4], broadcast_dimensions=[1]} : (f32[8,4])
  %4 = multiply(%2, %3) : (f32[8,4])
  %5 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %6 = broadcast_in_dim(%5) {shape=[8, 4], broadcast_dimensions=[]} : (f32[8,4])
  %7 = add(%4, %6) : (f32[8,4])
  %8 = tanh(%7) : (f32[8,4])
  return %8
}"""
    out, res = _run(src)
    assert (
        out
        == """func @f(%0: f32[8,4], %1: f32[4]) -> (f32[8,4]) {
  %2 = fusion(%0, %1) {kind="loop"} : (f32[8,4]) region(%3: f32[8,4], %4: f32[4]) {
    %5 = sine(%3) : (f32[8,4])
    %6 = broadcast_in_dim(%4) {shape=[8, 4], broadcast_dimensions=[1]} : (f32[8,4])
    %7 = multiply(%5, %6) : (f32[8,4])
    %8 = constant() {value=array<f32[]: [1.0]>} : (f32[])
    %9 = broadcast_in_dim(%8) {shape=[8, 4], broadcast_dimensions=[]} : (f32[8,4])
    %10 = add(%7, %9) : (f32[8,4])
    %11 = tanh(%10) : (f32[8,4])
    return %11
  }
  return %2
}"""
    )
    # op by op: 6 kernels (sine, 2 broadcasts, multiply, add, tanh; the constant is free),
    # each reading its inputs and writing a 128-byte array; fused: read x and w, write once
    assert res.report["groups"] == 1
    assert res.report["bytes_fused"] == 128 + 16 + 128
    sine, bcasts, binary = 2 * 128, (16 + 128) + (4 + 128), 3 * 128
    assert res.report["bytes_eager"] == sine + bcasts + binary + binary + 2 * 128


def test_reduction_takes_producers_and_consumers_but_is_never_recomputed():
    src = """func @f(%0: f32[8,4]) -> (f32[8,4], f32[8]) {
  %1 = exponential(%0) : (f32[8,4])
  %2 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %3 = reduce(%1, %2) {dimensions=[1]} : (f32[8]) region(%4: f32[], %5: f32[]) {
    %6 = add(%4, %5) : (f32[])
    return %6
  }
  %7 = log(%3) : (f32[8])
  %8 = broadcast_in_dim(%7) {shape=[8, 4], broadcast_dimensions=[0]} : (f32[8,4])
  %9 = subtract(%0, %8) : (f32[8,4])
  %10 = cosine(%0) : (f32[8,4])
  %11 = sine(%0) : (f32[8,4])
  %12 = multiply(%10, %11) : (f32[8,4])
  %13 = add(%9, %12) : (f32[8,4])
  %14 = negate(%7) : (f32[8])
  return %13, %14
}"""
    out, res = _run(src)
    # exp -> reduce -> log is one input fusion; its result is broadcast into the second
    # group (fusing it there would recompute the reduction per copy) and also feeds a lone
    # negate, so it is written once and read twice
    assert (
        out
        == """func @f(%0: f32[8,4]) -> (f32[8,4], f32[8]) {
  %1 = fusion(%0) {kind="input"} : (f32[8]) region(%2: f32[8,4]) {
    %3 = exponential(%2) : (f32[8,4])
    %4 = constant() {value=array<f32[]: [0.0]>} : (f32[])
    %5 = reduce(%3, %4) {dimensions=[1]} : (f32[8]) region(%6: f32[], %7: f32[]) {
      %8 = add(%6, %7) : (f32[])
      return %8
    }
    %9 = log(%5) : (f32[8])
    return %9
  }
  %10 = fusion(%0, %1) {kind="loop"} : (f32[8,4]) region(%11: f32[8,4], %12: f32[8]) {
    %13 = broadcast_in_dim(%12) {shape=[8, 4], broadcast_dimensions=[0]} : (f32[8,4])
    %14 = subtract(%11, %13) : (f32[8,4])
    %15 = cosine(%11) : (f32[8,4])
    %16 = sine(%11) : (f32[8,4])
    %17 = multiply(%15, %16) : (f32[8,4])
    %18 = add(%14, %17) : (f32[8,4])
    return %18
  }
  %19 = negate(%1) : (f32[8])
  return %10, %19
}"""
    )
    assert sum(op.name == "reduce" for op in res.fn.walk()) == 1


def test_cheap_producer_read_by_two_groups_is_copied_not_materialised():
    # layer norm's x - mean feeds the variance reduction and the normalisation
    src = """func @f(%0: f32[8,4], %1: f32[4]) -> (f32[8,4]) {
  %2 = broadcast_in_dim(%1) {shape=[8, 4], broadcast_dimensions=[1]} : (f32[8,4])
  %3 = subtract(%0, %2) : (f32[8,4])
  %4 = multiply(%3, %3) : (f32[8,4])
  %5 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %6 = reduce(%4, %5) {dimensions=[1]} : (f32[8]) region(%7: f32[], %8: f32[]) {
    %9 = add(%7, %8) : (f32[])
    return %9
  }
  %10 = rsqrt(%6) : (f32[8])
  %11 = broadcast_in_dim(%10) {shape=[8, 4], broadcast_dimensions=[0]} : (f32[8,4])
  %12 = multiply(%3, %11) : (f32[8,4])
  return %12
}"""
    out, res = _run(src)
    assert out.count("subtract(") == 2 and res.report["groups"] == 2
    assert res.fn.ops[-1].name == "fusion" and len(res.fn.ops) == 2
    # an expensive producer (atan2) read by two groups is computed once, in a group of its
    # own, and its result is read by both
    out2, _ = _run(src.replace("subtract(%0, %2)", "atan2(%0, %2)"))
    assert out2.count("atan2(") == 1 and out2.count("fusion(") == 3


def test_sibling_fusion_merges_readers_of_one_input_unless_disabled():
    src = """func @f(%0: f32[8,4]) -> (f32[8,4], f32[8,4]) {
  %1 = exponential(%0) : (f32[8,4])
  %2 = tanh(%1) : (f32[8,4])
  %3 = sine(%0) : (f32[8,4])
  %4 = cosine(%3) : (f32[8,4])
  return %2, %4
}"""
    out, res = _run(src)
    assert (
        out
        == """func @f(%0: f32[8,4]) -> (f32[8,4], f32[8,4]) {
  %1, %2 = fusion(%0) {kind="loop"} : (f32[8,4], f32[8,4]) region(%3: f32[8,4]) {
    %4 = exponential(%3) : (f32[8,4])
    %5 = tanh(%4) : (f32[8,4])
    %6 = sine(%3) : (f32[8,4])
    %7 = cosine(%6) : (f32[8,4])
    return %5, %7
  }
  return %1, %2
}"""
    )
    assert res.report["bytes_fused"] == 3 * 128  # x read once
    out, res = _run(src, Fusion(multi_output=False))
    assert out.count("fusion(") == 2 and res.report["bytes_fused"] == 4 * 128


def test_siblings_that_depend_on_each_other_are_not_merged():
    src = """func @f(%0: f32[4,4]) -> (f32[4,4]) {
  %1 = sine(%0) : (f32[4,4])
  %2 = cosine(%1) : (f32[4,4])
  %3 = dot_general(%2, %2) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[4,4])
  %4 = exponential(%0) : (f32[4,4])
  %5 = add(%4, %3) : (f32[4,4])
  return %5
}"""
    _, res = _run(src)
    assert res.report["groups"] == 2
    assert [op.name for op in res.fn.ops] == ["fusion", "dot_general", "fusion"]


MUST_NOT_CHANGE = [
    # contractions are kernels of their own; a lone op with a transpose feeding a dot is
    # not worth a group
    """func @f(%0: f32[8,4], %1: f32[4,4]) -> (f32[8,4]) {
  %2 = dot_general(%0, %1) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[8,4])
  %3 = sine(%2) : (f32[8,4])
  %4 = transpose(%3) {permutation=[1, 0]} : (f32[4,8])
  %5 = dot_general(%4, %0) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[4,4])
  %6 = dot_general(%0, %5) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[8,4])
  return %6
}""",
    # an expensive op read by two consumers that must stay apart (one is returned)
    """func @f(%0: f32[8]) -> (f32[8], f32[8]) {
  %1 = exponential(%0) : (f32[8])
  %2 = all_reduce(%1) {replica_groups=[[0]], computation="add"} : (f32[8])
  return %1, %2
}""",
]


@pytest.mark.parametrize("src", MUST_NOT_CHANGE)
def test_must_not_change(src):
    out, res = _run(src)
    assert out == src and not res.changed and res.report["groups"] == 0


def test_realisable_groups_leave_out_transposes_reshapes_and_ops_after_reductions():
    src = """func @f(%0: f32[8,4]) -> (f32[8,1], f32[4,8]) {
  %1 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %2 = exponential(%0) : (f32[8,4])
  %3 = reduce(%2, %1) {dimensions=[1]} : (f32[8]) region(%4: f32[], %5: f32[]) {
    %6 = add(%4, %5) : (f32[])
    return %6
  }
  %7 = reshape(%3) {shape=[8, 1]} : (f32[8,1])
  %8 = log(%7) : (f32[8,1])
  %9 = transpose(%0) {permutation=[1, 0]} : (f32[4,8])
  %10 = sine(%9) : (f32[4,8])
  %11 = cosine(%10) : (f32[4,8])
  return %8, %11
}"""
    out, _ = _run(src)  # unrestricted: reshape and transpose are inside the groups
    assert "    %9 = reshape(%5)" in out and "    %13 = transpose(%12)" in out
    out, _ = _run(src, REALISABLE)
    assert (
        out
        == """func @f(%0: f32[8,4]) -> (f32[8,1], f32[4,8]) {
  %1 = fusion(%0) {kind="input"} : (f32[8]) region(%2: f32[8,4]) {
    %3 = exponential(%2) : (f32[8,4])
    %4 = constant() {value=array<f32[]: [0.0]>} : (f32[])
    %5 = reduce(%3, %4) {dimensions=[1]} : (f32[8]) region(%6: f32[], %7: f32[]) {
      %8 = add(%6, %7) : (f32[])
      return %8
    }
    return %5
  }
  %9 = reshape(%1) {shape=[8, 1]} : (f32[8,1])
  %10 = log(%9) : (f32[8,1])
  %11 = transpose(%0) {permutation=[1, 0]} : (f32[4,8])
  %12 = fusion(%11) {kind="loop"} : (f32[4,8]) region(%13: f32[4,8]) {
    %14 = sine(%13) : (f32[4,8])
    %15 = cosine(%14) : (f32[4,8])
    return %15
  }
  return %10, %12
}"""
    )


def test_nested_reductions_stay_apart_when_only_elementwise_may_follow():
    src = """func @f(%0: f32[8,4]) -> (f32[]) {
  %1 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %2 = reduce(%0, %1) {dimensions=[1]} : (f32[8]) region(%3: f32[], %4: f32[]) {
    %5 = add(%3, %4) : (f32[])
    return %5
  }
  %6 = exponential(%2) : (f32[8])
  %7 = reduce(%6, %1) {dimensions=[0]} : (f32[]) region(%8: f32[], %9: f32[]) {
    %10 = maximum(%8, %9) : (f32[])
    return %10
  }
  return %7
}"""
    _, res = _run(src)
    assert res.report["groups"] == 1  # reduce -> exp -> reduce: each row summed once
    _, res = _run(src, REALISABLE)
    assert res.report["groups"] == 1 and [op.name for op in res.fn.ops][-1] == "fusion"
    assert sum(op.name == "reduce" for op in res.fn.ops) == 1  # the first stays alone


def test_fuses_inside_control_flow_bodies():
    src = """func @f(%0: f32[4], %1: s32[]) -> (f32[4], s32[]) {
  %2, %3 = while(%0, %1) : (f32[4], s32[]) region(%4: f32[4], %5: s32[]) {
    %6 = constant() {value=array<s32[]: [3]>} : (s32[])
    %7 = compare(%5, %6) {comparison_direction="LT"} : (pred[])
    return %7
  } region(%8: f32[4], %9: s32[]) {
    %10 = sine(%8) : (f32[4])
    %11 = cosine(%10) : (f32[4])
    %12 = constant() {value=array<s32[]: [1]>} : (s32[])
    %13 = add(%9, %12) : (s32[])
    return %11, %13
  }
  return %2, %3
}"""
    out, res = _run(src)
    assert res.report["groups"] == 1
    assert (
        """    %10 = fusion(%8) {kind="loop"} : (f32[4]) region(%11: f32[4]) {
      %12 = sine(%11) : (f32[4])
      %13 = cosine(%12) : (f32[4])
      return %13
    }"""
        in out
    )
    ks = cost.predicted_kernels(res.fn)
    assert [k.group for k in ks] == [None, 0, None]  # compare, the group, the counter add


def test_already_fused_program_is_left_alone():
    src = """func @f(%0: f32[4]) -> (f32[4]) {
  %1 = sine(%0) : (f32[4])
  %2 = cosine(%1) : (f32[4])
  return %2
}"""
    fn = Fusion()(parse(src)).fn
    assert [op.name for op in fn.ops] == ["fusion"]
    res = Fusion()(fn)
    assert not res.changed and res.fn is fn
