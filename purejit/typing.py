"""`purejit.typing` (JAX's `jax.typing`): the annotations array code uses, and `ArrayValue`,
the class `isinstance` checks use for any purejit array value.

`ArrayLike` is what purejit's functions accept as an array (a purejit array or tracer, a
NumPy array or scalar, a Python scalar); `DTypeLike` what they accept as a dtype.
`isinstance(x, ArrayValue)` holds for concrete `purejit.Array`s, tracers inside a
transformation and typed PRNG keys, as `isinstance(x, jax.Array)` does in JAX; drop-in mode
gives it to libraries as `jax.Array` and `jax.numpy.ndarray`.
"""

from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np

from purejit.random._keys import PRNGKeyArray
from purejit.runtime import Array
from purejit.tracing import Tracer


class _ArrayValueMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, (Array, Tracer, PRNGKeyArray))

    def __subclasscheck__(cls, sub) -> bool:
        return isinstance(sub, type) and (
            issubclass(sub, (Array, Tracer, PRNGKeyArray)) or type.__subclasscheck__(cls, sub)
        )


class ArrayValue(metaclass=_ArrayValueMeta):
    """Any purejit array value for `isinstance`: `purejit.Array`, a tracer, a typed key."""

    def __new__(cls, *args, **kwargs):
        raise TypeError(
            "ArrayValue (jax.Array / jax.numpy.ndarray in drop-in mode) is for isinstance "
            "checks and annotations; make arrays with purejit.numpy.asarray / array"
        )


ArrayLike = Union[Array, Tracer, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DType = np.dtype
DTypeLike = Union[str, type, np.dtype, Any]
Shape = Sequence[int]

__all__ = ["ArrayLike", "ArrayValue", "DType", "DTypeLike", "Shape"]
