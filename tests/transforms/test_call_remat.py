"""A jitted function called under `grad` saves what the same code written inline saves.

Linearizing a `call` splits it into a forward call (outputs and residuals) and a linear
call; the enclosing plan cannot look inside a call (it saves everything a call returns), so
the call's own body is planned with the same minimum cut: its operands and results cost
nothing there (the enclosing plan decides about them), cheap chains are recomputed in the
linear call. Checked structurally (residual counts and bytes, the printed forward call),
and by numbers: the traced program in the interpreter, compiled, and JAX.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from purejit.ir import interpret, print_function

import purejit
import purejit.numpy as pnp
from bench.models import transformer, transformer_params


def _tanh_layer(xp):
    return lambda x, w, b: xp.tanh(x * w + b)


def _chain(layer):
    def loss(ws, x, b):
        for w in ws:
            x = layer(x, w, b)
        return x.sum()

    return loss


W = [np.full(4, 0.5, np.float32), np.full(4, -0.25, np.float32)]
X = np.linspace(-1, 1, 4, dtype=np.float32)
B = np.ones(4, np.float32)


def _calls(fn, suffix):
    return [op for op in fn.ops if op.name == "call" and op.attrs["callee"].endswith(suffix)]


def test_forward_call_returns_only_what_the_plan_saves():
    traced = purejit.jit(purejit.grad(_chain(purejit.jit(_tanh_layer(pnp))))).trace(W, X, B)
    fn = traced.jaxpr.fn
    fwd = _calls(fn, "_fwd")
    # saving everything, each forward call returned (y, x or w, y, 1 - y): w and x are the
    # call's operands and y its result, which the enclosing plan saves or not; 1 - y is
    # recomputed in the backward pass. Now a forward call returns its result alone.
    assert [len(op.results) for op in fwd] == [1, 1]
    assert print_function(fwd[1].regions[0]).splitlines()[1:] == [
        "  %3 = multiply(%0, %1) : (f32[4])",
        "  %4 = add(%3, %2) : (f32[4])",
        "  %5 = tanh(%4) : (f32[4])",
        "  return %5",
        "}",
    ]
    # the linear call, transposed, recomputes 1 - y from y behind an optimization_barrier
    (last_t, first_t) = _calls(fn, "_lin_t")
    names = [op.name for op in last_t.regions[0].ops]
    assert names[0] == "optimization_barrier" and "subtract" in names
    # the traced program, interpreted, is the compiled gradient and JAX's
    got = purejit.jit(purejit.grad(_chain(purejit.jit(_tanh_layer(pnp)))))(W, X, B)
    ref = interpret(fn, *W, X, B)
    want = jax.grad(_chain(_tanh_layer(jnp)))(W, X, B)
    for g, r, w in zip(got, ref, want):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)


def _block_loss(layer_of):
    heads = 2

    def loss(ps, x):
        layer = layer_of(lambda x, p: transformer(pnp, [p], x, heads))
        for p in ps:
            x = layer(x, p)
        return pnp.mean(x**2)

    return loss


@pytest.mark.parametrize("options", [{}, {"remat": False}], ids=["auto", "remat_off"])
def test_a_jitted_transformer_layer_saves_what_inline_code_saves(options):
    ps = transformer_params(3, 16, np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((2, 8, 16)).astype(np.float32)
    got, saved = {}, {}
    for name, layer_of in (("inline", lambda f: f), ("jitted", purejit.jit)):
        f = purejit.jit(purejit.grad(_block_loss(layer_of)), compiler_options=options)
        lowered = f.lower(ps, x)
        # the enclosing record counts what crosses to the backward pass (the calls' own
        # records are inner: their saved values are results of the forward calls)
        (top,) = [r for r in lowered.residuals if not r.inner]
        saved[name] = (len([r for r in top.saved if not r.free]), top.saved_bytes)
        got[name] = jax.tree.leaves(f(ps, x))
        if name == "jitted":
            calls = [r for r in lowered.residuals if r.inner]
            assert len(calls) == 3 and all(r.where.startswith("call ") for r in calls)
    assert saved["jitted"] == saved["inline"], saved
    for a, b in zip(got["jitted"], got["inline"]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_eager_grad_of_a_jitted_function_plans_its_call_too():
    layer = purejit.jit(_tanh_layer(pnp))
    got = purejit.grad(_chain(layer))(W, X, B)
    want = jax.grad(_chain(_tanh_layer(jnp)))(W, X, B)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)


def test_a_call_inside_checkpoint_under_grad():
    # the call's plan and checkpoint's each collect records: two empty collectors are equal
    # lists, so the trace context must remove them by identity
    inner = purejit.jit(lambda x: pnp.sin(x) * 2)
    loss = lambda x: purejit.checkpoint(lambda y: inner(y))(x).sum()  # noqa: E731
    x = np.linspace(0, 1, 3, dtype=np.float32)
    got = purejit.jit(purejit.grad(loss))(x)
    np.testing.assert_allclose(got, 2 * np.cos(x), rtol=1e-6)
