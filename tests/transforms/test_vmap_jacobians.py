"""jacfwd, jacrev, jacobian and hessian against JAX's (argnums, has_aux, holomorphic,
pytrees, under jit), their errors, and a traced program whose size does not grow with the
input's."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from vmap_harness import compare

import purejit
import purejit.numpy as jnp

rng = np.random.default_rng(0)
X = rng.standard_normal(3).astype(np.float32)
W = rng.standard_normal((3, 2)).astype(np.float32)
Z = (X + 1j * X[::-1]).astype(np.complex64)

PJ = dict(np=jnp, jacfwd=purejit.jacfwd, jacrev=purejit.jacrev, jacobian=purejit.jacobian,
          hessian=purejit.hessian, jit=purejit.jit)  # fmt: skip
JX = dict(np=jjnp, jacfwd=jax.jacfwd, jacrev=jax.jacrev, jacobian=jax.jacobian,
          hessian=jax.hessian, jit=jax.jit)  # fmt: skip


def _programs(s):
    n = s["np"]

    def tree_fn(x, w):
        return {"a": n.tanh(x @ w), "b": (x**2).sum()}

    def scalar(x):
        return (n.sin(x) * x[::-1]).sum()

    def with_aux(x):
        return n.sin(x) * 2, {"sum": x.sum()}

    out = {}
    for api in ("jacfwd", "jacrev", "jacobian"):
        jac = s[api]
        out[f"{api} argnums=(0, 1)"] = lambda jac=jac: jac(tree_fn, argnums=(0, 1))(X, W)
        out[f"{api} argnums=1"] = lambda jac=jac: jac(tree_fn, argnums=1)(X, W)
        out[f"{api} has_aux"] = lambda jac=jac: jac(with_aux, has_aux=True)(X)
        out[f"{api} holomorphic"] = lambda jac=jac: jac(lambda z: z**2 * 1j, holomorphic=True)(Z)
    out["hessian"] = lambda: s["hessian"](scalar)(X)
    out["jit(hessian)"] = lambda: s["jit"](s["hessian"](scalar))(X)
    out["jacfwd(jacrev)"] = lambda: s["jacfwd"](s["jacrev"](scalar))(X)
    out["hessian argnums=(0, 1)"] = lambda: s["hessian"](
        lambda x, w: n.tanh(x @ w).sum(), argnums=(0, 1)
    )(X, W)
    return out


def test_jacobians_match_jax():
    got, want = _programs(PJ), _programs(JX)
    for name in got:
        compare(got[name](), want[name](), name, rtol=1e-5)


def test_program_size_does_not_grow_with_the_input():
    def ops(jac, n):
        f = purejit.jit(jac(lambda v: jnp.tanh(v * 2).cumsum()))
        return f.lower(np.zeros(n, np.float32)).traced.op_count()

    for jac in (purejit.jacfwd, purejit.jacrev, purejit.hessian):
        assert ops(jac, 4) == ops(jac, 256), jac.__name__


def test_errors_like_jax():
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        purejit.jacfwd(lambda x: x)(np.arange(3))
    with pytest.raises(TypeError, match="jacrev requires real-valued inputs"):
        purejit.jacrev(lambda x: x)(Z)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        purejit.jacrev(lambda x: x * 1j)(X)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype"):
        purejit.jacfwd(lambda x: x, holomorphic=True)(X)
    with pytest.raises(ValueError, match="argnums=3 out of range"):
        purejit.jacfwd(lambda x: x, argnums=3)(X)
