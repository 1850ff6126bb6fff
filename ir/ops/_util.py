"""Helpers shared by the op definition modules."""

from __future__ import annotations

import numpy as np

from purejit.ir import dtypes
from purejit.ir.core import TensorType
from purejit.ir.registry import fail


def compute_dtype(dt: np.dtype) -> np.dtype:
    """NumPy computes narrow floats (bf16, f16) in f32, as XLA's CPU backend does."""
    if dt == dtypes.bfloat16 or dt == np.float16:
        return np.dtype(np.float32)
    return dt


def check_rank_attr(op: str, name: str, dims, rank: int, *, unique: bool = True):
    dims = tuple(dims)
    for d in dims:
        if not 0 <= d < rank:
            fail(op, f"{name}={list(dims)} out of range for rank {rank}")
    if unique and len(set(dims)) != len(dims):
        fail(op, f"{name}={list(dims)} has repeated dimensions")
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
        fail(op, f"expects {n} operands, got {len(types)}")
