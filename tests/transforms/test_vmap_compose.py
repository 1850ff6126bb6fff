"""vmap composed with autodiff against JAX: per-example gradients (`vmap(grad(f))`),
`grad(vmap(f))`, `jit` around both, and functions with custom derivatives and checkpoints
inside vmap, differentiated either way."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
from vmap_harness import compare

import purejit
import purejit.numpy as jnp

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3)).astype(np.float32)
W = rng.standard_normal((3, 2)).astype(np.float32)
Y = np.float32(1.5)


def _sides():
    @purejit.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), 2.0 * t[0]))

    @jax.custom_jvp
    def g(x):
        return jjnp.sin(x)

    g.defjvp(lambda p, t: (g(p[0]), 2.0 * t[0]))

    @purejit.custom_vjp
    def h(x, y):
        return jnp.sin(x) * y

    h.defvjp(lambda x, y: (h(x, y), (x, y)), lambda r, ct: (3.0 * ct * r[1], (ct * r[0]).sum()))

    @jax.custom_vjp
    def k(x, y):
        return jjnp.sin(x) * y

    k.defvjp(lambda x, y: (k(x, y), (x, y)), lambda r, ct: (3.0 * ct * r[1], (ct * r[0]).sum()))
    pj = dict(np=jnp, vmap=purejit.vmap, grad=purejit.grad, jvp=purejit.jvp,
              checkpoint=purejit.checkpoint, jit=purejit.jit, cjvp=f, cvjp=h)  # fmt: skip
    jx = dict(np=jjnp, vmap=jax.vmap, grad=jax.grad, jvp=jax.jvp, checkpoint=jax.checkpoint,
              jit=jax.jit, cjvp=g, cvjp=k)  # fmt: skip
    return pj, jx


def _programs(s):
    n, vmap, grad = s["np"], s["vmap"], s["grad"]

    def loss(w, x):
        return n.tanh(x @ w).sum()

    per_example = vmap(grad(loss), in_axes=(None, 0))
    return {
        "vmap(grad)": lambda: per_example(W, X),
        "jit(vmap(grad))": lambda: s["jit"](per_example)(W, X),
        "grad(vmap)": lambda: grad(lambda w: vmap(loss, in_axes=(None, 0))(w, X).sum())(W),
        "vmap(grad(vmap))": lambda: vmap(
            grad(lambda w, xs: vmap(loss, in_axes=(None, 0))(w, xs).sum()), in_axes=(None, 0)
        )(W, X.reshape(2, 2, 3)),
        "custom_jvp vmap(grad)": lambda: vmap(grad(lambda v: s["cjvp"](v).sum()))(X),
        "custom_jvp grad(vmap)": lambda: grad(lambda v: vmap(s["cjvp"])(v).sum())(X),
        "custom_jvp jvp(vmap)": lambda: s["jvp"](vmap(s["cjvp"]), (X,), (X,)),
        "custom_vjp grad(vmap)": lambda: grad(
            lambda v, y: vmap(s["cvjp"], in_axes=(0, None))(v, y).sum(), argnums=(0, 1)
        )(X, Y),
        "custom_vjp vmap(grad)": lambda: vmap(grad(lambda v: s["cvjp"](v, Y).sum()))(X),
        "checkpoint grad(vmap)": lambda: grad(
            lambda v: vmap(s["checkpoint"](lambda u: n.sin(n.sin(u))))(v).sum()
        )(X),
    }


def test_vmap_and_autodiff_compose_like_jax():
    pj, jx = _sides()
    got, want = _programs(pj), _programs(jx)
    for name in got:
        compare(got[name](), want[name](), name, rtol=1e-5)
