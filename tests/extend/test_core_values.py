"""purejit.extend.core's questions about values and dtypes, as jax.extend.core answers them:
`valid_jaxtype` (can this be an array argument) and `primal_dtype_to_tangent_dtype`."""

from __future__ import annotations

import jax
import jax.extend.core as jcore
import ml_dtypes
import numpy as np
import pytest

import purejit
from purejit.extend import core


@pytest.mark.parametrize(
    "value", [1.0, 3, True, np.float32(2), np.arange(3), "a", None, [1, 2], (1,)], ids=repr
)
def test_valid_jaxtype_matches_jax(value):
    assert core.valid_jaxtype(value) == jcore.valid_jaxtype(value)


def test_a_typed_key_is_a_valid_jaxtype():
    assert core.valid_jaxtype(purejit.random.key(0)) and jcore.valid_jaxtype(jax.random.key(0))


@pytest.mark.parametrize(
    "dtype",
    [np.float32, np.float64, np.int32, np.uint8, bool, np.complex64, ml_dtypes.bfloat16, "float16"],
    ids=str,
)
def test_tangent_dtypes_match_jax(dtype):
    assert core.primal_dtype_to_tangent_dtype(dtype) == jcore.primal_dtype_to_tangent_dtype(dtype)


def test_the_tangent_dtype_of_a_key_is_float0():
    ours = core.primal_dtype_to_tangent_dtype(purejit.random.key(0).dtype)
    assert ours == jcore.primal_dtype_to_tangent_dtype(jax.random.key(0).dtype)
