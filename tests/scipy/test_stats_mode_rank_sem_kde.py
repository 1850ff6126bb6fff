"""jax.scipy.stats' mode, rankdata, sem and gaussian_kde against JAX."""

from __future__ import annotations

import jax
import jax.scipy.stats as jstats
import numpy as np
import pytest

import purejit
import purejit.random as prandom
import purejit.scipy.stats as stats

RNG = np.random.default_rng(4)
X = RNG.integers(0, 4, (5, 6)).astype(np.float32)
X[1, 2] = X[3, 2] = np.nan  # NaNs count as one value, as JAX's unique groups them
XI = RNG.integers(0, 4, (7, 3)).astype(np.int32)
Y = RNG.integers(0, 5, (4, 7)).astype(np.float32)


def _same(got, ref, tol=0.0):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("args", [(X,), (XI,), (X, 1), (XI, None), (np.zeros(0, np.float32),)])
def test_mode_matches_jax(args):
    for keepdims in (False, True):
        ref = jstats.mode(*args, keepdims=keepdims)
        got = stats.mode(*args, keepdims=keepdims)
        for g, r in zip(got, ref):
            _same(g, r)
    got = purejit.jit(lambda x: stats.mode(x, *args[1:]))(args[0])
    for g, r in zip(got, jstats.mode(*args)):
        _same(g, r)
    with pytest.raises(NotImplementedError, match="omit"):
        stats.mode(X, nan_policy="omit")


def test_rankdata_matches_jax():
    yn = Y.copy()
    yn[2, 3] = np.nan
    keys = [(m, a) for m in ("average", "min", "max", "dense", "ordinal") for a in (None, 0, 1)]

    def ranks(mod, y, yn, xi):
        out = {f"{m} {a}": mod.rankdata(y, m, axis=a) for m, a in keys}
        out.update({f"nan {a}": mod.rankdata(yn, axis=a) for a in (None, 0, 1)})
        out["int"] = mod.rankdata(xi, "average", axis=1)
        return out

    ref = jax.jit(lambda *a: ranks(jstats, *a))(Y, yn, XI)
    got = purejit.jit(lambda *a: ranks(stats, *a))(Y, yn, XI)
    for k in ref:
        _same(got[k], ref[k])
    _same(stats.rankdata(Y, "dense", axis=0), ref["dense 0"])  # eagerly
    with pytest.raises(ValueError, match="unknown method 'top'"):
        stats.rankdata(Y, "top")


def test_sem_matches_jax():
    for kw in ({}, {"axis": 1}, {"axis": None}, {"ddof": 0, "keepdims": True}):
        _same(stats.sem(Y, **kw), jstats.sem(Y, **kw), 1e-6)
    _same(stats.sem(X, axis=1, nan_policy="omit"), jstats.sem(X, axis=1, nan_policy="omit"), 1e-6)
    _same(stats.sem(XI), jstats.sem(XI), 1e-6)
    g = purejit.grad(lambda y: stats.sem(y).sum())(Y)
    r = jax.grad(lambda y: jstats.sem(y).sum())(Y)
    _same(g, r, 1e-5)


D1 = RNG.normal(size=30).astype(np.float32)
D2 = RNG.normal(size=(2, 40)).astype(np.float32)
W = RNG.uniform(size=40).astype(np.float32)
P1 = np.linspace(-2, 2, 7).astype(np.float32)
P2 = RNG.normal(size=(2, 5)).astype(np.float32)


def test_gaussian_kde_1d_matches_jax():
    def run(mod, d1, w):
        out = {}
        for name, kw in (("scott", {}), ("silverman", {"bw_method": "silverman"}),
                         ("scalar", {"bw_method": 0.3}), ("weights", {"weights": w})):  # fmt: skip
            k = mod.gaussian_kde(d1, **kw)
            out[name] = [k.covariance, k.evaluate(P1), k.logpdf(P1), k.integrate_box_1d(-1.0, 0.5)]
        return out

    ref = jax.jit(lambda *a: run(jstats, *a))(D1, W[:30])
    got = purejit.jit(lambda *a: run(stats, *a))(D1, W[:30])
    for name in ref:
        for g, r in zip(got[name], ref[name]):
            _same(g, r, 1e-5)


def test_gaussian_kde_2d_integrals_resample_and_transformations():
    def run(mod, d2, w, p2, key):
        kde, small = mod.gaussian_kde(d2, weights=w), mod.gaussian_kde(d2[:, :10])
        mean, cov = np.zeros(2, np.float32), np.eye(2, dtype=np.float32)
        return [kde(p2), kde.logpdf(p2), kde.integrate_gaussian(mean, cov),
                kde.integrate_kde(small), kde.resample(key, (6,))]  # fmt: skip

    ref = jax.jit(lambda *a: run(jstats, *a))(D2, W, P2, jax.random.key(0))
    # the same draws as JAX too: purejit's choice and multivariate_normal are JAX's bits
    got = purejit.jit(lambda *a: run(stats, *a))(D2, W, P2, prandom.key(0))
    for g, r in zip(got, ref):
        _same(g, r, 1e-5)
    # a pytree: through jit as an argument, and differentiable in the data
    kde = stats.gaussian_kde(D2, weights=W)
    _same(purejit.jit(lambda k, p: k.evaluate(p))(kde, P2), ref[0], 1e-5)
    g = purejit.jit(purejit.grad(lambda d: stats.gaussian_kde(d).logpdf(P1).sum()))(D1)
    r = jax.jit(jax.grad(lambda d: jstats.gaussian_kde(d).logpdf(P1).sum()))(D1)
    _same(g, r, 1e-4)
    got = kde
    with pytest.raises(ValueError, match="points have dimension 3"):
        got.evaluate(np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="only handles 1D"):
        got.integrate_box_1d(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="integrate_box_1d"):
        got.integrate_box([0, 0], [1, 1])
    with pytest.raises(ValueError, match="multiple elements"):
        stats.gaussian_kde(np.ones(1, np.float32))


def test_vmap_of_mode_and_rankdata():
    x = np.round(RNG.normal(size=(3, 10))).astype(np.float32)
    _same(purejit.vmap(lambda v: stats.mode(v).mode)(x), jax.vmap(lambda v: jstats.mode(v).mode)(x))
    _same(purejit.vmap(stats.rankdata)(x), jax.vmap(jstats.rankdata)(x))
