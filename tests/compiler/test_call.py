"""The `call` op (a function applied as one op, JAX's `jit_p`): every rule, through the
public transformations, against the same math written flat and against JAX.

Each rule must produce another call (never the inlined ops): the JVP'd function, a known
and an unknown call when linearizing, the transposed function, the batched function."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import purejit
import purejit.numpy as pnp
from purejit.tracing import aval_of, bind, trace_to_function


def _g(a, b):
    return [pnp.sin(a * b) + a, pnp.tanh(b)]


def _g_jax(a, b):
    return [jnp.sin(a * b) + a, jnp.tanh(b)]


def called(a, b):
    """`_g` bound as one `call` op of its traced function."""
    fn = trace_to_function(_g, [aval_of(a), aval_of(b)], name="g").fn
    return bind("call", a, b, regions=[fn], callee="g")


def _loss(a, b):
    u, v = called(a, b)
    return (u * v).sum()


def _loss_jax(a, b):
    u, v = _g_jax(a, b)
    return (u * v).sum()


X = np.linspace(-1, 1, 6, dtype=np.float32)
Y = np.linspace(0.5, 2, 6, dtype=np.float32)


def _ops(f, *args):
    """The op names of the traced (unoptimised) program, regions included."""
    return [op.name for op in purejit.jit(f).trace(*args).jaxpr.fn.walk()]


def test_reference_lowering_and_inlined_compile():
    got = purejit.jit(called)(X, Y)
    want = _g_jax(X, Y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert "call" in _ops(called, X, Y)
    lowered = purejit.jit(called).lower(X, Y)
    assert "call" not in [op.name for op in lowered.fn.walk()]  # the inline pass ran


def test_jvp_is_a_call_of_the_jvp_function():
    def f(a, b):
        return purejit.jvp(lambda a: called(a, b)[0], (a,), (pnp.ones_like(a),))

    p, t = purejit.jit(f)(X, Y)
    wp, wt = jax.jvp(lambda a: _g_jax(a, Y)[0], (X,), (np.ones_like(X),))
    np.testing.assert_allclose(p, wp, rtol=1e-6)
    np.testing.assert_allclose(t, wt, rtol=1e-5)
    assert _ops(f, X, Y).count("call") >= 1


def test_grad_splits_into_known_and_linear_calls_and_transposes_one():
    g = purejit.jit(purejit.grad(_loss, argnums=(0, 1)))(X, Y)
    want = jax.grad(_loss_jax, argnums=(0, 1))(X, Y)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    names = [op.attrs.get("callee") for op in
             purejit.jit(purejit.grad(_loss)).trace(X, Y).jaxpr.fn.walk() if op.name == "call"]  # fmt: skip
    assert any(n.endswith("_fwd") for n in names), names
    assert any(n.endswith("_t") for n in names), names


def test_vmap_is_a_call_of_the_batched_function():
    xs = np.stack([X, 2 * X, -X])
    got = purejit.jit(purejit.vmap(called, in_axes=(0, None)))(xs, Y)
    want = jax.vmap(_g_jax, in_axes=(0, None))(xs, Y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert "call" in _ops(purejit.vmap(called, in_axes=(0, None)), xs, Y)


# ---- jit binds a call under an outer jit -----------------------------------------------------

_inner = purejit.jit(lambda x, y: (pnp.sin(x) * y, {"next": x + 1.0}))


def _outer(x, y):
    a, d = _inner(x, y)
    c, _ = _inner(a, d["next"])
    return c * 2


def _outer_np(x, y):
    a, n = np.sin(x) * y, x + 1.0
    return np.sin(a) * n * 2


def test_a_nested_jit_is_one_call_that_the_passes_inline():
    traced = purejit.jit(_outer).trace(X, Y).jaxpr.fn
    calls = [op for op in traced.ops if op.name == "call"]
    assert len(calls) == 2 and calls[0].attrs["callee"] == "<lambda>"
    lowered = purejit.jit(_outer).lower(X, Y)
    assert "call" not in [op.name for op in lowered.fn.walk()]
    np.testing.assert_allclose(purejit.jit(_outer)(X, Y), _outer_np(X, Y), rtol=1e-5)


def test_values_closed_over_from_the_outer_jit_are_operands():
    def f(x, y):
        g = purejit.jit(lambda a: a * y + 1.0)  # closes over the outer tracer y
        return g(x), g(2 * x)

    got = purejit.jit(f)(X, Y)
    np.testing.assert_allclose(got[0], X * Y + 1, rtol=1e-6)
    np.testing.assert_allclose(got[1], 2 * X * Y + 1, rtol=1e-6)
    (call, *_) = [op for op in purejit.jit(f).trace(X, Y).jaxpr.fn.ops if op.name == "call"]
    assert len(call.operands) == 2  # x, then the captured y


def test_weak_types_and_static_arguments_survive_the_call():
    inner = purejit.jit(lambda a, k: a * k, static_argnums=1)

    def f(x):
        return inner(x, 3), inner(2.0, 2)

    got, weak = purejit.jit(f)(X)
    np.testing.assert_allclose(got, 3 * X, rtol=1e-6)
    assert weak.weak_type and float(weak) == 4.0


def test_grad_and_vmap_of_a_nested_jit_under_jit():
    def loss(x, y):
        return (_outer(x, y) ** 2).sum()

    g = purejit.jit(purejit.grad(loss))(X, Y)

    def loss_jax(x, y):
        a, n = jnp.sin(x) * y, x + 1.0
        return ((jnp.sin(a) * n * 2) ** 2).sum()

    np.testing.assert_allclose(g, jax.grad(loss_jax)(X, Y), rtol=1e-5, atol=1e-6)
    xs = np.stack([X, -X])
    v = purejit.jit(purejit.vmap(_outer, in_axes=(0, None)))(xs, Y)
    np.testing.assert_allclose(v, np.stack([_outer_np(X, Y), _outer_np(-X, Y)]), rtol=1e-5)
