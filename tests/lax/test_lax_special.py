"""jax.lax's special functions (purejit/lax/special_functions.py, incomplete.py) against JAX:
values under jit (the CHLO ops bit for bit), derivatives under grad, vmap, and the
derivatives JAX lacks (betainc in a and b, igamma_grad_a in a) against finite differences."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
from purejit import lax as plax

RNG = np.random.default_rng(7)


def close(got, want, rtol=2e-5, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def uniform(lo, hi, n=64):
    return RNG.uniform(lo, hi, n).astype(np.float32)


def test_chlo_ops_equal_jax_bit_for_bit():
    x, p = uniform(-6, 6), uniform(0.05, 20)

    def make(lax):
        def f(x, p):
            return [
                lax.erfc(x),
                lax.digamma(p),
                lax.digamma(x),
                lax.bessel_i1e(x * 5),
                lax.polygamma(np.float32(3) + 0 * p, p),
                lax.zeta(p + 1.1, p),
            ]

        return f

    got, want = purejit.jit(make(plax))(x, p), jax.jit(make(jax.lax))(x, p)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_bessel_i0e_and_incomplete_functions_match_jax():
    a, b, x, u = uniform(0.1, 8), uniform(0.1, 8), uniform(0, 14), uniform(0, 1)
    a[:4], x[:4] = [0, 1, 2, -1], [0, 0, np.inf, 1]

    def make(lax):
        def f(a, b, x, u):
            return [
                lax.bessel_i0e(x - 7),
                lax.igamma(a, x),
                lax.igammac(a, x),
                lax.igamma_grad_a(a, x),
                lax.betainc(a, b, u),
            ]

        return f

    got, want = purejit.jit(make(plax))(a, b, x, u), jax.jit(make(jax.lax))(a, b, x, u)
    for g, w in zip(got, want):
        close(g, w)


def _kind(v):
    return f"{np.asarray(v).dtype}{' weak' if getattr(v, 'weak_type', False) else ''}"


WEAK_CASES = {
    "igamma": lambda lax, x: lax.igamma(2.0, x),
    "igammac": lambda lax, x: lax.igammac(x, 2.0),
    "igamma_grad_a": lambda lax, x: lax.igamma_grad_a(2.0, x),
    "betainc": lambda lax, x: lax.betainc(2.0, 3.0, x),
    "bessel_i0e": lambda lax, x: lax.bessel_i0e(x),
    "bessel_i1e": lambda lax, x: lax.bessel_i1e(x),
}


@pytest.mark.parametrize("name", list(WEAK_CASES))
def test_weak_types_follow_jax(name):
    # weak only when every operand is: a Python float, a weak tracer, or next to float32
    f = WEAK_CASES[name]
    for x in (0.4, np.float32(0.4)):
        for lax, jit in ((jax.lax, jax.jit), (plax, purejit.jit)):
            kinds = [
                _kind(f(lax, x)),
                _kind(jit(lambda x: f(lax, x))(x)),
                _kind(jit(lambda: f(lax, x))()),
                _kind(jit(lambda y: f(lax, x) + y)(np.ones(2, jax.numpy.bfloat16))),
            ]
            if lax is jax.lax:
                want = kinds
        assert kinds == want, f"{name}({x!r}): {kinds}, JAX {want}"


def test_float16_and_bfloat16_are_computed_in_float32_as_jax():
    a, b, x, u = uniform(0.1, 8), uniform(0.1, 8), uniform(0, 14), uniform(0, 1)

    def make(lax):
        def f(a, b, x, u):
            return [lax.igamma(a, x), lax.igammac(a, x), lax.igamma_grad_a(a, x),
                    lax.betainc(a, b, u), lax.bessel_i0e(x - 7)]  # fmt: skip

        return f

    for dt in (np.float16, jax.numpy.bfloat16):
        args = [v.astype(dt) for v in (a, b, x, u)]
        got, want = purejit.jit(make(plax))(*args), jax.jit(make(jax.lax))(*args)
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.dtype(dt)
            np.testing.assert_array_equal(np.asarray(g, np.float32), np.asarray(w, np.float32))


def test_bessel_i0e_derivative_is_jax_rule():
    # i1e(x) - sign(x) i0e(x); through the Chebyshev expansions it was NaN at 0
    x = np.array([0.0, -0.0, 1e-3, -0.5, 7.9, 8.1, 30.0], np.float32)
    want = jax.jit(jax.vmap(jax.grad(jax.lax.bessel_i0e)))(x)
    got = purejit.jit(purejit.vmap(purejit.grad(plax.bessel_i0e)))(x)
    close(got, want, rtol=1e-6, atol=0)
    assert float(purejit.grad(plax.bessel_i0e)(0.0)) == 0.0


def test_derivatives_match_jax():
    a, x = uniform(0.3, 6, 8), uniform(0.1, 10, 8)
    u, b = uniform(0.05, 0.95, 8), uniform(0.5, 5, 8)

    def loss(lax):
        def f(a, x):
            return (lax.igamma(a, x) * 2 + lax.igammac(a, x * 0.5) + lax.digamma(a)
                    + lax.erfc(x - 3) + lax.bessel_i1e(x - 5) + lax.bessel_i0e(x - 4)
                    + lax.polygamma(np.ones(8, np.float32), a)).sum()  # fmt: skip

        return f

    close(purejit.jit(purejit.grad(loss(plax), (0, 1)))(a, x),
          jax.grad(loss(jax.lax), (0, 1))(a, x), rtol=1e-4)  # fmt: skip
    close(purejit.grad(lambda u: plax.betainc(a, b, u).sum())(u),
          jax.grad(lambda u: jax.lax.betainc(a, b, u).sum())(u), rtol=1e-4)  # fmt: skip
    # second order: igamma's x-derivative is differentiable again
    h = purejit.hessian(lambda x: plax.igamma(np.float32(2.5), x))(np.float32(1.5))
    close(h, jax.hessian(lambda x: jax.lax.igamma(np.float32(2.5), x))(np.float32(1.5)))
    close(purejit.vmap(lambda a: plax.igamma(a, np.float32(2.0)))(a),
          jax.vmap(lambda a: jax.lax.igamma(a, np.float32(2.0)))(a))  # fmt: skip


def test_derivatives_jax_lacks_agree_with_finite_differences():
    a, b, u = np.float32(2.5), np.float32(1.7), np.float32(0.4)
    x = np.float32(3.0)
    h = 1e-3

    def fd(f, v):
        return (float(f(v + h)) - float(f(v - h))) / (2 * h)

    da = purejit.grad(lambda a: plax.betainc(a, b, u))(a)
    db = purejit.grad(lambda b: plax.betainc(a, b, u))(b)
    assert abs(float(da) - fd(lambda v: plax.betainc(np.float32(v), b, u), a)) < 2e-3
    assert abs(float(db) - fd(lambda v: plax.betainc(a, np.float32(v), u), b)) < 2e-3
    d2 = purejit.grad(lambda a: plax.igamma_grad_a(a, x))(a)
    assert abs(float(d2) - fd(lambda v: plax.igamma_grad_a(np.float32(v), x), a)) < 2e-3
    # zeta in q (JAX's zeta has no derivative at all); in s it raises, as JAX's
    dq = purejit.grad(lambda q: plax.zeta(np.float32(3.0), q))(np.float32(1.5))
    assert abs(float(dq) - fd(lambda v: plax.zeta(np.float32(3.0), np.float32(v)), 1.5)) < 2e-3
    with pytest.raises(purejit.errors.PurejitTypeError, match="with respect to s"):
        purejit.grad(lambda s: plax.zeta(s, np.float32(2.0)))(np.float32(3.0))
    with pytest.raises(purejit.errors.PurejitTypeError, match="order n"):
        purejit.grad(lambda m: plax.polygamma(m, np.float32(2.0)))(np.float32(1.0))


@pytest.mark.parametrize(
    "call",
    [
        lambda lax: lax.erfc(np.int32(1)),
        lambda lax: lax.digamma(np.arange(3)),
        lambda lax: lax.igamma(np.float32(1), np.int32(2)),
        lambda lax: lax.zeta(np.float32(2), np.float16(1)),
    ],
)
def test_type_errors_match_jax(call):
    with pytest.raises(TypeError):
        call(jax.lax)
    with pytest.raises(TypeError):
        call(plax)
