"""polar, qr_multiply, expm_frechet and eigh_tridiagonal of purejit.scipy.linalg against
jax.scipy.linalg and scipy.linalg."""

import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.linalg as sl

import purejit
import purejit.scipy.linalg as psl

RS = np.random.RandomState(0)
TALL = RS.randn(5, 3).astype(np.float32)
SQUARE = RS.randn(3, 3).astype(np.float32)


@pytest.mark.parametrize("method", ["qdwh", "svd"])
@pytest.mark.parametrize("side, a", [("right", TALL), ("left", TALL.T), ("right", SQUARE)])
def test_polar(side, a, method):
    u, p = purejit.jit(lambda x: psl.polar(x, side=side, method=method))(a)
    ju, jp = jsl.polar(a, side=side, method=method)
    su, sp = sl.polar(a.astype(np.float64), side=side)
    for got, want, ref in [(u, ju, su), (p, jp, sp)]:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-6)
        np.testing.assert_allclose(np.asarray(got), ref, atol=2e-6)


def test_polar_errors_and_iterations():
    with pytest.raises(NotImplementedError, match="qdwh"):
        psl.polar(TALL.T, side="right")
    with pytest.raises(ValueError, match="Unknown polar"):
        psl.polar(SQUARE, method="eig")
    # one step is far from converged; the default converges
    u1, _ = psl.polar(SQUARE * np.float32(1e3), max_iterations=1)
    u, _ = psl.polar(SQUARE * np.float32(1e3))
    ortho = lambda q: np.abs(np.asarray(q).T @ np.asarray(q) - np.eye(3)).max()  # noqa: E731
    assert ortho(u) < 1e-5 < ortho(u1)


@pytest.mark.parametrize("conjugate", [False, True])
def test_qr_multiply(conjugate):
    a = (RS.randn(5, 3) + 1j * RS.randn(5, 3)).astype(np.complex64)
    for mode, c in [("left", RS.randn(3, 4)), ("right", RS.randn(2, 5)), ("left", RS.randn(3)),
                    ("right", RS.randn(5))]:  # fmt: skip
        c = c.astype(np.float32)
        got = purejit.jit(lambda a, c: psl.qr_multiply(a, c, mode=mode, conjugate=conjugate))(a, c)
        want = jsl.qr_multiply(a, c, mode=mode, conjugate=conjugate)
        for g, w in zip(got, want):  # the same geqrf and ormqr kernels as JAX's
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    tall = RS.randn(2, 5, 3).astype(np.float32)  # batched, c broadcast, zero rows added
    got = psl.qr_multiply(tall, np.ones((3, 2), np.float32), mode="left", conjugate=conjugate)
    want = jsl.qr_multiply(tall, np.ones((3, 2), np.float32), mode="left", conjugate=conjugate)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    with pytest.raises(ValueError, match="not compatible"):
        psl.qr_multiply(a, np.ones((4, 2), np.float32), mode="left")
    with pytest.raises(NotImplementedError, match="geqp3"):
        psl.qr_multiply(a, np.ones((2, 5), np.float32), pivoting=True)


def test_expm_frechet():
    a = RS.randn(2, 4, 4).astype(np.float32)
    e = RS.randn(2, 4, 4).astype(np.float32)
    expm_a, frechet = purejit.jit(psl.expm_frechet)(a, e)
    for i in range(2):
        want_expm, want = sl.expm_frechet(a[i].astype(np.float64), e[i].astype(np.float64))
        np.testing.assert_allclose(np.asarray(expm_a[i]), want_expm, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(frechet[i]), want, rtol=1e-5, atol=1e-5)
    only = psl.expm_frechet(a[0], e[0], compute_expm=False)
    np.testing.assert_allclose(np.asarray(only), np.asarray(frechet[0]), rtol=1e-6)
    with pytest.raises(ValueError, match="same shape"):
        psl.expm_frechet(a[0], e[0, :3, :3])


def test_eigh_tridiagonal():
    d = RS.randn(9).astype(np.float32)
    e = RS.randn(8).astype(np.float32)
    got = purejit.jit(lambda d, e: psl.eigh_tridiagonal(d, e, eigvals_only=True))(d, e)
    np.testing.assert_allclose(np.asarray(got), sl.eigh_tridiagonal(d, e, eigvals_only=True),
                               atol=2e-6)  # fmt: skip
    want = jsl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(2, 5))
    got = psl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(2, 5))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-6)
    w, v = psl.eigh_tridiagonal(d, e, select="i", select_range=(1, 4))
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    v = np.asarray(v)
    assert v.shape == (9, 4)
    np.testing.assert_allclose(t @ v, v * np.asarray(w), atol=1e-5)
    with pytest.raises(NotImplementedError, match="select='v'"):
        psl.eigh_tridiagonal(d, e, select="v")
    with pytest.raises(TypeError, match="same dtype"):
        psl.eigh_tridiagonal(d, e.astype(np.float16))


def test_eigh_tridiagonal_float64_tol():
    purejit.config.update("enable_x64", True)
    try:
        d, e = RS.randn(12), RS.randn(11)
        got = psl.eigh_tridiagonal(d, e, eigvals_only=True)
        want = sl.eigh_tridiagonal(d, e, eigvals_only=True)
        np.testing.assert_allclose(np.asarray(got), want, atol=1e-13)
        loose = psl.eigh_tridiagonal(d, e, eigvals_only=True, tol=1e-3)
        assert 1e-12 < np.abs(np.asarray(loose) - want).max() < 2e-3
    finally:
        purejit.config.update("enable_x64", False)
