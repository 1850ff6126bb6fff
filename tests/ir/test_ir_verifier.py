"""`verify` rejects malformed IR: one test per kind of fault, each built by hand (the Builder
and the parser would refuse most of them)."""

from __future__ import annotations

import numpy as np
import pytest
from purejit.ir import Builder, Function, Op, TensorType, Value, VerifyError, parse, verify

F32_3 = TensorType((3,), np.float32)
F32 = TensorType((), np.float32)
S32 = TensorType((), np.int32)


def _add_region(t: TensorType) -> Function:
    a, b = Value(t), Value(t)
    c = Value(t)
    return Function("region", [a, b], [Op("add", [a, b], {}, [c])], [c])


def test_valid_function_passes_and_is_returned():
    b = Builder("ok")
    x = b.param(F32_3)
    (y,) = b.op("negate", [x])
    fn = b.finish([y])
    assert verify(fn) is fn


def test_use_before_def():
    x, y, z = Value(F32_3), Value(F32_3), Value(F32_3)
    ops = [Op("add", [x, z], {}, [y]), Op("negate", [x], {}, [z])]  # z used, then defined
    with pytest.raises(VerifyError, match=r"op #0 add: operand .* not defined before use"):
        verify(Function("f", [x], ops, [y]))


def test_wrong_result_type():
    x, y = Value(F32_3), Value(TensorType((3,), np.int32))
    with pytest.raises(
        VerifyError,
        match=r"op #0 negate: result types \(s32\[3\]\) but the type rule gives \(f32\[3\]\)",
    ):
        verify(Function("f", [x], [Op("negate", [x], {}, [y])], [y]))


def test_wrong_result_count():
    x, y, z = Value(F32_3), Value(F32_3), Value(F32_3)
    with pytest.raises(VerifyError, match="result types"):
        verify(Function("f", [x], [Op("negate", [x], {}, [y, z])], [y]))


def test_wrong_region_signature():
    x, init, out = Value(TensorType((4,), np.int32)), Value(S32), Value(S32)
    region = _add_region(F32)  # f32 body for an s32 reduction
    op = Op("reduce", [x, init], {"dimensions": (0,)}, [out], [region])
    with pytest.raises(
        VerifyError, match=r"reduce: region must be .*s32.* got \[f32\[\], f32\[\]\]"
    ):
        verify(Function("f", [x, init], [op], [out]))


def test_wrong_number_of_regions():
    x, init, out = Value(TensorType((4,), np.int32)), Value(S32), Value(S32)
    op = Op("reduce", [x, init], {"dimensions": (0,)}, [out], [])
    with pytest.raises(VerifyError, match="expects 1 regions, has 0"):
        verify(Function("f", [x, init], [op], [out]))


def test_duplicate_definition():
    x, y = Value(F32_3), Value(F32_3)
    ops = [Op("negate", [x], {}, [y]), Op("negate", [x], {}, [y])]  # y defined twice
    with pytest.raises(VerifyError, match=r"op #1 negate: result .* is defined twice"):
        verify(Function("f", [x], ops, [y]))


def test_result_that_redefines_a_parameter():
    x = Value(F32_3)
    with pytest.raises(VerifyError, match="defined twice"):
        verify(Function("f", [x], [Op("negate", [x], {}, [x])], [x]))


def test_duplicate_parameter():
    x = Value(F32_3)
    with pytest.raises(VerifyError, match="parameter .* defined twice"):
        verify(Function("f", [x, x], [], [x]))


def test_region_cannot_capture_outer_values():
    x, init, out = Value(TensorType((4,), np.float32)), Value(F32), Value(F32)
    a, b, c = Value(F32), Value(F32), Value(F32)
    region = Function("region", [a, b], [Op("add", [a, init], {}, [c])], [c])  # reads init
    op = Op("reduce", [x, init], {"dimensions": (0,)}, [out], [region])
    with pytest.raises(VerifyError, match="region 0: op #0 add: operand .* not defined"):
        verify(Function("f", [x, init], [op], [out]))


def test_shared_region_object_is_allowed():
    """Two reductions may share one (closed) region object, as cached reductions do."""
    x, init = Value(TensorType((4,), np.float32)), Value(F32)
    region = _add_region(F32)
    o1, o2 = Value(F32), Value(F32)
    ops = [
        Op("reduce", [x, init], {"dimensions": (0,)}, [o1], [region]),
        Op("reduce", [x, init], {"dimensions": (0,)}, [o2], [region]),
    ]
    verify(Function("f", [x, init], ops, [o1, o2]))


def test_undefined_returned_value():
    x = Value(F32_3)
    with pytest.raises(VerifyError, match="returned value .* not defined"):
        verify(Function("f", [x], [], [Value(F32_3)]))


def test_unknown_op():
    x, y = Value(F32_3), Value(F32_3)
    with pytest.raises(VerifyError, match="'frobnicate' is not registered"):
        verify(Function("f", [x], [Op("frobnicate", [x], {}, [y])], [y]))


def test_missing_attribute_is_a_verify_error_not_a_crash():
    x, y = Value(TensorType((2, 3), np.float32)), Value(TensorType((3, 2), np.float32))
    with pytest.raises(VerifyError, match="transpose: missing attribute permutation"):
        verify(Function("f", [x], [Op("transpose", [x], {}, [y])], [y]))


def test_type_error_inside_a_nested_region_names_the_path():
    text = """func @f(%0: f32[4], %1: f32[]) -> (f32[]) {
  %2 = reduce(%0, %1) {dimensions=[0]} : (f32[]) region(%3: f32[], %4: f32[]) {
    %5 = add(%3, %4) : (s32[])
    return %5
  }
  return %2
}"""
    fn = parse(text)  # the parser reads types as written; the verifier checks them
    with pytest.raises(VerifyError, match=r"@f: op #0 reduce region 0: op #0 add: result types"):
        verify(fn)
