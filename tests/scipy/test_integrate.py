"""purejit.scipy.integrate.trapezoid against jax.scipy.integrate.trapezoid: spacing by dx,
by sample points, along an inner axis."""

from __future__ import annotations

import jax.scipy.integrate as jintegrate
import numpy as np
import pytest

import purejit
from purejit.scipy import integrate

Y = np.cos(np.linspace(0.0, 3.0, 24, dtype=np.float32)).reshape(4, 6)
X = np.cumsum(np.linspace(0.5, 1.5, 6, dtype=np.float32))


@pytest.mark.parametrize(
    "kwargs", [{}, {"dx": 0.25}, {"x": X}, {"axis": 0, "dx": 2.0}], ids=["unit", "dx", "x", "axis0"]
)
def test_trapezoid_matches_jax(kwargs):
    got = purejit.jit(lambda y: integrate.trapezoid(y, **kwargs))(Y)
    want = jintegrate.trapezoid(Y, **kwargs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
