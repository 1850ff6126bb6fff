"""jaxlib's C++ dispatch flattens purejit's registered pytree node types (`Partial`, a
library's classes) as purejit's Python path does: a call whose arguments or results hold
them runs in C++ once its signature was seen, and the node's aux data stays part of the key
(two nodes that differ in it never share a program)."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.backend import cpp_jit
from purejit.compiler import cpp_dispatch
from purejit.tree_util import register_pytree_node

pytestmark = pytest.mark.skipif(
    not cpp_dispatch.available(), reason=f"no C++ dispatch: {cpp_jit.why_unavailable()}"
)


class Scaled:
    """A node with one child and a static factor in its aux data."""

    def __init__(self, x, k):
        self.x, self.k = x, k


register_pytree_node(Scaled, lambda s: ([s.x], s.k), lambda k, c: Scaled(c[0], k))


class Tagged:
    """A node whose aux data is a list: C++ cannot hash it, purejit allows it."""

    def __init__(self, x, tags):
        self.x, self.tags = x, tags


register_pytree_node(Tagged, lambda t: ([t.x], list(t.tags)), lambda a, c: Tagged(c[0], a))


def test_pullbacks_in_and_out_of_jit_run_in_cpp(python_calls):
    def layer(w, h):
        return jnp.tanh(h @ w)

    @purejit.jit
    def forward(w, h):
        return purejit.vjp(layer, w, h)

    @purejit.jit
    def backward(pullback, g):
        return pullback(g)

    rng = np.random.default_rng(0)
    w = jnp.asarray(rng.standard_normal((4, 4)).astype(np.float32)) + 0
    h = jnp.asarray(rng.standard_normal((2, 4)).astype(np.float32)) + 0
    g = jnp.ones((2, 4), jnp.float32) + 0
    for _ in range(4):
        out, pullback = forward(w, h)
        dw, dh = backward(pullback, g)
    assert type(pullback) is purejit.tree_util.Partial
    assert python_calls == ["forward", "backward"]  # one miss each
    assert (forward.stats.hits, backward.stats.hits) == (3, 3)
    want_out, want_pullback = purejit.vjp(layer, w, h)
    want_dw, want_dh = want_pullback(g)
    np.testing.assert_allclose(np.asarray(out), np.asarray(want_out), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(dw), np.asarray(want_dw), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(dh), np.asarray(want_dh), rtol=1e-5, atol=1e-6)


def test_aux_data_stays_part_of_the_key(python_calls):
    f = purejit.jit(lambda s: Scaled(s.x * s.k, s.k + 1))
    x = jnp.arange(3.0) + 0
    for k in (2.0, 3.0, 2.0, 3.0, 2.0):
        out = f(Scaled(x, k))
        assert type(out) is Scaled and out.k == k + 1
        np.testing.assert_allclose(np.asarray(out.x), np.arange(3.0) * k)
    assert len(python_calls) == 2 and f.stats.hits == 3 and f.stats.compiles == 2


def test_unhashable_aux_data_is_compared_by_value(python_calls):
    f = purejit.jit(lambda t: Tagged(t.x * len(t.tags), t.tags + ["seen"]))
    x = jnp.ones(2) + 0
    for tags in (["a"], ["a"], ["a", "b"], ["a", "b"], ["a"]):
        out = f(Tagged(x, list(tags)))
        assert type(out) is Tagged and out.tags == tags + ["seen"]
        np.testing.assert_allclose(np.asarray(out.x), np.full(2, float(len(tags))))
    assert len(python_calls) == 2 and f.stats.hits == 3


def test_a_type_registered_after_the_registries_were_made(python_calls):
    purejit.jit(lambda x: x + 1)(jnp.ones(2) + 0)  # the registries exist now

    class Late:
        def __init__(self, a, b):
            self.a, self.b = a, b

    register_pytree_node(Late, lambda n: ([n.a, n.b], None), lambda _, c: Late(*c))

    @purejit.jit
    def f(n):
        return n.a - n.b

    a, b = jnp.arange(3.0) + 0, jnp.ones(3) + 0
    for _ in range(3):
        out = f(Late(a, b))
    np.testing.assert_allclose(np.asarray(out), np.arange(3.0) - 1)
    assert python_calls.count("f") == 1 and f.stats.hits == 2
