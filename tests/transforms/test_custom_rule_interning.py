"""Custom rules by value: a custom_jvp/custom_vjp rule batched by vmap is registered once per
(rule, axis, mapped dimensions), so an eager `vmap` of `nn.relu` or `nn.softmax` called again
names the same rule, compiles nothing and leaves the rule table as it was."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import nn
from purejit.runtime import eval_trace
from purejit.transforms.autodiff._core import CUSTOM_RULES


def _softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize(
    "fun, ref",
    [(nn.relu, lambda x: np.maximum(x, 0)), (nn.softmax, _softmax_ref)],
    ids=["relu", "softmax"],
)
def test_second_eager_vmap_compiles_nothing_and_grows_nothing(fun, ref):
    x_np = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    x = jnp.asarray(x_np) + 0
    v = purejit.vmap(fun)
    np.testing.assert_allclose(np.asarray(v(x)), ref(x_np), rtol=1e-5, atol=1e-6)
    compiles, rules = eval_trace.compiles, len(CUSTOM_RULES)
    for _ in range(50):
        out = v(x)
    np.testing.assert_allclose(np.asarray(out), ref(x_np), rtol=1e-5, atol=1e-6)
    assert eval_trace.compiles == compiles
    assert len(CUSTOM_RULES) == rules
    # a fresh vmap of the same function names the same batched rule too
    np.testing.assert_allclose(np.asarray(purejit.vmap(fun)(x)), ref(x_np), rtol=1e-5, atol=1e-6)
    assert (eval_trace.compiles, len(CUSTOM_RULES)) == (compiles, rules)


def test_a_new_axis_size_is_a_new_batched_rule():
    x = jnp.ones((7, 11)) + 0  # sizes no other test maps over
    purejit.vmap(nn.relu)(x)
    rules = len(CUSTOM_RULES)
    purejit.vmap(nn.relu)(x)
    assert len(CUSTOM_RULES) == rules
    purejit.vmap(nn.relu, in_axes=1)(x)  # eleven examples now
    purejit.vmap(nn.relu, in_axes=1)(x)
    assert len(CUSTOM_RULES) == rules + 1
    purejit.vmap(purejit.vmap(nn.relu))(jnp.ones((7, 11, 2)) + 0)  # a batched batched rule
    assert len(CUSTOM_RULES) == rules + 2


def test_batched_custom_rule_still_differentiates():
    x_np = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    x = jnp.asarray(x_np)

    def loss(v):
        return purejit.vmap(nn.softmax)(v)[:, 0].sum()

    for _ in range(2):  # the second trace reuses the interned batched rule
        g = np.asarray(purejit.grad(loss)(x))
    s = _softmax_ref(x_np)
    want = s[:, :1] * ((np.arange(4) == 0) - s)
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


@purejit.custom_vjp
def _clip_grad(x):
    return jnp.sin(x)


def _clip_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def _clip_bwd(c, g):
    return (jnp.clip(g * c, -0.5, 0.5),)


_clip_grad.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_batched_rule_is_interned_and_differentiates():
    x_np = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    x = jnp.asarray(x_np)

    def loss(v):
        return purejit.vmap(_clip_grad)(v).sum()

    want = np.clip(np.cos(x_np), -0.5, 0.5)
    np.testing.assert_allclose(np.asarray(purejit.grad(loss)(x)), want, rtol=1e-6)
    rules = len(CUSTOM_RULES)
    for _ in range(3):
        g = purejit.grad(loss)(x)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6)
    assert len(CUSTOM_RULES) == rules
    # another shape with the same batch size: its own batched rule, right cotangents
    y_np = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    got = purejit.grad(loss)(jnp.asarray(y_np))
    np.testing.assert_allclose(np.asarray(got), np.clip(np.cos(y_np), -0.5, 0.5), rtol=1e-6)


def test_custom_vjp_used_at_two_shapes_in_one_gradient():
    # the rule keeps what its fwd hands its bwd (the input types): one rule per input types
    def loss(a, b):
        return _clip_grad(a).sum() + _clip_grad(b).sum()

    a = np.linspace(-1, 1, 3, dtype=np.float32)
    b = np.linspace(-1, 1, 5, dtype=np.float32)
    for grad in (purejit.grad(loss, argnums=(0, 1)), purejit.jit(purejit.grad(loss, (0, 1)))):
        ga, gb = grad(a, b)
        np.testing.assert_allclose(np.asarray(ga), np.clip(np.cos(a), -0.5, 0.5), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(gb), np.clip(np.cos(b), -0.5, 0.5), rtol=1e-6)
    rules = len(CUSTOM_RULES)
    purejit.grad(loss, argnums=(0, 1))(a, b)
    assert len(CUSTOM_RULES) == rules
