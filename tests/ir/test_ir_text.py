"""The IR's text form: `print(parse(t)) == t`, values survive the round trip bit for bit, and
parse errors name the line."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from purejit.ir import (
    Builder,
    ParseError,
    TensorType,
    dtypes,
    interpret,
    parse,
    print_function,
    verify,
)

BF16 = np.dtype(ml_dtypes.bfloat16)


def round_trip(text: str) -> str:
    return print_function(verify(parse(text)))


def test_round_trip_every_elementwise_form():
    text = """func @main(%0: f32[2,3], %1: f32[2,3], %2: pred[2,3]) -> (f32[2,3], pred[2,3]) {
  %3 = add(%0, %1) : (f32[2,3])
  %4 = compare(%3, %1) {comparison_direction="LT"} : (pred[2,3])
  %5 = select(%4, %3, %0) : (f32[2,3])
  %6 = convert(%5) {dtype=bf16} : (bf16[2,3])
  %7 = convert(%6) {dtype=f32} : (f32[2,3])
  %8 = and(%4, %2) : (pred[2,3])
  return %7, %8
}"""
    assert round_trip(text) == text


def test_round_trip_reduce_region_and_multiple_results():
    text = """func @argmax(%0: f32[4,7], %1: s32[4,7]) -> (f32[4], s32[4]) {
  %2 = constant() {value=array<f32[]: [-inf]>} : (f32[])
  %3 = constant() {value=array<s32[]: [0]>} : (s32[])
  %4, %5 = reduce(%0, %1, %2, %3) {dimensions=[1]} : (f32[4], s32[4]) region(%6: f32[], %7: s32[], %8: f32[], %9: s32[]) {
    %10 = compare(%6, %8) {comparison_direction="GT"} : (pred[])
    %11 = select(%10, %6, %8) : (f32[])
    %12 = select(%10, %7, %9) : (s32[])
    return %11, %12
  }
  return %4, %5
}"""
    fn = parse(text)
    assert print_function(fn) == text
    x = np.array([[1, 5, 2, 0, 0, 0, 0]] * 4, np.float32)
    idx = np.broadcast_to(np.arange(7, dtype=np.int32), (4, 7))
    vals, where = interpret(verify(fn), x, idx)
    np.testing.assert_array_equal(vals, [5] * 4)
    np.testing.assert_array_equal(where, [1] * 4)


def test_round_trip_shape_op_attributes():
    text = """func @main(%0: s8[2,3,4]) -> (s8[5,3,2]) {
  %1 = transpose(%0) {permutation=[2, 0, 1]} : (s8[4,2,3])
  %2 = slice(%1) {start_indices=[0, 0, 0], limit_indices=[4, 2, 3], strides=[2, 1, 1]} : (s8[2,2,3])
  %3 = constant() {value=array<s8[]: [-7]>} : (s8[])
  %4 = pad(%2, %3) {edge_padding_low=[1, 1, -1], edge_padding_high=[0, 0, 0], interior_padding=[2, 0, 0]} : (s8[5,3,2])
  return %4
}"""
    assert round_trip(text) == text


def _const_fn(value: np.ndarray):
    b = Builder("k")
    (c,) = b.op("constant", [], {"value": value})
    return b.finish([c])


CONSTANTS = {
    "large f32 (hex)": np.linspace(-3, 3, 40, dtype=np.float32).reshape(5, 8),
    "bf16 inline": np.array([1.5, -0.0, np.inf, -np.inf, np.nan, 3e38], BF16),
    "bf16 hex": np.arange(30).astype(BF16) / BF16.type(7),
    "f16": np.array([65504, -6.1e-5, 0.1], np.float16),
    "c64": np.array([1 + 2j, -0.5j, np.inf], np.complex64),
    "c128 scalar": np.array(3 - 4j, np.complex128),
    "pred": np.array([[True, False], [False, True]]),
    "pred large": np.arange(50) % 3 == 0,
    "u64 extremes": np.array([0, 2**64 - 1, 2**63], np.uint64),
    "s64 extremes": np.array([-(2**63), 2**63 - 1], np.int64),
    "s8 scalar": np.array(-128, np.int8),
    "empty": np.zeros((0, 3), np.float32),
    "f64 tiny": np.array([5e-324, 1e308, 0.1]),
}


@pytest.mark.parametrize("name", CONSTANTS)
def test_constants_round_trip_bit_exactly(name):
    value = CONSTANTS[name]
    text = print_function(_const_fn(value))
    fn = parse(text)
    assert print_function(fn) == text
    (got,) = interpret(verify(fn))
    assert got.dtype == value.dtype and got.shape == value.shape
    assert got.tobytes() == value.tobytes()  # bit for bit, -0.0 and NaN included


def test_large_constant_is_printed_in_hex():
    text = print_function(_const_fn(np.arange(100, dtype=np.int32)))
    assert "array<s32[100]: 0x" in text
    assert "[0, 1, 2" not in text


def test_float_attributes_nan_inf_and_exponents_round_trip():
    for v in (math.nan, math.inf, -math.inf, 1e-300, -2.5e17, 0.1, -0.0, 1e16):
        b = Builder("f")
        x = b.param(TensorType((3,), np.float32))
        # an op ignores attributes it does not know; the text form must still carry them
        op_results = b.op("negate", [x], {"alpha": v, "tag": 'a "quoted"\nname'})
        fn = b.finish(op_results)
        text = print_function(fn)
        again = parse(text)
        assert print_function(again) == text
        got = again.ops[0].attrs["alpha"]
        assert (math.isnan(got) and math.isnan(v)) or (
            got == v and math.copysign(1, got) == math.copysign(1, v)
        )
        assert again.ops[0].attrs["tag"] == 'a "quoted"\nname'


def test_scalar_and_zero_size_types_round_trip():
    text = """func @main(%0: f32[], %1: s32[0,4]) -> (f32[], s32[4,0]) {
  %2 = negate(%0) : (f32[])
  %3 = transpose(%1) {permutation=[1, 0]} : (s32[4,0])
  return %2, %3
}"""
    assert round_trip(text) == text


def test_odd_function_names_round_trip():
    b = Builder("<lambda>.1")
    x = b.param(TensorType((2,), np.float32))
    fn = b.finish(b.op("negate", [x]))
    text = print_function(fn)
    again = parse(text)
    assert again.name == "<lambda>.1"
    assert print_function(again) == text


# ---- hypothesis: arbitrary constants of every dtype ----------------------------------------

_DTYPES = [d for d in dtypes.ALL_DTYPES]


@st.composite
def arrays(draw):
    dt = draw(st.sampled_from(_DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 5), max_size=3)))
    n = int(np.prod(shape, dtype=np.int64))
    raw = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
    a = np.frombuffer(raw, dtype=np.uint8).view(dt).reshape(shape) if n else np.zeros(shape, dt)
    if dt == np.bool_:
        a = np.asarray(a.view(np.uint8) % 2 == 1)
    elif dtypes.bit_width(dt) < 8:  # ml_dtypes keeps a sub-byte value in the low bits
        low = np.uint8((1 << dtypes.bit_width(dt)) - 1)
        a = np.asarray(a.view(np.uint8) & low).view(dt)
    return a


@settings(max_examples=150, deadline=None)
@given(arrays())
def test_any_constant_round_trips(value):
    text = print_function(_const_fn(value))
    fn = parse(text)
    assert print_function(fn) == text
    (got,) = interpret(verify(fn))
    assert got.dtype == value.dtype and got.shape == value.shape
    assert got.tobytes() == value.tobytes()  # bit for bit: -0.0 and NaN payloads included


# ---- parse errors name the line ------------------------------------------------------------

BAD = {
    "unknown op": (
        "func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = frobnicate(%0) : (f32[2])\n  return %1\n}",
        2,
        "frobnicate",
    ),
    "undefined value": (
        "func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = negate(%0) : (f32[2])\n\n  %2 = add(%1, %7) : (f32[2])\n  return %2\n}",
        4,
        "%7",
    ),
    "bad dtype": (
        "func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = negate(%0) : (q32[2])\n  return %1\n}",
        2,
        "q32",
    ),
    "bad dimension": (
        "func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = negate(%0) : (f32[x])\n  return %1\n}",
        2,
        "x",
    ),
    "redefinition": (
        "func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = negate(%0) : (f32[2])\n  %1 = negate(%1) : (f32[2])\n  return %1\n}",
        3,
        "%1",
    ),
    "result count": (
        "func @f(%0: f32[2]) -> (f32[2]) {\n  %1, %2 = negate(%0) : (f32[2])\n  return %1\n}",
        2,
        "negate",
    ),
    "missing paren": (
        "func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = negate(%0 : (f32[2])\n  return %1\n}",
        2,
        "",
    ),
    "bad character": (
        "func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = negate(%0) ; (f32[2])\n  return %1\n}",
        2,
        ";",
    ),
    "bad hex": (
        "func @f() -> (f32[2]) {\n  %0 = constant() {value=array<f32[2]: 0x00ff>} : (f32[2])\n  return %0\n}",
        2,
        "bytes",
    ),
    "bad inline array": (
        "func @f() -> (f32[2]) {\n  %0 = constant() {value=array<f32[2]: [1.0, 2.0, 3.0]>} : (f32[2])\n  return %0\n}",
        2,
        "3",
    ),
    "trailing text": ("func @f(%0: f32[2]) -> (f32[2]) {\n  return %0\n}\nfunc", 4, "trailing"),
    "unterminated": (
        "func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = negate(%0) : (f32[2])\n",
        3,
        "end of input",
    ),
}


@pytest.mark.parametrize("name", BAD)
def test_parse_errors_give_the_line(name):
    text, line, word = BAD[name]
    with pytest.raises(ParseError) as e:
        parse(text)
    msg = str(e.value)
    assert msg.startswith(f"line {line}:"), msg
    assert word in msg, msg
