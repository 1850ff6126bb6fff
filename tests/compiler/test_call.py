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
