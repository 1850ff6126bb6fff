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
from purejit import lax
from purejit.test_util import check_grads

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


# ---- lax.custom_root ------------------------------------------------------------------------


def _newton_sqrt(np_, lax_, has_aux=False):
    """sqrt(a) as the root of x**2 - a, by Newton iterations in a while_loop (which reverse
    mode cannot differentiate: the gradient must come from the implicit function theorem)."""

    def sqrt_(a):
        f = lambda x: x**2 - a  # noqa: E731

        def solve(f, x0):
            def body(c):
                x, k = c
                return x - f(x) / (2.0 * x), k + 1

            x, k = lax_.while_loop(lambda c: (c[1] < 30) & (np_.abs(f(c[0])) > 1e-6), body,
                                   (x0, 0))  # fmt: skip
            return (x, k * 1.0) if has_aux else x  # (JAX fails on an int aux)

        out = lax_.custom_root(f, np_.ones_like(a), solve, lambda g, y: y / g(1.0), has_aux)
        return out[0] * out[1] if has_aux else out  # aux (iterations) gets no derivative

    return sqrt_


def test_custom_root_newton_sqrt_matches_jax():

    a = np.float32(2.0)
    av = np.array([1.0, 2.0, 4.0], np.float32)
    for aux in (False, True):
        ps, js = _newton_sqrt(jnp, lax, aux), _newton_sqrt(jjnp, jax.lax, aux)
        assert_tree_close(ps(a), js(a))
        assert_tree_close(purejit.grad(ps)(a), jax.grad(js)(a))
        assert_tree_close(purejit.jit(purejit.grad(ps))(a), jax.grad(js)(a))
        assert_tree_close(purejit.jvp(ps, (a,), (np.float32(0.5),)),
                          jax.jvp(js, (a,), (np.float32(0.5),)))  # fmt: skip
    ps, js = _newton_sqrt(jnp, lax), _newton_sqrt(jjnp, jax.lax)
    assert_tree_close(purejit.grad(purejit.grad(ps))(a), jax.grad(jax.grad(js))(a))
    assert_tree_close(purejit.vmap(ps)(av), jax.vmap(js)(av))
    assert_tree_close(purejit.vmap(purejit.grad(ps))(av), jax.vmap(jax.grad(js))(av))
    assert_tree_close(purejit.grad(lambda v: purejit.vmap(ps)(v).sum())(av),
                      jax.grad(lambda v: jax.vmap(js)(v).sum())(av))  # fmt: skip
    assert_tree_close(purejit.jit(purejit.vmap(ps))(av), np.sqrt(av))
    check_grads(ps, (a,), order=2, modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)


# ---- lax.custom_linear_solve ------------------------------------------------------------------


def _cg(np_, lax_, has_aux):
    def cg(mv, b):
        def body(c):
            x, r, p, k = c
            ap = mv(p)
            rr = np_.vdot(r, r)
            al = rr / np_.vdot(p, ap)
            x, r2 = x + al * p, r - al * ap
            return x, r2, r2 + np_.vdot(r2, r2) / rr * p, k + 1

        cond = lambda c: (c[3] < 20) & (np_.vdot(c[1], c[1]) > 1e-12)  # noqa: E731
        x, _, _, k = lax_.while_loop(cond, body, (np_.zeros_like(b), b, b, 0))
        return (x, k) if has_aux else x

    return cg


def _solvers(np_, lax_, kind):
    cg = _cg(np_, lax_, kind == "cg_aux")

    def f(a, b):
        mv = lambda x: a @ x  # noqa: E731
        if kind == "cg":  # symmetric: the transpose solve is the solve
            return lax_.custom_linear_solve(mv, b, cg, symmetric=True)
        if kind == "cg_aux":
            x, k = lax_.custom_linear_solve(mv, b, cg, symmetric=True, has_aux=True)
            return x * (k > 0)
        # non-symmetric, with an explicit transpose solve on the (automatic) vecmat
        return lax_.custom_linear_solve(
            mv,
            b,
            lambda m, y: np_.linalg.solve(a, y),
            lambda vm, y: np_.linalg.solve(a.T, y),
        )

    return f


