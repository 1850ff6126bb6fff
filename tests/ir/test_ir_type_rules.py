"""The type rules of the core op families reject bad input with an IRTypeError that names
the op and the offending types (or attribute)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from purejit.ir import Builder, Function, IRTypeError, Op, TensorType, Value, get_op


def T(shape, dt=np.float32):
    return TensorType(shape, dt)


F3, F4, S3 = T((3,)), T((4,)), T((3,), np.int32)
F, S, P = T(()), T((), np.int32), T((), np.bool_)
M = T((2, 3))
BF3 = T((3,), ml_dtypes.bfloat16)


def region(*types):
    """A region `(types...) -> add(p0, p1)`, built by hand so its types can be wrong."""
    params = [Value(t) for t in types]
    out = Value(types[0])
    return Function("region", params, [Op("add", params[:2], {}, [out])], [out])


DOT = dict(lhs_batching_dimensions=(), rhs_batching_dimensions=(),
           lhs_contracting_dimensions=(1,), rhs_contracting_dimensions=(0,))  # fmt: skip

# (op, operand types, attrs, regions, fragments the message must contain)
BAD = [
    ("negate", [F3, F3], {}, [], ["negate", "expects 1 operands", "f32[3]"]),
    ("sqrt", [S3], {}, [], ["sqrt", "s32[3]", "inexact"]),
    ("popcnt", [F3], {}, [], ["popcnt", "f32[3]"]),
    ("not", [F3], {}, [], ["not", "f32[3]"]),
    ("real", [F3], {}, [], ["real", "f32[3]", "complex"]),
    ("add", [F3, F4], {}, [], ["add", "f32[3] vs f32[4]"]),
    ("add", [F3, S3], {}, [], ["add", "f32[3] vs s32[3]"]),
    ("subtract", [T((3,), np.bool_)] * 2, {}, [], ["subtract", "pred[3]"]),
    ("shift_left", [F3, F3], {}, [], ["shift_left", "f32[3]"]),
    ("and", [BF3, BF3], {}, [], ["and", "bf16[3]"]),
    ("atan2", [S3, S3], {}, [], ["atan2", "s32[3]"]),
    ("compare", [F3, F3], {"comparison_direction": "XX"}, [], ["compare", "'XX'", "f32[3]"]),
    ("compare", [F3, F3], {}, [], ["compare", "None", "f32[3]"]),
    (
        "compare",
        [T((3,), np.complex64)] * 2,
        {"comparison_direction": "LT"},
        [],
        ["compare", "c64[3]"],
    ),
    ("select", [F3, F3, F3], {}, [], ["select", "must be pred", "f32[3]"]),
    ("select", [T((4,), np.bool_), F3, F3], {}, [], ["select", "pred[4]", "f32[3]"]),
    ("select", [P, F3, S3], {}, [], ["select", "f32[3] vs s32[3]"]),
    ("clamp", [S, F3, F], {}, [], ["clamp", "s32[]", "f32[3]"]),
    ("clamp", [F4, F3, F], {}, [], ["clamp", "f32[4]", "f32[3]"]),
    (
        "clamp",
        [T((), np.complex64), T((3,), np.complex64), T((), np.complex64)],
        {},
        [],
        ["clamp", "c64[3]"],
    ),
    ("convert", [F3], {}, [], ["convert", "missing attribute dtype"]),
    ("convert", [F3], {"dtype": "float128"}, [], ["convert", "float128"]),
    ("constant", [], {"value": [1, 2]}, [], ["constant", "numpy array", "list"]),
    ("iota", [], {"shape": (3,), "dtype": np.dtype(bool), "dimension": 0}, [], ["iota", "pred[3]"]),
    (
        "iota",
        [],
        {"shape": (3, 2), "dtype": np.dtype(np.int32), "dimension": 2},
        [],
        ["iota", "dimension=[2]", "s32[3,2]"],
    ),
    ("iota", [], {"shape": (3,)}, [], ["iota", "missing attributes dtype, dimension"]),
    (
        "broadcast_in_dim",
        [F3],
        {"shape": (2, 4), "broadcast_dimensions": (1,)},
        [],
        ["broadcast_in_dim", "f32[3]", "[2, 4]"],
    ),
    (
        "broadcast_in_dim",
        [F3],
        {"shape": (2, 3), "broadcast_dimensions": (2,)},
        [],
        ["broadcast_in_dim", "f32[3]", "[2]"],
    ),
    (
        "broadcast_in_dim",
        [M],
        {"shape": (2, 3), "broadcast_dimensions": (0,)},
        [],
        ["broadcast_in_dim", "f32[2,3]", "2 entries"],
    ),
    ("reshape", [M], {"shape": (4, 2)}, [], ["reshape", "f32[2,3]", "f32[4,2]"]),
    ("reshape", [M], {"shape": (-1, 6)}, [], ["reshape", "negative", "[-1, 6]"]),
    ("reshape", [M], {"shape": "6"}, [], ["reshape", "list of integers", "'6'"]),
    ("transpose", [M], {"permutation": (0, 0)}, [], ["transpose", "[0, 0]", "f32[2,3]"]),
    (
        "slice",
        [M],
        {"start_indices": (0, 2), "limit_indices": (2, 1), "strides": (1, 1)},
        [],
        ["slice", "f32[2,3]", "start=[0, 2]"],
    ),
    (
        "slice",
        [M],
        {"start_indices": (0, 0), "limit_indices": (2, 3), "strides": (1, 0)},
        [],
        ["slice", "f32[2,3]", "strides=[1, 0]"],
    ),
    (
        "slice",
        [M],
        {"start_indices": (0,), "limit_indices": (2,), "strides": (1,)},
        [],
        ["slice", "f32[2,3]", "2 entries"],
    ),
    ("concatenate", [], {"dimension": 0}, [], ["concatenate", "at least one"]),
    (
        "concatenate",
        [M, T((2, 3), np.int32)],
        {"dimension": 0},
        [],
        ["concatenate", "f32[2,3]", "s32[2,3]"],
    ),
    ("concatenate", [M, T((3, 3))], {"dimension": 1}, [], ["concatenate", "f32[2,3]", "f32[3,3]"]),
    ("concatenate", [M, M], {"dimension": 2}, [], ["concatenate", "dimension=[2]", "f32[2,3]"]),
    (
        "pad",
        [M, S],
        {"edge_padding_low": (0, 0), "edge_padding_high": (0, 0), "interior_padding": (0, 0)},
        [],
        ["pad", "s32[]", "f32[2,3]"],
    ),
    (
        "pad",
        [M, F],
        {"edge_padding_low": (0, 0), "edge_padding_high": (0, 0), "interior_padding": (-1, 0)},
        [],
        ["pad", "f32[2,3]", "interior"],
    ),
    (
        "pad",
        [M, F],
        {"edge_padding_low": (-3, 0), "edge_padding_high": (0, 0), "interior_padding": (0, 0)},
        [],
        ["pad", "f32[2,3]", "negative"],
    ),
    ("reverse", [M], {"dimensions": (1, 1)}, [], ["reverse", "[1, 1]", "f32[2,3]"]),
    ("reduce", [M], {"dimensions": (0,)}, [], ["reduce", "1 operands"]),
    ("reduce", [M, S], {"dimensions": (0,)}, [region(F, F)], ["reduce", "s32[]", "f32"]),
    (
        "reduce",
        [M, F],
        {"dimensions": (2,)},
        [region(F, F)],
        ["reduce", "dimensions=[2]", "f32[2,3]"],
    ),
    ("reduce", [M, F], {"dimensions": (0,)}, [], ["reduce", "one region"]),
    ("reduce", [M, F], {"dimensions": (0,)}, [region(S, S)], ["reduce", "region must be", "s32[]"]),
    ("dot_general", [M, T((3, 4), np.int32)], DOT, [], ["dot_general", "f32[2,3]", "s32[3,4]"]),
    ("dot_general", [M, T((4, 4))], DOT, [], ["dot_general", "f32[2,3] dim 1", "f32[4,4] dim 0"]),
    (
        "dot_general",
        [M, T((3, 4))],
        {**DOT, "lhs_contracting_dimensions": (2,)},
        [],
        ["dot_general", "[2]", "f32[2,3]"],
    ),
    (
        "dot_general",
        [M, T((3, 4))],
        {**DOT, "lhs_batching_dimensions": (1,)},
        [],
        ["dot_general", "repeated", "f32[2,3]"],
    ),
    (
        "dynamic_slice",
        [M, S],
        {"slice_sizes": (1, 1)},
        [],
        ["dynamic_slice", "f32[2,3]", "2 start indices"],
    ),
    ("dynamic_slice", [M, S, F], {"slice_sizes": (1, 1)}, [], ["dynamic_slice", "f32[]"]),
    (
        "dynamic_slice",
        [M, S, T((), np.int64)],
        {"slice_sizes": (1, 1)},
        [],
        ["dynamic_slice", "s32[]", "s64[]"],
    ),
    (
        "dynamic_slice",
        [M, S, S],
        {"slice_sizes": (3, 1)},
        [],
        ["dynamic_slice", "[3, 1]", "f32[2,3]"],
    ),
    (
        "dynamic_update_slice",
        [M, T((3, 3)), S, S],
        {},
        [],
        ["dynamic_update_slice", "f32[3,3]", "f32[2,3]"],
    ),
    (
        "dynamic_update_slice",
        [M, T((1, 1), np.int32), S, S],
        {},
        [],
        ["dynamic_update_slice", "s32[1,1]", "f32[2,3]"],
    ),
]


def _id(case):
    return f"{case[0]}:{'/'.join(case[4][1:2])}"


@pytest.mark.parametrize("case", BAD, ids=[f"{i}-{_id(c)}" for i, c in enumerate(BAD)])
def test_type_rule_rejects_with_op_and_types(case):
    name, types, attrs, regions, fragments = case
    with pytest.raises(IRTypeError) as e:
        get_op(name).infer(types, attrs, regions)
    msg = str(e.value)
    assert msg.startswith(f"{name}: "), msg
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"


def test_builder_raises_the_same_error():
    b = Builder("f")
    x, y = b.param(F3), b.param(F4)
    with pytest.raises(IRTypeError, match=r"add: shapes differ: f32\[3\] vs f32\[4\]"):
        b.op("add", [x, y])


def test_good_inputs_are_accepted():
    """A positive control for the rules above: the fixed versions type-check."""
    assert get_op("add").infer([F3, F3], {}, []) == [F3]
    assert get_op("clamp").infer([F, F3, F], {}, []) == [F3]
    assert get_op("convert").infer([F3], {"dtype": np.dtype(np.int8)}, []) == [T((3,), np.int8)]
    assert get_op("iota").infer(
        [], {"shape": (3,), "dtype": np.dtype(np.uint8), "dimension": 0}, []
    ) == [T((3,), np.uint8)]
    assert get_op("reduce").infer([M, F], {"dimensions": (0,)}, [region(F, F)]) == [F3]
    assert get_op("dot_general").infer([M, T((3, 4))], DOT, []) == [T((2, 4))]
    assert get_op("dynamic_slice").infer([M, S, S], {"slice_sizes": (1, 2)}, []) == [T((1, 2))]
