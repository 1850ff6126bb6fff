"""grad, value_and_grad, vjp, jvp against JAX: elementwise, shape, reduction, contraction
and indexing ops; eager and under jit; compositions (jit of grad, grad of jit, grad of
grad, jvp of grad)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from ad_compare import assert_tree_close, check_ad, rand_like

import purejit
import purejit.numpy as jnp
from purejit import lax

X = np.linspace(0.2, 0.9, 6, dtype=np.float32).reshape(2, 3)
Y = np.linspace(-1.3, 1.1, 6, dtype=np.float32).reshape(2, 3)

UNARY = [
    "sin", "cos", "tan", "tanh", "exp", "expm1", "log", "log1p", "sqrt", "arcsin",
    "arccos", "arctan", "sinh", "cosh", "arcsinh", "arctanh", "abs", "negative",
    "floor", "sign", "cbrt", "square", "reciprocal",
]  # fmt: skip


def test_unary_ops_match_jax_jvp_and_vjp():
    def make(mod):
        def f(x):
            return [getattr(mod, n)(x) for n in UNARY] + [mod.arccosh(x + 1.5)]

        return f

    check_ad(make(jnp), make(jjnp), X)


def test_lax_unary_ops_match_jax():
    names = ["logistic", "rsqrt", "erf", "lgamma"]

    def make(mod):
        return lambda x: [getattr(mod, n)(x) for n in names]

    check_ad(make(lax), make(jax.lax), X + 0.5, rtol=1e-4, atol=1e-4)
    check_ad(make(lax), make(jax.lax), -X - 0.3, rtol=1e-4, atol=1e-4)  # lgamma's reflection


def test_binary_ops_match_jax_including_ties():
    def make(mod):
        def f(x, y):
            return [
                x + y, x - y, x * y, x / y, mod.maximum(x, y), mod.minimum(x, y),
                mod.arctan2(x, y), x ** 2.5, mod.power(x, y), mod.fmod(x, y),
                mod.maximum(x, x), mod.clip(y, -0.5, 0.5), mod.where(x > 0.5, x, y),
            ]  # fmt: skip

        return f

    check_ad(make(jnp), make(jjnp), X, Y)


def test_shape_ops_match_jax():
    def make(mod):
        def f(x, y):
            return [
                mod.reshape(x, (3, 2)),
                x.T,
                mod.concatenate([x, y], axis=1),
                mod.broadcast_to(x[:, None, :], (2, 4, 3)),
                x[1:, ::2],
                mod.flip(x, 1),
                mod.pad(x, ((1, 2), (0, 1))),
                mod.expand_dims(y, 0),
                mod.tile(x, (2, 1)),
            ]

        return f

    check_ad(make(jnp), make(jjnp), X, Y)


def test_reductions_and_dots_match_jax():
    def make(mod):
        def f(x, y):
            z = mod.asarray(x).at[0, 1].set(0.0)
            return [
                mod.sum(x, axis=0), mod.mean(x), mod.max(x, axis=1), mod.min(y),
                mod.prod(x, axis=1), mod.prod(z), mod.var(y, axis=0),
                x @ y.T, mod.einsum("ij,kj->ik", x, y), mod.dot(x[0], y[1]),
                mod.max(mod.concatenate([x, x], 0), axis=0),
            ]  # fmt: skip

        return f

    check_ad(make(jnp), make(jjnp), X, Y)


def test_batched_dot_and_lax_pad_and_dynamic_slices():
    a = rand_like(np.zeros((2, 3, 4), np.float32), 1)
    b = rand_like(np.zeros((2, 4, 5), np.float32), 2)

    def make(mod, lx):
        def f(a, b):
            return [
                mod.einsum("bij,bjk->bik", a, b),
                lx.pad(a, np.float32(0), [(1, -1, 1), (0, 0, 0), (-1, 2, 0)]),
                lx.dynamic_slice(a, (0, 1, 2), (2, 2, 2)),
                lx.dynamic_update_slice(a, b[:, :2, :3], (1, 1, 1)),
            ]

        return f

    check_ad(make(jnp, lax), make(jjnp, jax.lax), a, b)


def test_grad_eager_jit_and_compositions():
    def f(x, y):
        return jnp.sum(jnp.tanh(x * y) ** 2) + jnp.sum(jnp.sin(x))

    def fj(x, y):
        return jjnp.sum(jjnp.tanh(x * y) ** 2) + jjnp.sum(jjnp.sin(x))

    want = jax.grad(fj, argnums=(0, 1))(X, Y)
    assert_tree_close(want, purejit.grad(f, argnums=(0, 1))(X, Y))  # eager
    assert_tree_close(want, purejit.jit(purejit.grad(f, argnums=(0, 1)))(X, Y))
    assert_tree_close(want, purejit.grad(purejit.jit(f), argnums=(0, 1))(X, Y))
    v, g = purejit.value_and_grad(f)(X, Y)
    vr, gr = jax.value_and_grad(fj)(X, Y)
    assert_tree_close((vr, gr), (v, g))

    # second order: grad of grad and Hessian-vector products (jvp of grad)
    def g2(x):
        return jnp.sum(purejit.grad(lambda z: jnp.sum(jnp.sin(z) * z**2))(x) ** 2)

    def g2j(x):
        return jjnp.sum(jax.grad(lambda z: jjnp.sum(jjnp.sin(z) * z**2))(x) ** 2)

    assert_tree_close(jax.grad(g2j)(X), purejit.grad(g2)(X), rtol=1e-4)
    assert_tree_close(jax.grad(g2j)(X), purejit.jit(purejit.grad(g2))(X), rtol=1e-4)
    h = jax.jvp(jax.grad(fj), (X, Y), (Y, X))
    assert_tree_close(h, purejit.jvp(purejit.grad(f), (X, Y), (Y, X)), rtol=1e-4)
    assert_tree_close(
        h, purejit.jit(lambda a, b: purejit.jvp(purejit.grad(f), (a, b), (b, a)))(X, Y), rtol=1e-4
    )


def test_grad_closure_nested_in_grad_and_pytrees_and_aux():
    def outer(x):
        return purejit.grad(lambda y: jnp.sum(x * y * y))(x).sum()

    def outer_j(x):
        return jax.grad(lambda y: jjnp.sum(x * y * y))(x).sum()

    assert_tree_close(jax.grad(outer_j)(X), purejit.grad(outer)(X))

    params = {"w": X, "b": (Y[0], np.float32(0.5))}

    def loss(p, x):
        out = jnp.tanh(x @ p["w"].T + p["b"][0][:2]) * p["b"][1]
        return jnp.mean(out**2), {"out": out}

    def loss_j(p, x):
        out = jjnp.tanh(x @ p["w"].T + p["b"][0][:2]) * p["b"][1]
        return jjnp.mean(out**2), {"out": out}

    ref = jax.value_and_grad(loss_j, has_aux=True)(params, Y)
    got = purejit.jit(purejit.value_and_grad(loss, has_aux=True))(params, Y)
    assert_tree_close(ref, got)
    ref_g, ref_aux = jax.grad(loss_j, has_aux=True)(params, Y)
    got_g, got_aux = purejit.grad(loss, has_aux=True)(params, Y)
    assert_tree_close((ref_g, ref_aux), (got_g, got_aux))


def test_stop_gradient_and_int_inputs_and_float0():
    def f(x, n):
        return jnp.sum(lax.stop_gradient(x) * x * n)

    def fj(x, n):
        return jjnp.sum(jax.lax.stop_gradient(x) * x * n)

    n = np.int32(3)
    assert_tree_close(jax.grad(fj)(X, n), purejit.grad(f)(X, n))
    gx, gn = purejit.grad(f, argnums=(0, 1), allow_int=True)(X, n)
    assert gn.dtype == purejit.autodiff.float0 and gn.shape == ()
    out, t = purejit.jvp(f, (X, n), (Y, np.zeros((), purejit.autodiff.float0)))
    ro, rt = jax.jvp(fj, (X, n), (Y, np.zeros((), jax.dtypes.float0)))
    assert_tree_close((ro, rt), (out, t))
    # an integer output's tangent is float0
    _, ti = purejit.jvp(lambda x: (x * 2).astype(np.int32), (X,), (Y,))
    assert ti.dtype == purejit.autodiff.float0


def test_complex_conjugate_convention_and_holomorphic():
    z = (X + 1j * Y).astype(np.complex64)

    def f(z):
        return jnp.sum(jnp.abs(z) ** 2 + jnp.real(z * z))

    def fj(z):
        return jjnp.sum(jjnp.abs(z) ** 2 + jjnp.real(z * z))

    assert_tree_close(jax.grad(fj)(z), purejit.grad(f)(z))

    def h(z):
        return jnp.sum(jnp.exp(z) * z)

    def hj(z):
        return jjnp.sum(jjnp.exp(z) * z)

    assert_tree_close(jax.grad(hj, holomorphic=True)(z), purejit.grad(h, holomorphic=True)(z))
    check_ad(lambda z: jnp.exp(z) * jnp.real(z), lambda z: jjnp.exp(z) * jjnp.real(z), z)


def test_grad_errors_name_the_problem():
    with pytest.raises(TypeError, match=r"scalar-output.*shape: \(2, 3\)"):
        purejit.grad(lambda x: x * 2)(X)
    with pytest.raises(TypeError, match="allow_int"):
        purejit.grad(lambda n: n * 2.0)(np.int32(2))
    with pytest.raises(TypeError, match="holomorphic=True"):
        purejit.grad(lambda z: z * z)(np.complex64(1 + 1j))
    with pytest.raises(TypeError, match="float0"):
        purejit.jvp(lambda n: n * 2, (np.int32(1),), (np.int32(1),))
