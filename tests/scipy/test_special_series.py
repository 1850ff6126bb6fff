"""hyp1f1, hyp2f1, bernoulli, bessel_jn and sph_harm_y of purejit.scipy.special against
jax.scipy and scipy (JAX's own tests use rtol 1e-3 against scipy, 1e-5 for bernoulli)."""

import jax
import jax.scipy.special as jsp
import numpy as np
import pytest
import scipy.special as ss

import purejit
import purejit.scipy.special as psp

RS = np.random.RandomState(0)
# JAX's test domain for hyp1f1: uniform in [0.5, 30]
A1, B1, X1 = (RS.uniform(0.5, 30, 24).astype(np.float32) for _ in range(3))
# hyp2f1: the series, terminating (a = -2, -3), Euler's transformation (c - a - b <= -1), the
# digamma form near 1 (c - a - b an integer), a == c, b == c, x == 0, x == 1 and a pole of c
A2 = np.array([0.5, 1.5, -2, -3, 2, 1, 0.3, 2.5, 1, 0.5, 3, 0, 1.5, 0.7, 1.2, 2], np.float32)
B2 = np.array([1.5, 0.7, 3, 1.5, -1, 1, 0.4, 1.5, 2, 1.0, 2, 2, 2.5, 0.4, 0.9, 1], np.float32)
C2 = np.array([2.5, 3.1, 1.5, 2, 3, 2, 2.7, 4, 3, 2.0, 7, 3, 2.5, 0.7, 3.4, -2], np.float32)
X2 = np.array([0.3, 0.95, 0.5, 0.99, 0.7, 0.92, 1, -0.5, 0.97, 0.95, 0.93, 0.5, 0.2, 0.6, 0, 0.5],
              np.float32)  # fmt: skip


def _rel(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(np.isfinite(got), np.isfinite(want))
    ok = np.isfinite(want)
    return np.max(np.abs(got[ok] - want[ok]) / np.maximum(np.abs(want[ok]), 1e-30), initial=0)


def test_hypergeometric_against_jax_and_scipy():
    g1 = purejit.jit(psp.hyp1f1)(A1, B1, X1)
    assert _rel(g1, jax.jit(jsp.hyp1f1)(A1, B1, X1)) < 2e-5
    assert _rel(g1, ss.hyp1f1(A1, B1, X1).astype(np.float32)) < 1e-4
    edge = purejit.jit(psp.hyp1f1)(np.float32([0, 2, 2]), np.float32([0, 2, 0]), np.float32(3))
    np.testing.assert_allclose(np.asarray(edge), [1, np.exp(3), np.inf], rtol=1e-6)
    g2 = purejit.jit(psp.hyp2f1)(A2, B2, C2, X2)
    assert _rel(g2, jax.jit(jsp.hyp2f1)(A2, B2, C2, X2)) < 2e-5
    want = ss.hyp2f1(*(v.astype(np.float64) for v in (A2, B2, C2, X2)))[:-1]
    assert _rel(np.asarray(g2)[:-1], want.astype(np.float32)) < 1e-4  # scipy: finite at c = -2


@pytest.mark.parametrize(
    "name, point", [("hyp1f1", (1.5, 2.5, 3.0)), ("hyp2f1", (0.5, 1.0, 2.5, 0.3))]
)
def test_grads_match_jax(name, point):
    point = [np.float32(v) for v in point]
    argnums = tuple(range(len(point)))
    got = purejit.grad(getattr(psp, name), argnums=argnums)(*point)
    want = jax.grad(getattr(jsp, name), argnums=argnums)(*point)
    np.testing.assert_allclose(np.float32(got), np.float32(want), rtol=1e-4)


def test_hypergeometric_float64(x64):
    a, b, x = (v.astype(np.float64) for v in (A1, B1, X1))
    np.testing.assert_allclose(np.asarray(psp.hyp1f1(a, b, x)), ss.hyp1f1(a, b, x), rtol=1e-11)
    a, b, c, x = (v[:-1].astype(np.float64) for v in (A2, B2, C2, X2))
    # 250 terms of the series at x = 0.95 (jax.scipy's cap) leave 5e-9
    np.testing.assert_allclose(np.asarray(psp.hyp2f1(a, b, c, x)), ss.hyp2f1(a, b, c, x),
                               rtol=1e-8)  # fmt: skip


@pytest.fixture
def x64():
    purejit.config.update("enable_x64", True)
    try:
        with jax.enable_x64(True):
            yield
    finally:
        purejit.config.update("enable_x64", False)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10, 50])
def test_bernoulli(n):
    got = psp.bernoulli(n)
    want = ss.bernoulli(n).astype(np.float32)
    assert np.asarray(got).dtype == np.float32 and got.shape == (n + 1,)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=0)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jsp.bernoulli(n)), rtol=1e-5)
    with pytest.raises(ValueError, match="non-negative"):
        psp.bernoulli(-1)


def test_bessel_jn():
    # f32 overflows the recurrence below z ~ 1 (NaN), in JAX as here
    z = np.concatenate([[0.1, 0.5], np.linspace(1, 20, 12)]).astype(np.float32)
    got = np.asarray(purejit.jit(lambda z: psp.bessel_jn(z, v=5))(z))
    want = np.asarray(jsp.bessel_jn(z, v=5))
    assert got.shape == want.shape == (6, z.size)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], atol=1e-6)
    ref = np.stack([ss.jv(k, z) for k in range(6)])
    np.testing.assert_allclose(got[ok], ref[ok], atol=1e-6)
    z2 = np.linspace(2, 9, 6, dtype=np.float32).reshape(2, 3)
    assert psp.bessel_jn(z2, v=2, n_iter=30).shape == (3, 2, 3)


def test_sph_harm_y():
    n = np.array([0, 1, 2, 3, 4, 5, 3, 2, 7])
    m = np.array([0, 1, -2, 2, -4, 0, -1, 1, 3])
    theta = np.linspace(0.1, 3, 9).astype(np.float32)
    phi = np.linspace(0, 6, 9).astype(np.float32)
    got = purejit.jit(lambda *a: psp.sph_harm_y(*a, n_max=5))(n, m, theta, phi)
    want = jsp.sph_harm_y(n, m, theta, phi, n_max=5)  # n = 7 clipped to 5 in both
    assert np.asarray(got).dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-6)
    full = psp.sph_harm_y(n, m, theta, phi)  # n_max from the concrete n
    np.testing.assert_allclose(np.asarray(full), ss.sph_harm_y(n, m, theta, phi), atol=1e-6)
    with pytest.raises(NotImplementedError, match="diff_n"):
        psp.sph_harm_y(n, m, theta, phi, diff_n=1)
