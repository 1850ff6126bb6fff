"""JAX's dtype promotion lattice, weak types and x64 canonicalisation.

The lattice (an edge a -> b means a promotes to b; the result of promoting two types is their
least upper bound). `i*`, `f*`, `c*` are the weak types of Python int, float and complex:

    b1 -> i*
    i* -> u8, i8
    u8 -> i16, u16        u16 -> i32, u32        u32 -> i64, u64        u64 -> f*
    i8 -> i16 -> i32 -> i64 -> f*
    f* -> bf16, f16, c*
    bf16 -> f32     f16 -> f32     f32 -> f64, c64     f64 -> c128
    c* -> c64 -> c128
    i* -> s4, u4, s2, u2, s1, u1 (each promoting to nothing else)
    f* -> every float narrower than 16 bits (float8_*, float6_*, float4_*; each promoting to
          nothing else)

Some consequences (as in JAX): `u8 + i8 -> i16`, `i32 + u32 -> i64`, `i64 + u64 -> f*`
(float32 by default), `bf16 + f16 -> f32`, `i32 + f16 -> f16`, `f32 + 2 -> f32`,
`i8 + 2.0 -> f32` (weak float; result weak), `u8 + 300 -> u8` (the weak int takes u8).
The narrow types take weak scalars (`f8 * 2.0 -> f8`) but meet no other type: `f8 + f32`
raises TypePromotionError, as in JAX; convert explicitly (`x.astype(jnp.float32)`).
A weak type in the result maps to the default type of its kind (int32/float32/complex64 with
x64 off, int64/float64/complex128 with it on) and the result stays weak.
With x64 off, 64-bit types are canonicalised to 32-bit ones.
"""

from __future__ import annotations

import abc
import functools

import numpy as np

from purejit.config import config
from purejit.ir.dtypes import NARROW_FLOATS, NARROW_INTS, bfloat16

_b1 = np.dtype(np.bool_)
_i8, _i16, _i32, _i64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
_u8, _u16, _u32, _u64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_bf16, _f16, _f32, _f64 = bfloat16, np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_c64, _c128 = np.dtype(np.complex64), np.dtype(np.complex128)
WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = "i*", "f*", "c*"

_EDGES = {
    _b1: [WEAK_INT],
    WEAK_INT: [_u8, _i8, *NARROW_INTS],
    _u8: [_i16, _u16],
    _u16: [_i32, _u32],
    _u32: [_i64, _u64],
    _u64: [WEAK_FLOAT],
    _i8: [_i16],
    _i16: [_i32],
    _i32: [_i64],
    _i64: [WEAK_FLOAT],
    WEAK_FLOAT: [_bf16, _f16, WEAK_COMPLEX, *NARROW_FLOATS],
    _bf16: [_f32],
    _f16: [_f32],
    _f32: [_f64, _c64],
    _f64: [_c128],
    WEAK_COMPLEX: [_c64],
    _c64: [_c128],
    _c128: [],
    **{t: [] for t in (*NARROW_INTS, *NARROW_FLOATS)},
}


@functools.lru_cache(maxsize=None)
def _upper(node) -> frozenset:
    out = {node}
    for n in _EDGES[node]:
        out |= _upper(n)
    return frozenset(out)


def _lub(a, b):
    common = _upper(a) & _upper(b)
    for c in common:
        if _upper(c) == common:
            return c
    raise TypePromotionError(_no_promotion_message(a, b))


def _is_narrow_float(node) -> bool:
    return not isinstance(node, str) and node in NARROW_FLOATS


def _no_promotion_message(a, b) -> str:
    names = tuple(str(n) for n in (a, b))
    widths = [int(NARROW_FLOATS[n][1]) for n in (a, b) if _is_narrow_float(n)]
    if widths:
        bits = max(widths)  # as JAX: the 8-bit message first, then the 6- and 4-bit ones
        return (
            f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
            f"unintended promotion, {bits}-bit floats do not support implicit promotion. If "
            "you'd like your inputs to be promoted to another type, you can do so explicitly "
            "using e.g. x.astype('float32')"
        )
    if any(not isinstance(n, str) and n in NARROW_INTS for n in (a, b)):
        return (
            f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
            "unintended promotion, 1-bit, 2-bit and 4-bit integers do not support implicit "
            "promotion. If you'd like your inputs to be promoted to another type, you can do "
            "so explicitly using e.g. x.astype('int32')"
        )
    return (
        f"Input dtypes {names} have no available implicit dtype promotion path. Try "
        "explicitly casting inputs to the desired output type."
    )


