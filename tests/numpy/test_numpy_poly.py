"""vander, polyfit, roots and vectorize against jax.numpy."""

import jax.numpy as jjnp
import numpy as np
from jnp_compare import assert_same, check, check_cases

import purejit
import purejit.numpy as jnp

RNG = np.random.default_rng(2)
X = np.linspace(0, 1, 20).astype(np.float32)
Y = (3 * X**2 - X + 0.5 + 0.01 * RNG.standard_normal(20)).astype(np.float32)


def test_vander_polyfit():
    cases = {
        "vander": lambda m, x, y: (m.vander(x[:5]), m.vander(x[:4], 6, increasing=True),
                                   m.vander(m.arange(3), 4)),
        "polyfit": lambda m, x, y: m.polyfit(x, y, 2),
        "polyfit 2-D weighted": lambda m, x, y: m.polyfit(x, m.stack([y, 2 * y], 1), 3, w=x + 1),
        "polyfit full": lambda m, x, y: m.polyfit(x, y, 1, full=True)[:2],
    }  # fmt: skip
    check_cases(cases, X, Y, eager=["polyfit"], rtol=2e-4, atol=2e-5)


def test_roots():
    for p in ([0, 1, -6, 11, -6.0], [1, 0, 1.0], [2.0], [0, 0, 1, -1.0]):
        p = np.asarray(p, np.float32)
        want, got = jjnp.roots(p), jnp.roots(p)
        assert got.dtype == want.dtype and got.shape == want.shape, p
        np.testing.assert_allclose(np.sort_complex(np.asarray(got)),
                                   np.sort_complex(np.asarray(want)), rtol=1e-4, atol=1e-4)  # fmt: skip
    q = np.array([1, -3, 2.0], np.float32)
    got = purejit.jit(lambda v: jnp.roots(v, strip_zeros=False))(q)
    np.testing.assert_allclose(np.sort(np.asarray(got).real), [1, 2], rtol=1e-5)


def test_vectorize():
    a, b = np.arange(3.0, dtype=np.float32), np.arange(6.0, dtype=np.float32).reshape(2, 3)
    check(lambda m, x, y: m.vectorize(lambda s, t: s * t + 1)(x, y), a, b)
    check(lambda m, x, y: m.vectorize(lambda u, v: m.dot(u, v), signature="(n),(n)->()")(y, x),
          a, b)  # fmt: skip
    check(lambda m, x, y: m.vectorize(lambda u: (u.sum(), u * 2), signature="(n)->(),(n)")(y),
          a, b)  # fmt: skip
    power = jnp.vectorize(lambda s, k: s**k, excluded={1})
    assert_same(jjnp.vectorize(lambda s, k: s**k, excluded={1})(a, 2), power(a, 2))
