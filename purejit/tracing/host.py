"""Concrete values as tracing sees them: NumPy arrays, Python scalars and device arrays.

Tracing turns a concrete value it meets into a constant of the program. It needs the value's
host data and its weak-type flag, and nothing else, so it never asks the device runtime:
a device array (`purejit.Array`) is any subclass of `ConcreteArray`, and a foreign array
(a `jax.Array`) is read through the NumPy array protocol.
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit.ir import dtypes as irdt


class ConcreteArray:
    """A value whose data is known: subclasses provide `aval` and `host` (a NumPy array).

    `purejit.Array` is one; tracing lifts any of them into a constant."""

    __slots__ = ()

    aval: object

    @property
    def host(self) -> np.ndarray:
        raise NotImplementedError


def host_value(x) -> tuple[np.ndarray, bool]:
    """A NumPy value with purejit's canonical dtype, and its weak-type flag.

    Args:
        x: a `ConcreteArray`, NumPy array or scalar, Python scalar, or an object with the
            NumPy array protocol and a `dtype` (a `jax.Array`).
    Returns:
        `(array, weak)`: the data in purejit's canonical dtype (64-bit types narrowed unless
        x64 is on) and whether it is weakly typed (Python scalars are).
    """
    if isinstance(x, ConcreteArray):
        return x.host, x.aval.weak_type
    if isinstance(x, (bool, np.bool_)) and not isinstance(x, np.ndarray):
        return np.array(bool(x)), False
    if isinstance(x, (int, float, complex)) and not isinstance(x, np.generic):
        dt = pdt.python_scalar_dtype(x)
        if isinstance(x, int):
            info = np.iinfo(dt)
            if not info.min <= x <= info.max:
                raise OverflowError(f"Python int {x} too large to convert to {dt.name}")
        return np.array(x, dtype=dt), True
    if isinstance(x, (np.ndarray, np.generic)):
        arr = np.asarray(x)
        if arr.dtype not in irdt.ALL_DTYPES_SET:
            raise TypeError(f"arrays of dtype {arr.dtype} are not supported by purejit")
        dt = pdt.canonicalize(arr.dtype)
        irdt.canonical(dt)
        return (arr.astype(dt) if dt != arr.dtype else arr), False
    if hasattr(x, "__array__") and hasattr(x, "dtype") and hasattr(x, "shape"):
        arr, _ = host_value(np.asarray(x))
        return arr, bool(getattr(x, "weak_type", False))
    raise TypeError(
        f"value of type {type(x).__name__} is not a valid purejit array "
        "(expected a purejit.Array, NumPy array, jax.Array or Python scalar)"
    )
