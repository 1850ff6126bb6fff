"""jax.lax's convolution and reduce_window shape helpers (purejit/lax/conv_shapes.py)
against JAX's, and against the shapes the ops themselves give."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
from purejit import lax as plax

SPECS = [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NHWC", "OIHW", "NCHW")]


@pytest.mark.parametrize("dn", SPECS)
@pytest.mark.parametrize("padding", ["SAME", "VALID", [(1, 2), (0, 1)]])
def test_conv_shape_helpers_match_jax(dn, padding):
    lhs = {"NCHW": (2, 3, 11, 9), "NHWC": (2, 11, 9, 3)}[dn[0]]
    rhs = {"OIHW": (5, 3, 3, 2), "HWIO": (3, 2, 3, 5)}[dn[1]]
    strides = (2, 1)
    assert plax.conv_general_permutations(dn) == jax.lax.conv_general_permutations(dn)
    got = plax.conv_general_shape_tuple(lhs, rhs, strides, padding, dn)
    assert got == jax.lax.conv_general_shape_tuple(lhs, rhs, strides, padding, dn)
    out = purejit.eval_shape(lambda a, b: plax.conv_general_dilated(a, b, strides, padding, dimension_numbers=dn),
                             jax.ShapeDtypeStruct(lhs, np.float32), jax.ShapeDtypeStruct(rhs, np.float32))  # fmt: skip
    assert tuple(out.shape) == got
    lhs_t = {"NCHW": (2, 5, 6, 9), "NHWC": (2, 6, 9, 5)}[dn[0]]
    rhs_t = {"OIHW": (3, 5, 3, 2), "HWIO": (3, 2, 5, 3)}[dn[1]]
    assert plax.conv_transpose_shape_tuple(lhs_t, rhs_t, strides, padding, dn) == \
        jax.lax.conv_transpose_shape_tuple(lhs_t, rhs_t, strides, padding, dn)  # fmt: skip


def test_conv_and_reduce_window_shape_tuples_match_jax():
    args = ((4, 3, 10, 7), (6, 3, 3, 3), (1, 2), [(1, 1), (0, 2)])
    assert plax.conv_shape_tuple(*args) == jax.lax.conv_shape_tuple(*args)
    assert plax.conv_shape_tuple(*args, batch_group_count=2) == jax.lax.conv_shape_tuple(
        *args, batch_group_count=2
    )
    rw = ((5, 8), (2, 3), (1, 2), [(0, 1), (1, 1)])
    assert plax.reduce_window_shape_tuple(*rw) == jax.lax.reduce_window_shape_tuple(*rw)
    assert plax.reduce_window_shape_tuple(*rw, (2, 1), (1, 2)) == \
        jax.lax.reduce_window_shape_tuple(*rw, (2, 1), (1, 2))  # fmt: skip
    with pytest.raises(TypeError, match="exactly once"):
        plax.conv_general_permutations(("NNHW", "OIHW", "NCHW"))
    with pytest.raises(TypeError, match="Wrong number"):
        plax.conv_shape_tuple((1, 1, 4), (1, 1, 2), (1,), [(0, 0), (0, 0)])
