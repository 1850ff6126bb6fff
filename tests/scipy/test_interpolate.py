"""purejit.scipy.interpolate.RegularGridInterpolator against jax.scipy.interpolate's, both
under jit on CPU, bit for bit: linear and nearest, fill values, extrapolation, trailing value
axes, points as a tuple, and the interpolator as a pytree argument."""

from __future__ import annotations

import jax
import jax.scipy.interpolate as jinterpolate
import numpy as np
import pytest

import purejit
from purejit.scipy import interpolate

RNG = np.random.default_rng(0)
G0 = np.linspace(0, 1, 5).astype(np.float32)
G1 = np.sort(RNG.uniform(0, 2, 6)).astype(np.float32)
VALUES = RNG.normal(size=(5, 6, 2)).astype(np.float32)
# inside, outside and exactly on grid points
XI = np.concatenate(
    [
        np.stack([RNG.uniform(-0.2, 1.2, 8), RNG.uniform(-0.2, 2.2, 8)], -1),
        np.stack([G0[:2], G1[:2]], -1),
    ]
).astype(np.float32)


def _cases(mod):
    rgi = mod.RegularGridInterpolator

    def f(v, xi):
        return [
            rgi((G0, G1), v)(xi),
            rgi((G0, G1), v, method="nearest")(xi),
            rgi((G0, G1), v, fill_value=None)(xi),
            rgi((G0, G1), v[..., 0], fill_value=-1.0)(xi, method="nearest"),
            rgi((G0, G1), v)((xi[:, 0], xi[:, 1])),
            rgi((G0,), v[:, 0, 0])(xi[:, :1]),
            rgi((G0, G1), v)(xi.reshape(2, 5, 2)),
        ]

    return f


def test_regular_grid_interpolator_matches_jax_bitwise():
    got = purejit.jit(_cases(interpolate))(VALUES, XI)
    want = jax.jit(_cases(jinterpolate))(VALUES, XI)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_array_equal(g, w)


def test_interpolator_is_a_pytree():
    interp = interpolate.RegularGridInterpolator((G0, G1), VALUES, method="nearest")
    leaves, tree = purejit.tree_util.tree_flatten(interp)
    assert len(leaves) == 4  # two grids, the values, the fill value
    got = purejit.jit(lambda f, x: f(x))(interp, XI)
    want = jinterpolate.RegularGridInterpolator((G0, G1), VALUES, method="nearest")(XI)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    rebuilt = purejit.tree_util.tree_unflatten(tree, leaves)
    assert rebuilt.method == "nearest" and not rebuilt.bounds_error


def test_unsupported_arguments_raise_clearly():
    rgi = interpolate.RegularGridInterpolator
    with pytest.raises(NotImplementedError, match="bounds_error"):
        rgi((G0, G1), VALUES, bounds_error=True)
    with pytest.raises(ValueError, match="method 'cubic' is not defined"):
        rgi((G0, G1), VALUES, method="cubic")
    with pytest.raises(ValueError, match="3 point arrays, but values has 2"):
        rgi((G0, G1, G1), VALUES[..., 0])
    with pytest.raises(ValueError, match="dimension 3"):
        rgi((G0, G1), VALUES)(np.zeros((4, 3), np.float32))


def test_dropin_mode_gives_purejits_module():
    import purejit.compat

    with purejit.compat.dropin():
        import jax.scipy.interpolate as dropped

        assert dropped.__name__ == "jax.scipy.interpolate"
        assert dropped.RegularGridInterpolator is purejit.scipy.interpolate.RegularGridInterpolator
