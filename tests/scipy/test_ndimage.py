"""purejit.scipy.ndimage.map_coordinates against jax.scipy.ndimage's, both under jit on
CPU, bit for bit: orders 0 and 1, every boundary mode, integer input, cval, and gradients."""

from __future__ import annotations

import jax
import jax.scipy.ndimage as jndimage
import numpy as np
import pytest

import purejit
from purejit.scipy import ndimage

RNG = np.random.default_rng(0)
IMG = RNG.normal(size=(6, 7)).astype(np.float32)
# points inside, on and beyond every edge, and exact half-integers (rounding ties)
COORDS = [
    np.r_[RNG.uniform(-3, 9, 9), -1.5, 0.5, 2.5, 5.0].astype(np.float32),
    np.r_[RNG.uniform(-3, 9, 9), 6.5, -0.5, 3.5, 6.0].astype(np.float32),
]
MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _all_modes(mod):
    def f(img, c0, c1):
        return [
            mod.map_coordinates(img, [c0, c1], order, mode, 1.5)
            for mode in MODES
            for order in (0, 1)
        ]

    return f


def test_map_coordinates_matches_jax_bitwise():
    got = purejit.jit(_all_modes(ndimage))(IMG, *COORDS)
    want = jax.jit(_all_modes(jndimage))(IMG, *COORDS)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype == np.float32 and g.shape == w.shape == (13,)
        np.testing.assert_array_equal(g, w)


def test_integer_input_and_3d_coordinates_match_jax_bitwise():
    img = (IMG * 10).astype(np.int32)
    c = [x.reshape(13, 1) * np.ones((1, 2), np.float32) for x in COORDS]

    def f(mod):
        return lambda a, c0, c1: (
            mod.map_coordinates(a, [c0, c1], 1),
            mod.map_coordinates(a, (c0, c1), 0, "nearest"),
        )

    got, want = purejit.jit(f(ndimage))(img, *c), jax.jit(f(jndimage))(img, *c)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype == np.int32 and g.shape == w.shape == (13, 2)
        np.testing.assert_array_equal(g, w)


def _loss(mod):
    return lambda img, c0, c1: (mod.map_coordinates(img, [c0, c1], 1, "reflect") ** 2).sum()


def test_gradient_matches_jax_bitwise():
    got = purejit.jit(purejit.grad(_loss(ndimage), argnums=(0, 1, 2)))(IMG, *COORDS)
    want = jax.jit(jax.grad(_loss(jndimage), argnums=(0, 1, 2)))(IMG, *COORDS)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_unsupported_arguments_raise_clearly():
    with pytest.raises(NotImplementedError, match="order=3"):
        ndimage.map_coordinates(IMG, COORDS, 3)
    with pytest.raises(NotImplementedError, match="'grid-wrap'"):
        ndimage.map_coordinates(IMG, COORDS, 1, mode="grid-wrap")
    with pytest.raises(ValueError, match="length input.ndim"):
        ndimage.map_coordinates(IMG, COORDS[:1], 1)


def test_dropin_mode_gives_purejits_module():
    import purejit.compat

    with purejit.compat.dropin():
        import jax.scipy.ndimage as dropped

        assert dropped.__name__ == "jax.scipy.ndimage"
        assert dropped.map_coordinates is purejit.scipy.ndimage.map_coordinates
