"""The JVP rules of elementwise ops compute JAX's expressions in JAX's order, so that a
gradient rounds as JAX's does: `grad` of each op, under `jit`, is bit-identical to JAX's on
float32 (and float16, where the rounding of each step shows most).

The forms matter beyond bits: `1 - y*y` for tanh cancels where |y| is near 1, and a float16
`acos(tanh(x))` gradient on a GPU was 10x less accurate than JAX's (fuzzer, seed 4246).
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp

CASES = {
    "tanh": (jnp.tanh, jjnp.tanh, (-3.0, 3.0)),
    "cbrt": (jnp.cbrt, jjnp.cbrt, (0.1, 9.0)),
    "acosh": (jnp.arccosh, jjnp.arccosh, (1.05, 6.0)),
    "erf": (purejit.scipy.special.erf, jax.scipy.special.erf, (-2.5, 2.5)),
    "erf_inv": (purejit.scipy.special.erfinv, jax.scipy.special.erfinv, (-0.95, 0.95)),
    "divide_by": (lambda x: 1.7 / x, lambda x: 1.7 / x, (0.3, 5.0)),
    "acos_tanh": (
        lambda x: jnp.arccos(0.9 * jnp.tanh(x)),
        lambda x: jjnp.arccos(0.9 * jjnp.tanh(x)),
        (-4.0, 4.0),
    ),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_rounds_as_jax(name, dtype):
    ours, theirs, (lo, hi) = CASES[name]
    x = np.linspace(lo, hi, 4099).astype(dtype)
    g = purejit.jit(purejit.vmap(purejit.grad(ours)))(x)
    want = jax.jit(jax.vmap(jax.grad(theirs)))(x)
    assert g.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(g), np.asarray(want))
