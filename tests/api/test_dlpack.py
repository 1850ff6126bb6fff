"""purejit.dlpack (`jax.dlpack` in drop-in mode): the dtypes DLPack carries, as JAX's list,
and arrays brought in from NumPy and JAX through `__dlpack__`."""

from __future__ import annotations

import jax.dlpack
import jax.numpy as jnp_ref
import ml_dtypes
import numpy as np
import pytest

import purejit
from purejit import dlpack

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64,
          np.complex128, ml_dtypes.float8_e4m3fn, ml_dtypes.int4, np.object_, "float32"]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_supported_dtypes_are_jaxs(dtype):
    assert dlpack.is_supported_dtype(dtype) == jax.dlpack.is_supported_dtype(dtype)


def test_none_is_refused():
    with pytest.raises(TypeError, match="got None"):
        dlpack.is_supported_dtype(None)


def test_from_dlpack_of_numpy_and_jax_arrays():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for source in (x, jnp_ref.asarray(x)):
        y = dlpack.from_dlpack(source)
        assert isinstance(y, purejit.Array)
        np.testing.assert_array_equal(np.asarray(y), x)