@pytest.mark.parametrize("kind", ["cg", "cg_aux", "nonsymmetric"])
def test_custom_linear_solve_matches_jax(kind):

    rng = np.random.default_rng(1)
    m = rng.standard_normal((4, 4)).astype(np.float32)
    a = m @ m.T + 4 * np.eye(4) if kind != "nonsymmetric" else m + 4 * np.eye(4)
    a = a.astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    bs = np.stack([b, 2 * b, -b])
    pf, jf = _solvers(jnp, lax, kind), _solvers(jjnp, jax.lax, kind)

    def loss(f):
        return lambda a, b: (f(a, b) ** 2).sum() + f(a, b)[0]

    pl, jl = loss(pf), loss(jf)
    assert_tree_close(pf(a, b), jf(a, b))
    want = jax.grad(jl, argnums=(0, 1))(a, b)
    assert_tree_close(purejit.grad(pl, argnums=(0, 1))(a, b), want)
    assert_tree_close(purejit.jit(purejit.grad(pl, argnums=(0, 1)))(a, b), want)
    assert_tree_close(purejit.jvp(pf, (a, b), (m, b)), jax.jvp(jf, (a, b), (m, b)))
    assert_tree_close(purejit.vmap(pf, (None, 0))(a, bs), jax.vmap(jf, (None, 0))(a, bs))
    assert_tree_close(purejit.vmap(purejit.grad(pl), (None, 0))(a, bs),
                      jax.vmap(jax.grad(jl), (None, 0))(a, bs))  # fmt: skip
    g = purejit.grad(lambda a, bs: purejit.vmap(pl, (None, 0))(a, bs).sum(), argnums=(0, 1))
    jg = jax.grad(lambda a, bs: jax.vmap(jl, (None, 0))(a, bs).sum(), argnums=(0, 1))
    assert_tree_close(g(a, bs), jg(a, bs))
    if kind == "nonsymmetric":
        assert_tree_close(purejit.hessian(pl, argnums=1)(a, b), jax.hessian(jl, argnums=1)(a, b))
        check_grads(pf, (a, b), order=2, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)


def test_custom_linear_solve_needs_transpose_solve_for_reverse_mode():

    a = np.array([[3.0, 1.0], [0.5, 2.0]], np.float32)
    b = np.array([1.0, -1.0], np.float32)

    def f(a, b):
        return lax.custom_linear_solve(lambda x: a @ x, b, lambda m, y: jnp.linalg.solve(a, y))

    def jf(a, b):
        return jax.lax.custom_linear_solve(lambda x: a @ x, b,
                                           lambda m, y: jjnp.linalg.solve(a, y))  # fmt: skip

    assert_tree_close(purejit.jvp(f, (a, b), (a, b)), jax.jvp(jf, (a, b), (a, b)))
    with pytest.raises(NotImplementedError, match="transpose_solve required"):
        purejit.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(a, b)
    with pytest.raises(TypeError, match="custom_linear_solve: matvec must return"):
        purejit.jit(lambda b: lax.custom_linear_solve(lambda x: x[:1], b, lambda m, y: y))(b)


def test_custom_jvp_function_on_tangents_transposes_as_its_region():
    # a custom_jvp rule that calls another custom_jvp function on its tangents leaves that
    # call in the linear program; reverse mode transposes its region, as JAX inlines it
    def make(cj, np_):
        @cj
        def g(x):
            return 2.0 * x

        g.defjvp(lambda p, t: (g(p[0]), g(t[0])))

        @cj
        def f(x):
            return np_.sin(x)

        f.defjvp(lambda p, t: (f(p[0]), g(t[0]) * np_.cos(p[0])))
        return f

    pf, jf = make(purejit.custom_jvp, jnp), make(jax.custom_jvp, jjnp)
    x = np.array([0.3, 1.0, -2.0], np.float32)
    want = jax.grad(lambda x: jf(x).sum())(x)
    assert_tree_close(purejit.grad(lambda x: pf(x).sum())(x), want)
    assert_tree_close(purejit.jit(purejit.grad(lambda x: pf(x).sum()))(x), want)
    assert_tree_close(purejit.vmap(purejit.grad(pf))(x), jax.vmap(jax.grad(jf))(x))
