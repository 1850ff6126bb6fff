"""Element types of the IR: NumPy dtypes with HLO-style short names.

The IR stores `numpy.dtype` objects (bfloat16 comes from ml_dtypes); the text form uses
XLA's names (`pred`, `s32`, `u8`, `bf16`, `f32`, `c64`, ...).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

bfloat16 = np.dtype(ml_dtypes.bfloat16)

_NAMES = {
    np.dtype(np.bool_): "pred",
    np.dtype(np.int8): "s8",
    np.dtype(np.int16): "s16",
    np.dtype(np.int32): "s32",
    np.dtype(np.int64): "s64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    bfloat16: "bf16",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}
_BY_NAME = {v: k for k, v in _NAMES.items()}

ALL_DTYPES = tuple(_NAMES)
ALL_DTYPES_SET = frozenset(_NAMES)


def dtype_name(dtype) -> str:
    """The short HLO name of a dtype (`f32`, `s32`, `pred`, ...)."""
    dt = np.dtype(dtype)
    try:
        return _NAMES[dt]
    except KeyError:
        raise TypeError(f"dtype {dt} is not supported by purejit") from None


def dtype_from_name(name: str) -> np.dtype:
    """Inverse of `dtype_name`."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown dtype name {name!r}") from None


def is_dtype_name(name: str) -> bool:
    return name in _BY_NAME


def canonical(dtype) -> np.dtype:
    """Check that `dtype` is one the IR supports and return it as np.dtype."""
    dt = np.dtype(dtype)
    if dt not in _NAMES:
        raise TypeError(f"dtype {dt} is not supported by purejit")
    return dt


def is_bool(dt) -> bool:
    return np.dtype(dt) == np.bool_


def is_signed(dt) -> bool:
    return np.dtype(dt).kind == "i"


def is_integer(dt) -> bool:
    return np.dtype(dt).kind in "iu"


def is_float(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind == "f" or dt == bfloat16


def is_complex(dt) -> bool:
    return np.dtype(dt).kind == "c"


def is_inexact(dt) -> bool:
    return is_float(dt) or is_complex(dt)
