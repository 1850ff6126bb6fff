"""Element types of the IR: NumPy dtypes with HLO-style short names.

The IR stores `numpy.dtype` objects (bfloat16, the 8-, 6- and 4-bit floats and the 4-, 2- and
1-bit integers come from ml_dtypes); the text form uses XLA's names (`pred`, `s32`, `u8`,
`bf16`, `f32`, `c64`, `f8e4m3fn`, `s4`, ...).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

bfloat16 = np.dtype(ml_dtypes.bfloat16)

# ml_dtypes' narrow floats, by XLA's name: all of them are computed in float32 on the host
# (and by XLA's CPU backend), as bfloat16 is
NARROW_FLOATS = {
    np.dtype(ml_dtypes.float8_e4m3fn): "f8e4m3fn",
    np.dtype(ml_dtypes.float8_e5m2): "f8e5m2",
    np.dtype(ml_dtypes.float8_e4m3): "f8e4m3",
    np.dtype(ml_dtypes.float8_e3m4): "f8e3m4",
    np.dtype(ml_dtypes.float8_e4m3fnuz): "f8e4m3fnuz",
    np.dtype(ml_dtypes.float8_e5m2fnuz): "f8e5m2fnuz",
    np.dtype(ml_dtypes.float8_e4m3b11fnuz): "f8e4m3b11fnuz",
    np.dtype(ml_dtypes.float8_e8m0fnu): "f8e8m0fnu",
    np.dtype(ml_dtypes.float6_e2m3fn): "f6e2m3fn",
    np.dtype(ml_dtypes.float6_e3m2fn): "f6e3m2fn",
    np.dtype(ml_dtypes.float4_e2m1fn): "f4e2m1fn",
}
# ml_dtypes' sub-byte integers (one element per byte on the host) and their bit widths
NARROW_INTS = {
    np.dtype(ml_dtypes.int4): ("s4", 4, True),
    np.dtype(ml_dtypes.uint4): ("u4", 4, False),
    np.dtype(ml_dtypes.int2): ("s2", 2, True),
    np.dtype(ml_dtypes.uint2): ("u2", 2, False),
    np.dtype(ml_dtypes.int1): ("s1", 1, True),
    np.dtype(ml_dtypes.uint1): ("u1", 1, False),
}

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
    **NARROW_FLOATS,
    **{dt: v[0] for dt, v in NARROW_INTS.items()},
}
_BY_NAME = {v: k for k, v in _NAMES.items()}

ALL_DTYPES = tuple(_NAMES)
ALL_DTYPES_SET = frozenset(_NAMES)
_ML_FLOATS = frozenset({bfloat16, *NARROW_FLOATS})


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
    dt = np.dtype(dt)
    return dt.kind == "i" or (dt in NARROW_INTS and NARROW_INTS[dt][2])


def is_integer(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind in "iu" or dt in NARROW_INTS


def is_unsigned(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind == "u" or (dt in NARROW_INTS and not NARROW_INTS[dt][2])


def is_float(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind == "f" or dt in _ML_FLOATS


def is_narrow(dt) -> bool:
    """A float narrower than 16 bits or an integer narrower than 8 (ml_dtypes' own types)."""
    dt = np.dtype(dt)
    return dt in NARROW_FLOATS or dt in NARROW_INTS


def is_complex(dt) -> bool:
    return np.dtype(dt).kind == "c"


def is_inexact(dt) -> bool:
    return is_float(dt) or is_complex(dt)


def bit_width(dt) -> int:
    """Bits of one element: 4 for int4 and float4_e2m1fn, 6 for the 6-bit floats, 1 for pred."""
    dt = np.dtype(dt)
    if dt in NARROW_INTS:
        return NARROW_INTS[dt][1]
    if dt == np.bool_:
        return 1
    name = NARROW_FLOATS.get(dt, "")
    return int(name[1]) if name[:1] == "f" and name[1] in "46" else dt.itemsize * 8


def iinfo(dt):
    """Integer limits, ml_dtypes' narrow integers included."""
    return ml_dtypes.iinfo(np.dtype(dt))


def finfo(dt):
    """Float limits, ml_dtypes' narrow floats included."""
    return ml_dtypes.finfo(np.dtype(dt))


def has_inf(dt) -> bool:
    """Whether the float type has infinities (float8_e4m3fn and the fnuz types do not)."""
    dt = np.dtype(dt)
    return is_inexact(dt) and bool(np.isinf(np.array(np.inf).astype(dt)))


def lowest(dt):
    """The identity of `maximum` for `dt`: -inf, or the most negative finite value of a
    float type without infinities, or the integer minimum (False for pred)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return np.array(False)
    if is_integer(dt):
        return np.array(iinfo(dt).min, dt)
    return np.array(-np.inf if has_inf(dt) else finfo(dt).min).astype(dt)


def highest(dt):
    """The identity of `minimum` for `dt` (see `lowest`)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return np.array(True)
    if is_integer(dt):
        return np.array(iinfo(dt).max, dt)
    return np.array(np.inf if has_inf(dt) else finfo(dt).max).astype(dt)
