"""JAX's remaining autodiff names: float0, custom_gradient, fwd_and_bwd, and lax.custom_root
and lax.custom_linear_solve (implicit differentiation), against JAX: values and gradients
under jit, grad, jvp and vmap."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from ad_compare import assert_tree_close

import purejit
import purejit.numpy as jnp

# ---- float0 -----------------------------------------------------------------------------------


def test_float0_is_jax_float0_and_the_tangent_dtype_of_integers():
    assert purejit.float0 == jax.float0 == jax.dtypes.float0
    g = purejit.grad(lambda x, n: x * n, argnums=1, allow_int=True)(2.0, 3)
    assert g.dtype == purejit.float0 and g.shape == ()
    _, vjp_fn = purejit.vjp(lambda x, n: x * n, 2.0, np.arange(3))
    gx, gn = vjp_fn(np.ones(3, np.float32))
    assert gn.dtype == purejit.float0 and gn.shape == (3,)
    # a float0 tangent is what jvp takes for an integer input, as in JAX
    t0 = np.zeros((3,), purejit.float0)
    y, ty = purejit.jvp(lambda x, n: x * n, (2.0, np.arange(3)), (1.0, t0))
    jy, jty = jax.jvp(lambda x, n: x * n, (2.0, np.arange(3)), (1.0, t0))
    assert_tree_close((y, ty), (jy, jty))


# ---- custom_gradient --------------------------------------------------------------------------


def test_custom_gradient_matches_jax():
    def make(cg, np_):
        @cg
        def f(x):
            return x**2, lambda g: (g * x,)  # a deliberately "wrong" gradient, as JAX's doc

        @cg
        def h(x, y):
            s = np_.sin(x) * y  # the vjp closes over values of the forward pass

            def vjp(g):
                return g * np_.cos(x) * y * 3.0, g * s

            return s, vjp

        @cg
        def one(x):  # a one-argument rule may return a bare cotangent
            return np_.exp(x), lambda g: g * 2.0

        return f, h, one

    pf, ph, po = make(purejit.custom_gradient, jnp)
    jf, jh, jo = make(jax.custom_gradient, jjnp)
    x = np.array([0.5, 1.5, -2.0], np.float32)
    y = np.array([1.0, -0.5, 2.0], np.float32)
    assert float(pf(3.0)) == 9.0 and float(purejit.grad(pf)(3.0)) == 3.0
    for p, j in [(pf, jf), (po, jo)]:
        assert_tree_close(p(x), j(x))
        for tr in (lambda g: g, purejit.jit):
            assert_tree_close(tr(purejit.grad(lambda a: p(a).sum()))(x),
                              jax.grad(lambda a: j(a).sum())(x))  # fmt: skip
        assert_tree_close(purejit.vmap(purejit.grad(p))(x), jax.vmap(jax.grad(j))(x))
    want = jax.grad(lambda a, b: jh(a, b).sum(), argnums=(0, 1))(x, y)
    assert_tree_close(purejit.grad(lambda a, b: ph(a, b).sum(), argnums=(0, 1))(x, y), want)
    got = purejit.jit(purejit.grad(lambda a, b: ph(a, b).sum(), argnums=(0, 1)))(x, y)
    assert_tree_close(got, want)
    assert_tree_close(purejit.grad(lambda a: purejit.vmap(ph)(a, y).sum())(x),
                      jax.grad(lambda a: jax.vmap(jh)(a, y).sum())(x))  # fmt: skip

    # pytrees in and out
    @purejit.custom_gradient
    def tree_f(d):
        return {"s": d["a"] * d["b"]}, lambda g: ({"a": g["s"] * d["b"], "b": g["s"]},)

    got = purejit.grad(lambda d: tree_f(d)["s"].sum())({"a": x, "b": y})
    assert_tree_close(got, {"a": y, "b": np.ones(3, np.float32)})
    with pytest.raises(TypeError, match="custom_gradient"):
        purejit.grad(purejit.custom_gradient(lambda x: x * 2.0))(1.0)


# ---- fwd_and_bwd ------------------------------------------------------------------------------


def test_fwd_and_bwd_matches_jax_and_compiles_once():
    traces = []

    def f(x, w):
        traces.append(1)
        return jnp.tanh(x @ w)

    def jf(x, w):
        return jjnp.tanh(x @ w)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 2)).astype(np.float32)
    ct = rng.standard_normal((3, 2)).astype(np.float32)
    fwd, bwd = purejit.fwd_and_bwd(f, argnums=(0, 1))
    jfwd, jbwd = jax.fwd_and_bwd(jf, argnums=(0, 1))
    jy, jres = jfwd(x, w)
    want = jbwd(jres, ct)
    for _ in range(3):
        y, res = fwd(x, w)
        got = bwd(res, ct)
        assert_tree_close(y, jy)
        assert_tree_close(got, want)
    assert len(traces) == 1
    assert purejit.cache_stats(fwd).compiles == 1 and purejit.cache_stats(bwd).compiles == 1
    # an int argnums gives one cotangent; has_aux; not jitted
    fwd, bwd = purejit.fwd_and_bwd(lambda x, w: (jf_p(x, w), x * 2), argnums=1, has_aux=True,
                                   jitted=False)  # fmt: skip
    jfwd, jbwd = jax.fwd_and_bwd(lambda x, w: (jf(x, w), x * 2), argnums=1, has_aux=True)
    y, res, aux = fwd(x, w)
    jy, jres, jaux = jfwd(x, w)
    assert_tree_close((y, aux), (jy, jaux))
    assert_tree_close(bwd(res, ct), jbwd(jres, ct))


def jf_p(x, w):
    return jnp.tanh(x @ w)
