"""Scalar types as JAX has them: `jnp.float32` is a class whose `.dtype` is the NumPy dtype,
whose call makes a strongly typed purejit array, and that compares and hashes equal to NumPy's
scalar type (so `x.dtype == jnp.float32` and `np.dtype(jnp.float32)` work as with NumPy's)."""

from __future__ import annotations

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
