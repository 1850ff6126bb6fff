"""Derivatives through control flow against JAX: cond, switch, scan (forward and reverse,
with loop constants and stacked residuals), fori_loop, lax.map, while_loop (forward mode;
reverse mode is an error naming scan/fori_loop), grad inside a scan body."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from ad_compare import assert_tree_close, check_ad, rand_like

import purejit
import purejit.numpy as jnp
from purejit import lax

X = rand_like(np.zeros((3,), np.float32), 1)
W = rand_like(np.zeros((3, 3), np.float32), 2) * 0.5
XS = rand_like(np.zeros((5, 3), np.float32), 3)


def test_cond_and_switch_match_jax():
    def make(mod, lx):
        def f(x, w):
            a = lx.cond(x[0] > 0, lambda v: mod.sin(v) * w[0], lambda v: v * v, x)
            b = lx.cond(x[1] < 0, lambda v: v @ w, lambda v: mod.exp(v[::-1]), x)
            c = lx.switch(2, [lambda v: v, lambda v: v * 2.0, lambda v: mod.tanh(v @ w)], x)
            d = lx.cond(True, lambda v: v[0] * 3.0, lambda v: mod.max(v), x)  # no residuals
            return [a, b, c, d]

        return f

    check_ad(make(jnp, lax), make(jjnp, jax.lax), X, W)


def test_scan_matches_jax_forward_and_reverse():
    def make(mod, lx):
        def f(x, w, xs):
            def step(h, xt):
                h2 = mod.tanh(h @ w + xt)
                return h2, (h2 * xt).sum()

            h, ys = lx.scan(step, x, xs)
            h_rev, ys_rev = lx.scan(step, x, xs, reverse=True)
            h0, _ = lx.scan(step, mod.zeros(3), xs)  # a constant initial carry
            return [h, ys, h_rev, ys_rev, h0]

        return f

    check_ad(make(jnp, lax), make(jjnp, jax.lax), X, W, XS)


def test_fori_loop_map_and_grad_in_scan_body():
    def make(mod, lx, grad):
        def f(x, w):
            y = lx.fori_loop(0, 4, lambda i, h: mod.sin(h @ w) + i, x)
            z = lx.map(lambda r: mod.sum(r**3), w)

            def step(c, r):
                g = grad(lambda v: mod.sum(mod.sin(v * r)))(c)
                return c - 0.1 * g, g.sum()

            c, gs = lx.scan(step, x, w)
            return [y, z, c, gs]

        return f

    check_ad(make(jnp, lax, purejit.grad), make(jjnp, jax.lax, jax.grad), X, W)


def test_while_loop_forward_mode_and_reverse_mode_error():
    def make(mod, lx):
        def f(x):
            return lx.while_loop(lambda c: c[1] < 3, lambda c: (mod.sin(c[0]) * 1.5, c[1] + 1),
                                 (x, 0))[0]  # fmt: skip

        return f

    check_ad(make(jnp, lax), make(jjnp, jax.lax), X, modes=("jvp",))
    with pytest.raises(purejit.PurejitTypeError, match="fori_loop.*scan|scan.*fori_loop"):
        purejit.grad(lambda x: make(jnp, lax)(x).sum())(X)
    # the loop's value is fine under grad when nothing differentiable flows through it
    n = purejit.grad(lambda x: x.sum() * lax.while_loop(lambda i: i < 3, lambda i: i + 1, 0))(X)
    assert_tree_close(np.full(3, 3, np.float32), n)
