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


@pytest.mark.parametrize("dn", [None, ("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW")])
def test_patches_and_local_convolution_match_jax(dn):
    rng = np.random.default_rng(0)
    nhwc = dn is not None and dn[0] == "NHWC"
    x = rng.standard_normal((2, 7, 6, 3) if nhwc else (2, 3, 7, 6)).astype(np.float32)
    fs, strides, padding = (3, 2), (2, 1), [(1, 1), (0, 1)]

    def patches(lax):
        return lambda x: lax.conv_general_dilated_patches(x, fs, strides, padding,
                                                          dimension_numbers=dn)  # fmt: skip

    got = purejit.jit(patches(plax))(x)
    want = jax.jit(patches(jax.lax))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    # one kernel per output position: [out_h, out_w, C * 6, O] in the rhs spec's layout
    oh, ow = np.asarray(want).shape[1:3] if nhwc else np.asarray(want).shape[2:4]
    rhs_shape = (oh, ow, 3 * 6, 4) if nhwc else (4, 3 * 6, oh, ow)
    k = rng.standard_normal(rhs_shape).astype(np.float32)

    def local(lax):
        return lambda x, k: lax.conv_general_dilated_local(x, k, strides, padding, fs,
                                                           dimension_numbers=dn)  # fmt: skip

    got = purejit.jit(local(plax))(x, k)
    want = jax.jit(local(jax.lax))(x, k)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    g = purejit.grad(lambda x, k: local(plax)(x, k).sum(), (0, 1))(x, k)
    w = jax.grad(lambda x, k: local(jax.lax)(x, k).sum(), (0, 1))(x, k)
    for a, b in zip(g, w):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)
