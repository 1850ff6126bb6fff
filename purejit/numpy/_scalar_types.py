"""Scalar types as JAX has them: `jnp.float32` is a class whose `.dtype` is the NumPy dtype,
whose call makes a strongly typed purejit array, and that compares and hashes equal to NumPy's
scalar type (so `x.dtype == jnp.float32` and `np.dtype(jnp.float32)` work as with NumPy's)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from purejit.ir.dtypes import bfloat16 as _bf16
from purejit.numpy._core import asarray


class _ScalarMeta(type):
    dtype: np.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other) -> bool:
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other) -> bool:
        return not cls == other

    def __call__(cls, x):
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls) -> str:
        return f"<class 'purejit.numpy.{cls.__name__}'>"


def _make(name: str, dt) -> type:
    dt = np.dtype(dt)
    return _ScalarMeta(name, (object,), {"dtype": dt, "__doc__": f"The {dt.name} scalar type."})


bool_ = _make("bool", np.bool_)
int8, int16, int32, int64 = (_make(n, n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (_make(n, n) for n in ("uint8", "uint16", "uint32", "uint64"))
float16, float32, float64 = (_make(n, n) for n in ("float16", "float32", "float64"))
complex64, complex128 = _make("complex64", np.complex64), _make("complex128", np.complex128)
bfloat16 = _make("bfloat16", _bf16)

# ml_dtypes' narrow floats and integers: float8 types compute in XLA (through float32 on
# CPU); they promote only with weak Python scalars, as JAX's do
float8_e4m3fn = _make("float8_e4m3fn", ml_dtypes.float8_e4m3fn)
float8_e5m2 = _make("float8_e5m2", ml_dtypes.float8_e5m2)
float8_e4m3 = _make("float8_e4m3", ml_dtypes.float8_e4m3)
float8_e3m4 = _make("float8_e3m4", ml_dtypes.float8_e3m4)
float8_e4m3fnuz = _make("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = _make("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz)
float8_e4m3b11fnuz = _make("float8_e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz)
float8_e8m0fnu = _make("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu)
float6_e2m3fn = _make("float6_e2m3fn", ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _make("float6_e3m2fn", ml_dtypes.float6_e3m2fn)
float4_e2m1fn = _make("float4_e2m1fn", ml_dtypes.float4_e2m1fn)
int4, uint4 = _make("int4", ml_dtypes.int4), _make("uint4", ml_dtypes.uint4)
int2, uint2 = _make("int2", ml_dtypes.int2), _make("uint2", ml_dtypes.uint2)
int1, uint1 = _make("int1", ml_dtypes.int1), _make("uint1", ml_dtypes.uint1)
