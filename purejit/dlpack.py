"""`purejit.dlpack`, as `jax.dlpack`: arrays shared with other libraries through DLPack.

`from_dlpack(x)` takes any object with `__dlpack__` (NumPy, PyTorch, CuPy, JAX arrays) and
gives a purejit array; a purejit array passes to other libraries through its own
`__dlpack__`. `is_supported_dtype(dtype)` says whether DLPack carries that dtype.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from purejit.numpy import from_dlpack

# what DLPack carries between array libraries (JAX's list: no float8, no int4, no keys)
_SUPPORTED = frozenset(
    np.dtype(t)
    for t in (
        np.bool_, np.int8, np.int16, np.int32, np.int64,
        np.uint8, np.uint16, np.uint32, np.uint64,
        np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
        np.complex64, np.complex128,
    )
)  # fmt: skip


def is_supported_dtype(dtype) -> bool:
    """Whether DLPack can carry arrays of `dtype`.

    Args:
      dtype: anything `numpy.dtype` accepts (None is refused: NumPy would read it as
        float64).

    Returns:
      True for bool, the signed and unsigned integers of 8-64 bits, float16, bfloat16,
      float32, float64, complex64 and complex128.
    """
    if dtype is None:
        raise TypeError("is_supported_dtype: expected a dtype or dtype name, got None")
    return np.dtype(dtype) in _SUPPORTED


__all__ = ["from_dlpack", "is_supported_dtype"]