def _node(dtype: np.dtype, weak: bool):
    if not weak:
        return dtype
    if dtype == _b1:
        return _b1
    if dtype.kind in "iu" or dtype in NARROW_INTS:
        return WEAK_INT
    if dtype.kind == "c":
        return WEAK_COMPLEX
    return WEAK_FLOAT


def default_int() -> np.dtype:
    return _i64 if config.enable_x64 else _i32


def default_float() -> np.dtype:
    return _f64 if config.enable_x64 else _f32


def default_complex() -> np.dtype:
    return _c128 if config.enable_x64 else _c64


def canonicalize(dtype) -> np.dtype:
    """Map 64-bit types to 32-bit ones when x64 is off."""
    dt = np.dtype(dtype)
    if config.enable_x64:
        return dt
    return {_i64: _i32, _u64: _u32, _f64: _f32, _c128: _c64}.get(dt, dt)


def promote_types(a, b) -> np.dtype:
    """Promote two strong dtypes (as jnp.promote_types)."""
    return result_type_weak((np.dtype(a), False), (np.dtype(b), False))[0]


def result_type_weak(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Promote (dtype, weak) pairs; returns the result dtype and whether it is weak."""
    node = None
    for dt, weak in typed:
        n = _node(np.dtype(dt), weak)
        node = n if node is None else _lub(node, n)
    if node == WEAK_INT:
        return default_int(), True
    if node == WEAK_FLOAT:
        return default_float(), True
    if node == WEAK_COMPLEX:
        return default_complex(), True
    return canonicalize(node), False


def python_scalar_dtype(x) -> np.dtype:
    if isinstance(x, bool):
        return _b1
    if isinstance(x, int):
        return default_int()
    if isinstance(x, float):
        return default_float()
    if isinstance(x, complex):
        return default_complex()
    raise TypeError(f"{type(x).__name__} is not a Python scalar")


def is_inexact(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind in "fc" or dt == bfloat16 or dt in NARROW_FLOATS


# the dtype of tangents and cotangents of integer and boolean values (JAX's float0): they
# carry no information, so an array of it holds no bytes
float0 = np.dtype([("float0", np.void, 0)])


# ---- JAX's `jax.dtypes` names --------------------------------------------------------------


class extended(np.generic):
    """The abstract scalar type of dtypes NumPy does not know (typed PRNG keys)."""


class prng_key(extended):
    """The abstract scalar type of typed PRNG keys: `issubdtype(key.dtype, prng_key)`."""


DType = np.dtype


class _ExtendedDTypeMeta(abc.ABCMeta):
    # typed keys' dtype (purejit.random's KeyDType) counts as extended without importing it
    def __instancecheck__(cls, obj):
        return is_key_dtype(obj) or super().__instancecheck__(obj)


class ExtendedDType(metaclass=_ExtendedDTypeMeta):
    """The base of dtypes NumPy does not know: an instance names its scalar type (`type`, a
    subclass of `extended`) and its rules (`_rules`). purejit computes only with typed keys'
    dtypes; arrays of another extended dtype raise NotImplementedError where one is made."""

    @property
    @abc.abstractmethod
    def type(self) -> type: ...

    _rules = None

    @property
    def dtype(self):
        # NumPy's `np.dtype(obj)` reads `obj.dtype`: every place purejit makes a dtype from
        # this one stops here, by name, instead of NumPy's "cannot interpret" TypeError
        raise NotImplementedError(
            f"extended dtype {self!r} ({type(self).__name__}): purejit has no arrays of "
            "user-defined extended dtypes (only typed PRNG keys); keep the values in the "
            "physical dtype its rules name and convert at the edges"
        )


def is_key_dtype(t) -> bool:
    # a typed key's dtype (purejit.random's KeyDType, `key<impl>`): duck-typed, as this
    # layer sits below purejit.random
    return hasattr(t, "impl") and str(getattr(t, "name", "")).startswith("key<")


def _abstract(t) -> bool:
    return isinstance(t, type) and issubclass(t, np.generic) and t in _ABSTRACT_TYPES


_ABSTRACT_TYPES = (np.generic, np.number, np.inexact, np.floating, np.complexfloating,
                   np.integer, np.signedinteger, np.unsignedinteger, np.bool_, np.flexible,
                   np.character)  # fmt: skip


def _ml_kind(dt: np.dtype):
    """The NumPy abstract type ml_dtypes' types stand for (bfloat16, float8_*, int4...); their
    dtype kind is "V" (float8_e5m2's is "f"), so NumPy's own hierarchy does not know them."""
    if dt == bfloat16 or dt in NARROW_FLOATS:
        return np.floating
    if dt in NARROW_INTS:
        return np.signedinteger if NARROW_INTS[dt][2] else np.unsignedinteger
    return None


def issubdtype(arg1, arg2) -> bool:
    """NumPy's `issubdtype` with JAX's additions: ml_dtypes' floats (bfloat16, float8_*) are
    floating types, ml_dtypes' small ints integer types, typed keys' dtypes subtypes of
    `prng_key` and `extended`."""
    a = getattr(arg1, "dtype", arg1) if not isinstance(arg1, type) else arg1
    b = getattr(arg2, "dtype", arg2) if not isinstance(arg2, type) else arg2
    if isinstance(b, type) and issubclass(b, extended):
        if is_key_dtype(a):
            return True
        return isinstance(a, type) and issubclass(a, b)
    if is_key_dtype(a) or is_key_dtype(b):
        return is_key_dtype(a) and is_key_dtype(b) and a == b
    if isinstance(a, type) and issubclass(a, extended):
        return False
    a = a if _abstract(a) else np.dtype(a)
    b = b if _abstract(b) else np.dtype(b)
    if isinstance(a, np.dtype) and _ml_kind(a) is not None:
        if isinstance(b, np.dtype):
            return a == b
        return bool(np.issubdtype(_ml_kind(a), b))
    if isinstance(b, np.dtype) and _ml_kind(b) is not None:
        return a == b
    return bool(np.issubdtype(a, b))


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False):
    """`dtype` as purejit computes with it: 64-bit types become 32-bit ones with x64 off."""
    if is_key_dtype(dtype):
        if not allow_extended_dtype:
            raise ValueError(f"canonicalize_dtype: {dtype} is an extended dtype")
        return dtype
    return canonicalize(dtype)


class TypePromotionError(ValueError):
    """Two dtypes have no implicit promotion (a narrow float or integer met another type)."""


def result_type(*args, return_weak_type_flag: bool = False):
    """The dtype JAX's promotion gives these arrays, dtypes and Python scalars (Python
    scalars are weak: `result_type(np.float16, 1.0)` is float16)."""
    typed = []
    for a in args:
        if isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic):
            typed.append((python_scalar_dtype(a), True))
        elif hasattr(a, "dtype") and not isinstance(a, type):
            typed.append((np.dtype(a.dtype), bool(getattr(a, "weak_type", False))))
        elif isinstance(a, type) and isinstance(getattr(a, "dtype", None), np.dtype):
            typed.append((a.dtype, False))  # purejit.numpy's scalar types
        else:
            typed.append((np.dtype(a), False))
    if not typed:
        raise ValueError("at least one array or dtype is required")
    dtype, weak = result_type_weak(*typed)
    return (dtype, weak) if return_weak_type_flag else dtype


def _as_dtype(t) -> np.dtype:
    """A dtype from a dtype, a NumPy or purejit scalar type, or an array."""
    if isinstance(t, type) and issubclass(t, np.generic):
        return np.dtype(t)
    if isinstance(getattr(t, "dtype", None), np.dtype):
        return t.dtype
    return np.dtype(t)


def finfo(dtype):
    """Machine limits of a floating dtype (ml_dtypes' types included)."""
    import ml_dtypes

    return ml_dtypes.finfo(_as_dtype(dtype))


def iinfo(dtype):
    """Machine limits of an integer dtype (ml_dtypes' int4 included)."""
    import ml_dtypes

    return ml_dtypes.iinfo(_as_dtype(dtype))


def itemsize_bits(dtype) -> int:
    """Bits per element (4 for int4 / float4 types, whose NumPy itemsize is a byte)."""
    dt = _as_dtype(dtype)
    if dt.name in ("int4", "uint4", "float4_e2m1fn"):
        return 4
    if dt.name in ("int2", "uint2"):
        return 2
    return dt.itemsize * 8


def scalar_type_of(x) -> type:
    """The Python scalar type matching the dtype of `x`: bool, int, float or complex."""
    dt = np.dtype(getattr(x, "dtype", None) or python_scalar_dtype(x))
    if dt == np.bool_:
        return bool
    if dt.kind in "iu":
        return int
    if dt.kind == "c":
        return complex
    return float
