"""lineax on purejit (tests/ecosystem/test_sci_dropin.py): a small well-conditioned linear
system solved with LU, Cholesky and CG (a positive definite operator), eagerly and under
jit, and the gradient of a solve's result with respect to the matrix.
`python _sci_lineax_program.py OUT.npz` runs it on JAX,
`python -m purejit run _sci_lineax_program.py OUT.npz` on purejit."""

import sys

import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np

jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(0)
m = rng.normal(size=(6, 6))
a = jnp.asarray(m + 6.0 * np.eye(6))  # diagonally dominant: well conditioned
spd = jnp.asarray(m @ m.T + 6.0 * np.eye(6))  # symmetric positive definite
b = jnp.asarray(rng.normal(size=6))
out = {}
# lx.QR is left out: it calls jnp.linalg.qr(mode="raw"), which purejit lacks (no geqrf op)

op = lx.MatrixLinearOperator(a)
out["lu"] = lx.linear_solve(op, b, lx.LU()).value
spd_op = lx.MatrixLinearOperator(spd, lx.positive_semidefinite_tag)
out["cholesky"] = lx.linear_solve(spd_op, b, lx.Cholesky()).value
cg = lx.CG(rtol=1e-10, atol=1e-10, max_steps=50)
sol = jax.jit(lambda mat, v: lx.linear_solve(
    lx.MatrixLinearOperator(mat, lx.positive_semidefinite_tag), v, cg))(spd, b)  # fmt: skip
out["cg"] = sol.value
out["cg_steps"] = np.asarray(sol.stats["num_steps"])
out["cg_result"] = np.asarray(sol.result._value)


@jax.jit
def loss(mat, v):
    x = lx.linear_solve(lx.MatrixLinearOperator(mat), v, lx.LU()).value
    return jnp.sum(x**2)


out["lu_grad_a"], out["lu_grad_b"] = jax.grad(loss, argnums=(0, 1))(a, b)
np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
