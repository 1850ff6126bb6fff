"""Gamma-based samplers differentiate in their parameters as JAX's do (implicit
reparameterisation through `lax.random_gamma_grad`), and `lax.random_gamma_grad` itself
against `jax.lax.random_gamma_grad`."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import scipy.stats

import purejit
import purejit.numpy as pjnp
import purejit.random as pr
from purejit import lax as plax

jr = jax.random


def _close(got, want, rtol, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


_SAMPLERS = {
    "gamma": lambda r, n, k, a, b, conc: n.sum(r.gamma(k, a) * n.arange(1, 4)),
    # a scalar parameter broadcast over the shape
    "gamma_shape": lambda r, n, k, a, b, conc: n.sum(r.gamma(k, b, (2, 3))),
    "loggamma": lambda r, n, k, a, b, conc: n.sum(r.loggamma(k, a)),
    "beta": lambda r, n, k, a, b, conc: n.sum(r.beta(k, a, b, (3,))),
    "dirichlet": lambda r, n, k, a, b, conc: n.sum(r.dirichlet(k, conc, (2,))[:, :2]),
    "chisquare": lambda r, n, k, a, b, conc: n.sum(r.chisquare(k, a)),
    "f": lambda r, n, k, a, b, conc: n.sum(r.f(k, a, b, (3,))),
    "t": lambda r, n, k, a, b, conc: n.sum(r.t(k, a)),
    "generalized_normal": lambda r, n, k, a, b, conc: n.sum(r.generalized_normal(k, b, (3,))),
    "ball": lambda r, n, k, a, b, conc: n.sum(r.ball(k, 3, b, (2,))),
}


def _losses(r, n, k, p, names):
    """One scalar per gamma-based sampler named, each a function of the parameters `p`."""
    ks = r.split(k, len(names))
    return [_SAMPLERS[name](r, n, ks[i], *p) for i, name in enumerate(names)]


def _params(dtype):
    return (
        np.array([0.05, 1.0, 4.5], dtype),
        np.asarray(1.7, dtype),
        np.array([0.3, 2.0, 9.0], dtype),
    )


def _grads(key, p, names):
    """(purejit's, JAX's) gradient of a weighted sum of the samplers' losses, both jitted."""

    def total(r, n, k, p):
        return sum(w * v for w, v in zip(range(1, 11), _losses(r, n, k, p, names)))

    want = jax.jit(jax.grad(lambda p: total(jr, jax.numpy, jr.key(key), p)))(p)
    got = purejit.jit(purejit.grad(lambda p: total(pr, pjnp, pr.key(key), p)))(p)
    return got, want


def test_grad_of_every_gamma_sampler_matches_jax():
    got, want = _grads(5, _params(np.float32), tuple(_SAMPLERS))
    for g, w in zip(got, want):
        _close(g, w, rtol=1e-4)


def test_jvp_matches_jax():
    names = ("gamma", "loggamma", "dirichlet")
    p = _params(np.float32)
    t = tuple(np.linspace(0.5, 1.5, np.size(x)).astype(np.float32).reshape(np.shape(x)) for x in p)
    want = jax.jit(lambda p, t: jax.jvp(
        lambda p: _losses(jr, jax.numpy, jr.key(5), p, names), (p,), (t,)))(p, t)  # fmt: skip
    got = purejit.jit(lambda p, t: purejit.jvp(
        lambda p: _losses(pr, pjnp, pr.key(5), p, names), (p,), (t,)))(p, t)  # fmt: skip
    for g, w in zip(got[0], want[0]):
        _close(g, w, rtol=1e-6)
    for g, w in zip(got[1], want[1]):
        _close(g, w, rtol=1e-4, atol=1e-6)


def test_vmap_of_grad_and_grad_of_vmap_match_jax():
    def loss(r, n, k, a):
        k1, k2 = r.split(k)
        return n.sum(r.gamma(k1, a)) + n.sum(r.beta(k2, a, 2.0))

    a = np.array([0.2, 1.5, 30.0], np.float32)
    keys, jkeys = pr.split(pr.key(2), 4), jr.split(jr.key(2), 4)
    want = jax.jit(jax.vmap(jax.grad(lambda k, a: loss(jr, jax.numpy, k, a), 1), (0, None)))(
        jkeys, a
    )
    got = purejit.jit(purejit.vmap(purejit.grad(lambda k, a: loss(pr, pjnp, k, a), 1), (0, None)))(
        keys, a
    )
    _close(got, want, rtol=1e-4)
    # vmap inside grad: the batched sampler keeps its derivative rule
    want = jax.jit(jax.grad(lambda a: jax.numpy.sum(jax.vmap(
        lambda k: loss(jr, jax.numpy, k, a))(jkeys))))(a)  # fmt: skip
    got = purejit.grad(lambda a: pjnp.sum(purejit.vmap(lambda k: loss(pr, pjnp, k, a))(keys)))(a)
    _close(got, want, rtol=1e-4)


