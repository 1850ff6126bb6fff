"""Every other public lineax solver on purejit (tests/ecosystem/test_sci_dropin.py): SVD,
Diagonal, Triangular, Normal (with CG and with Cholesky), BiCGStab, LSMR and
AutoLinearSolver on small well-conditioned float64 systems, each compiled once with the
gradient of |x|^2 in the operator and the vector. `python _sci_lineax_solvers_program.py
OUT.npz` runs it on JAX, `python -m purejit run _sci_lineax_solvers_program.py OUT.npz` on
purejit."""

import sys

import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np

jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(1)
square = jnp.asarray(rng.normal(size=(6, 6)) + 6.0 * np.eye(6))
tall = jnp.asarray(rng.normal(size=(8, 5)))
diag = jnp.asarray(rng.normal(size=6) + 4.0)
b6, b8 = jnp.asarray(rng.normal(size=6)), jnp.asarray(rng.normal(size=8))
tol = {"rtol": 1e-10, "atol": 1e-10, "max_steps": 100}

CASES = {
    "svd": (lx.MatrixLinearOperator, tall, b8, lx.SVD()),
    "diagonal": (lx.DiagonalLinearOperator, diag, b6, lx.Diagonal()),
    "triangular": (
        lambda m: lx.MatrixLinearOperator(jnp.triu(m), lx.upper_triangular_tag),
        square,
        b6,
        lx.Triangular(),
    ),
    "normal_cg": (lx.MatrixLinearOperator, tall, b8, lx.Normal(lx.CG(**tol))),
    "normal_cholesky": (lx.MatrixLinearOperator, tall, b8, lx.Normal(lx.Cholesky())),
    "bicgstab": (lx.MatrixLinearOperator, square, b6, lx.BiCGStab(**tol)),
    "lsmr": (lx.MatrixLinearOperator, tall, b8, lx.LSMR(**tol)),
    "auto": (lx.MatrixLinearOperator, tall, b8, lx.AutoLinearSolver(well_posed=None)),
}
out = {}
for name, (make, operand, vector, solver) in CASES.items():

    def solve(m, v, make=make, solver=solver):
        return lx.linear_solve(make(m), v, solver).value

    def both(m, v, solve=solve):
        grads = jax.grad(lambda m, v: jnp.sum(solve(m, v) ** 2), argnums=(0, 1))(m, v)
        return solve(m, v), *grads

    out[name], out[name + "_grad_a"], out[name + "_grad_b"] = jax.jit(both)(operand, vector)
np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
