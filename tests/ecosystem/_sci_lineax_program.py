"""lineax on purejit (tests/ecosystem/test_sci_dropin.py): a small well-conditioned linear
system solved with LU, Cholesky and CG (a positive definite operator), QR (square, and the
least-squares solution of a tall system), GMRES (whose inner least squares is a QR) and
Tridiagonal, eagerly and under jit, and the gradients of LU, QR and tridiagonal solves with
respect to the operator and the vector.
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
tall = jnp.asarray(rng.normal(size=(8, 5)))
b_tall = jnp.asarray(rng.normal(size=8))
out = {}

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


# QR: jnp.linalg.qr(mode="raw") (geqrf) and lax.linalg.ormqr
out["qr"] = jax.jit(lambda mat, v: lx.linear_solve(lx.MatrixLinearOperator(mat), v, lx.QR()))(
    a, b
).value
out["qr_lstsq"] = lx.linear_solve(lx.MatrixLinearOperator(tall), b_tall, lx.QR()).value
gmres = lx.GMRES(rtol=1e-10, atol=1e-10, max_steps=100)
sol = jax.jit(lambda mat, v: lx.linear_solve(lx.MatrixLinearOperator(mat), v, gmres))(a, b)
out["gmres"] = sol.value
out["gmres_steps"] = np.asarray(sol.stats["num_steps"])

# Tridiagonal: lax.linalg.tridiagonal_solve
diag, lower, upper = (jnp.asarray(rng.normal(size=k)) for k in (6, 5, 5))
diag = diag + 4.0


def tridiagonal_solve(dg, v):
    op = lx.TridiagonalLinearOperator(dg, lower, upper)
    return lx.linear_solve(op, v, lx.Tridiagonal()).value


out["tridiagonal"] = jax.jit(tridiagonal_solve)(diag, b)
out["tridiagonal_grad_d"], out["tridiagonal_grad_b"] = jax.jit(
    jax.grad(lambda dg, v: jnp.sum(tridiagonal_solve(dg, v) ** 2), argnums=(0, 1))
)(diag, b)


def loss(solver):
    @jax.jit
    def f(mat, v):
        x = lx.linear_solve(lx.MatrixLinearOperator(mat), v, solver).value
        return jnp.sum(x**2)

    return f


out["lu_grad_a"], out["lu_grad_b"] = jax.grad(loss(lx.LU()), argnums=(0, 1))(a, b)
# jit(grad): grad of the jitted least-squares solve taken outside jit differs from JAX's by
# an ulp in a few entries (SVD's too: lineax's least-squares JVP, split into JAX's forward and
# backward programs, rounds differently from purejit's one program)
out["qr_grad_a"], out["qr_grad_b"] = jax.jit(jax.grad(loss(lx.QR()), argnums=(0, 1)))(tall, b_tall)
np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
