"""Simplification rules: IR text in -> IR text out (after simplify + DCE to a fixed point),
must-not-change cases, and the interpreter gives the same numbers."""

import numpy as np
import pytest
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes.dce import DCE
from purejit.passes.pipeline import FixedPoint
from purejit.passes.simplify import BY_NAME, BY_TRAIT, Simplify, _exact


def _args(fn, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in fn.params:
        t = p.type
        if t.dtype == np.bool_:
            out.append(rng.integers(0, 2, t.shape).astype(bool))
        elif t.dtype.kind in "iu":
            out.append(rng.integers(-50, 50, t.shape).astype(t.dtype))
        else:
            x = rng.standard_normal(t.shape).astype(t.dtype)
            out.append(x)
    return out


def _run(src: str, passes=None):
    fn = verify(parse(src))
    res = (passes or FixedPoint([Simplify(), DCE()]))(fn)
    verify(res.fn)
    for seed in range(2):
        args = _args(fn, seed)
        for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
            np.testing.assert_array_equal(b, a)  # bit-identical up to the sign of zero
    return print_function(res.fn), res


ALL_RULES_IN = """func @f(%0: f32[4,3], %1: s32[4,3], %2: pred[4,3]) -> (f32[4,3], s32[4,3], f32[3,4], pred[4,3]) {
  %3 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %4 = broadcast_in_dim(%3) {shape=[4, 3], broadcast_dimensions=[]} : (f32[4,3])
  %5 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %6 = broadcast_in_dim(%5) {shape=[4, 3], broadcast_dimensions=[]} : (f32[4,3])
  %7 = add(%4, %0) : (f32[4,3])
  %8 = multiply(%7, %6) : (f32[4,3])
  %9 = divide(%8, %6) : (f32[4,3])
  %10 = subtract(%9, %4) : (f32[4,3])
  %11 = multiply(%10, %4) : (f32[4,3])
  %12 = subtract(%1, %1) : (s32[4,3])
  %13 = negate(%0) : (f32[4,3])
  %14 = negate(%13) : (f32[4,3])
  %15 = maximum(%14, %14) : (f32[4,3])
  %16 = transpose(%15) {permutation=[1, 0]} : (f32[3,4])
  %17 = transpose(%16) {permutation=[1, 0]} : (f32[4,3])
  %18 = reshape(%17) {shape=[12]} : (f32[12])
  %19 = reshape(%18) {shape=[4, 3]} : (f32[4,3])
  %20 = convert(%19) {dtype=f64} : (f64[4,3])
  %21 = convert(%20) {dtype=f32} : (f32[4,3])
  %22 = convert(%21) {dtype=f16} : (f16[4,3])
  %23 = convert(%22) {dtype=f32} : (f32[4,3])
  %24 = constant() {value=array<pred[]: [true]>} : (pred[])
  %25 = select(%24, %21, %11) : (f32[4,3])
  %26 = not(%2) : (pred[4,3])
  %27 = not(%26) : (pred[4,3])
  %28 = transpose(%6) {permutation=[1, 0]} : (f32[3,4])
  %29 = add(%25, %23) : (f32[4,3])
  return %29, %12, %28, %27
}"""

ALL_RULES_OUT = """func @f(%0: f32[4,3], %1: s32[4,3], %2: pred[4,3]) -> (f32[4,3], s32[4,3], f32[3,4], pred[4,3]) {
  %3 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %4 = constant() {value=array<s32[]: [0]>} : (s32[])
  %5 = broadcast_in_dim(%4) {shape=[4, 3], broadcast_dimensions=[]} : (s32[4,3])
  %6 = convert(%0) {dtype=f16} : (f16[4,3])
  %7 = convert(%6) {dtype=f32} : (f32[4,3])
  %8 = broadcast_in_dim(%3) {shape=[3, 4], broadcast_dimensions=[]} : (f32[3,4])
  %9 = add(%0, %7) : (f32[4,3])
  return %9, %5, %8, %2
}"""


def test_identities_collapses_and_constant_select_to_fixed_point():
    # 0 + x, x * 1, x / 1, x - 0 -> x; s32 x - x -> 0; -(-x) -> x; max(x, x) -> x;
    # transpose∘transpose and reshape∘reshape -> x; f32->f64->f32 -> x (exact) but
    # f32->f16->f32 stays (lossy); select(true, a, b) -> a; not(not(p)) -> p;
    # transpose(broadcast(1.0)) -> broadcast(1.0)
    out, res = _run(ALL_RULES_IN)
    assert out == ALL_RULES_OUT
    assert res.report["rounds"] >= 2


def test_broadcast_of_broadcast_and_scalar_hoisting():
    src = """func @f(%0: f32[], %1: f32[3]) -> (f32[2,3], f32[2,3]) {
  %2 = broadcast_in_dim(%0) {shape=[3], broadcast_dimensions=[]} : (f32[3])
  %3 = broadcast_in_dim(%2) {shape=[2, 3], broadcast_dimensions=[1]} : (f32[2,3])
  %4 = broadcast_in_dim(%0) {shape=[2, 3], broadcast_dimensions=[]} : (f32[2,3])
  %5 = exponential(%4) : (f32[2,3])
  %6 = multiply(%3, %5) : (f32[2,3])
  %7 = broadcast_in_dim(%1) {shape=[2, 3], broadcast_dimensions=[1]} : (f32[2,3])
  %8 = broadcast_in_dim(%7) {shape=[4, 2, 3], broadcast_dimensions=[1, 2]} : (f32[4,2,3])
  %9 = slice(%8) {start_indices=[1, 0, 0], limit_indices=[2, 2, 3], strides=[1, 1, 1]} : (f32[1,2,3])
  %10 = reshape(%9) {shape=[2, 3]} : (f32[2,3])
  return %6, %10
}"""
    out, _ = _run(src)
    # bcast(bcast(s)) -> bcast(s); f(bcast(a), bcast(b)) -> bcast(f(a, b)) on scalars;
    # the vector broadcast chain composes; slice/reshape of it are not scalar broadcasts
    assert (
        out
        == """func @f(%0: f32[], %1: f32[3]) -> (f32[2,3], f32[2,3]) {
  %2 = exponential(%0) : (f32[])
  %3 = multiply(%0, %2) : (f32[])
  %4 = broadcast_in_dim(%3) {shape=[2, 3], broadcast_dimensions=[]} : (f32[2,3])
  %5 = broadcast_in_dim(%1) {shape=[4, 2, 3], broadcast_dimensions=[2]} : (f32[4,2,3])
  %6 = slice(%5) {start_indices=[1, 0, 0], limit_indices=[2, 2, 3], strides=[1, 1, 1]} : (f32[1,2,3])
  %7 = reshape(%6) {shape=[2, 3]} : (f32[2,3])
  return %4, %7
}"""
    )


def test_splat_constant_becomes_broadcast_and_select_on_false():
    src = """func @f(%0: f32[2,2], %1: f32[2,2]) -> (f32[2,2]) {
  %2 = constant() {value=array<pred[2,2]: [false, false, false, false]>} : (pred[2,2])
  %3 = select(%2, %0, %1) : (f32[2,2])
  %4 = select(%2, %3, %3) : (f32[2,2])
  return %4
}"""
    out, _ = _run(src)
    assert (
        out
        == """func @f(%0: f32[2,2], %1: f32[2,2]) -> (f32[2,2]) {
  return %1
}"""
    )


MUST_NOT_CHANGE = [
    # x * 0 and x - x are not rewritten for floats (NaN * 0 and inf - inf are NaN)
    """func @f(%0: f32[4]) -> (f32[4]) {
  %1 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %2 = broadcast_in_dim(%1) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %3 = multiply(%0, %2) : (f32[4])
  %4 = subtract(%3, %3) : (f32[4])
  return %4
}""",
    # a lossy round trip through f16 and a narrowing int convert stay
    """func @f(%0: f32[4], %1: s32[4]) -> (f32[4], s32[4]) {
  %2 = convert(%0) {dtype=f16} : (f16[4])
  %3 = convert(%2) {dtype=f32} : (f32[4])
  %4 = convert(%1) {dtype=s8} : (s8[4])
  %5 = convert(%4) {dtype=s32} : (s32[4])
  return %3, %5
}""",
    # identities need the identity element: x + 1, x * 2, x & 1 (ints), x ** 2 stay
    """func @f(%0: f32[4], %1: s32[4]) -> (f32[4], s32[4]) {
  %2 = constant() {value=array<f32[]: [2.0]>} : (f32[])
  %3 = broadcast_in_dim(%2) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %4 = multiply(%0, %3) : (f32[4])
  %5 = power(%4, %3) : (f32[4])
  %6 = constant() {value=array<s32[]: [1]>} : (s32[])
  %7 = broadcast_in_dim(%6) {shape=[4], broadcast_dimensions=[]} : (s32[4])
  %8 = and(%1, %7) : (s32[4])
  %9 = add(%8, %7) : (s32[4])
  return %5, %9
}""",
]


@pytest.mark.parametrize("src", MUST_NOT_CHANGE)
def test_must_not_change(src):
    out, res = _run(src, Simplify())
    assert out == src and not res.changed


def test_rules_are_keyed_by_traits_where_traits_exist():
    assert {t for t, _ in BY_TRAIT} == {"involution", "idempotent", "shape_only", "elementwise"}
    assert not {"negate", "not", "maximum", "minimum"} & set(BY_NAME)  # via traits


@pytest.mark.parametrize(
    "a, b, exact",
    [
        ("float32", "float64", True),
        ("float64", "float32", False),
        ("float16", "float32", True),
        ("int16", "float32", True),
        ("int32", "float32", False),
        ("int32", "float64", True),
        ("uint8", "int16", True),
        ("uint8", "int8", False),
        ("int8", "uint16", False),
        ("bool", "int8", True),
        ("float32", "int64", False),
        ("complex64", "complex128", True),
    ],
)
def test_exact_conversions(a, b, exact):
    assert _exact(np.dtype(a), np.dtype(b)) is exact