def test_grad_in_float64_matches_jax():
    with jax.enable_x64(True), purejit.enable_x64(True):
        names = ("gamma", "loggamma", "beta", "dirichlet")
        got, want = _grads(8, _params(np.float64), names)
        for g, w in zip(got, want):
            _close(g, w, rtol=1e-10)


def test_samples_are_unchanged_by_differentiation():
    # the derivative rule adds no arithmetic to the samples themselves
    a = np.array([0.3, 2.0, 11.0], np.float32)
    out, _ = purejit.jvp(lambda a: pr.gamma(pr.key(4), a), (a,), (np.ones_like(a),))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(jr.gamma(jr.key(4), a)))


def _grid(dtype):
    """a over [1e-3, 1e3] and x at quantiles of Gamma(a, 1) from 1e-6 to 1 - 1e-6, plus the
    edges: x == 0, x < 0, a <= 0, NaN, x == inf."""
    a = np.geomspace(1e-3, 1e3, 19)
    q = np.array([1e-6, 1e-3, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 1 - 1e-6])
    aa, qq = np.repeat(a, q.size), np.tile(q, a.size)
    xx = scipy.stats.gamma.ppf(qq, aa)
    edges_a = np.array([2.0, 2.0, 0.0, -1.0, np.nan, 2.0, 2.0, 1e-3])
    edges_x = np.array([0.0, -1.0, 1.0, 1.0, 1.0, np.nan, np.inf, 1e-30])
    return (
        np.concatenate([aa, edges_a]).astype(dtype),
        np.concatenate([xx, edges_x]).astype(dtype),
    )


def test_random_gamma_grad_matches_jax_float32_and_float16():
    a, x = _grid(np.float32)
    f = purejit.jit(plax.random_gamma_grad)
    want = jax.lax.random_gamma_grad(a, x)
    _close(f(a, x), want, rtol=1e-4, atol=1e-30)
    # float16 and bfloat16 are computed in float32 and rounded back
    for dt in (np.float16, jax.numpy.bfloat16):
        a16 = np.array([0.5, 2.0, 7.0, 30.0], dt)
        x16 = np.array([0.2, 1.5, 9.0, 28.0], dt)
        _close(f(a16, x16), jax.lax.random_gamma_grad(a16, x16), rtol=1e-2)
    # lower-rank operands align on the leading axes, as in JAX
    a2, x2 = np.array([0.5, 2.0], np.float32), np.array([[0.1], [3.0]], np.float32)
    _close(f(a2, x2), jax.lax.random_gamma_grad(a2, x2), rtol=1e-5)


def test_random_gamma_grad_matches_jax_float64():
    with jax.enable_x64(True), purejit.enable_x64(True):
        a, x = _grid(np.float64)
        want = jax.lax.random_gamma_grad(a, x)
        _close(purejit.jit(plax.random_gamma_grad)(a, x), want, rtol=1e-11, atol=1e-300)


def test_random_gamma_grad_bad_input():
    f32 = np.float32
    with pytest.raises(TypeError, match="random_gamma_grad: a must be a real float"):
        plax.random_gamma_grad(np.int32(2), np.int32(1))
    with pytest.raises(TypeError, match="random_gamma_grad: x must be a real float"):
        plax.random_gamma_grad(np.ones(2, np.float32), np.ones(2, np.complex64))
    with pytest.raises(TypeError, match="same dtype, got float32 and float16"):
        plax.random_gamma_grad(np.ones(2, f32), np.ones(2, np.float16))
    with pytest.raises(TypeError, match=r"cannot broadcast"):
        plax.random_gamma_grad(np.ones(3, f32), np.ones(4, f32))
    with pytest.raises(TypeError, match=r"along the leading axes"):
        plax.random_gamma_grad(np.ones(3, f32), np.ones((2, 3), f32))
