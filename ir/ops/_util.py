"""Helpers shared by the op definition modules."""

from __future__ import annotations

import numpy as np
from purejit.ir import dtypes
from purejit.ir.core import TensorType
from purejit.ir.registry import fail


def compute_dtype(dt: np.dtype) -> np.dtype:
    """NumPy computes narrow floats (bf16, f16, the 8-, 6- and 4-bit floats) in f32, as XLA's
    CPU backend does, and sub-byte integers in int32 (the result wraps back)."""
    if dt == dtypes.bfloat16 or dt == np.float16 or dt in dtypes.NARROW_FLOATS:
        return np.dtype(np.float32)
    if dt in dtypes.NARROW_INTS:
        return np.dtype(np.int32)
    return dt


def _types(types) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def check_rank_attr(op: str, name: str, dims, rank: int, *, unique: bool = True, type=None):
    """Check that `dims` are dimensions of a rank-`rank` value (distinct unless told)."""
    dims = int_list(op, name, dims)
    of = f"{type}" if type is not None else f"rank {rank}"
    for d in dims:
        if not 0 <= d < rank:
            fail(op, f"{name}={list(dims)} out of range for {of}")
    if unique and len(set(dims)) != len(dims):
        fail(op, f"{name}={list(dims)} has repeated dimensions (operand {of})")
    return dims


def same_types(op: str, types: list[TensorType]):
    first = types[0]
    for t in types[1:]:
        if t.shape != first.shape:
            fail(op, f"shapes differ: {' vs '.join(str(t) for t in types)}")
        if t.dtype != first.dtype:
            fail(op, f"dtypes differ: {' vs '.join(str(t) for t in types)}")
    return first


def nargs(op: str, types: list, n: int):
    if len(types) != n:
        fail(op, f"expects {n} operands, got {len(types)}: {_types(types)}")


def need_attrs(op: str, attrs: dict, *names: str):
    """Fail unless every attribute in `names` is present."""
    missing = [n for n in names if n not in attrs]
    if missing:
        fail(op, f"missing attribute{'s' if len(missing) > 1 else ''} {', '.join(missing)}")


def int_list(op: str, name: str, value) -> tuple[int, ...]:
    """`value` as a tuple of ints; fails unless it is a list/tuple of integers."""
    ok = isinstance(value, (tuple, list, np.ndarray)) and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in value
    )
    if not ok:
        fail(op, f"{name} must be a list of integers, got {value!r}")
    return tuple(int(v) for v in value)


def int_attr(op: str, name: str, value) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        fail(op, f"{name} must be an integer, got {value!r}")
    return int(value)


def dtype_attr(op: str, name: str, value) -> np.dtype:
    """`value` as one of the IR's dtypes; fails on anything else."""
    try:
        return dtypes.canonical(value)
    except TypeError:
        fail(op, f"{name}={value!r} is not a dtype the IR supports")


def shape_attr(op: str, name: str, value) -> tuple[int, ...]:
    shape = int_list(op, name, value)
    if any(d < 0 for d in shape):
        fail(op, f"{name}={list(shape)} has a negative dimension")
    return shape
