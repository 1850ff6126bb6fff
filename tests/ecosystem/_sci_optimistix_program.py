"""optimistix on purejit (tests/ecosystem/test_sci_dropin.py): Newton's method finding the
root of a small nonlinear system, the root's gradient with respect to a parameter (implicit
differentiation through lineax), a Chord root find and a BFGS minimisation of the Rosenbrock
function. `python _sci_optimistix_program.py OUT.npz` runs it on JAX,
`python -m purejit run _sci_optimistix_program.py OUT.npz` on purejit."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

jax.config.update("jax_enable_x64", True)


def system(y, c):
    # x^2 + y^2 = c, x = y^3 (a root near (0.826, 0.939) for c = 1.5)
    return jnp.stack([y[0] ** 2 + y[1] ** 2 - c, y[0] - y[1] ** 3])


y0 = jnp.array([1.0, 1.0])
c = jnp.asarray(1.5)
out = {}

newton = optx.Newton(rtol=1e-10, atol=1e-10)
sol = optx.root_find(system, newton, y0, args=c)
out["newton_root"] = sol.value
out["newton_steps"] = np.asarray(sol.stats["num_steps"])
out["newton_result"] = np.asarray(sol.result._value)


@jax.jit
def root_sum(c):
    return jnp.sum(optx.root_find(system, newton, y0, args=c).value)


out["root_grad"] = jax.grad(root_sum)(c)
chord = optx.Chord(rtol=1e-10, atol=1e-10)
out["chord_root"] = jax.jit(lambda c: optx.root_find(system, chord, y0, args=c).value)(c)


def rosenbrock(y, args):
    return (1.0 - y[0]) ** 2 + 100.0 * (y[1] - y[0] ** 2) ** 2


bfgs = optx.BFGS(rtol=1e-8, atol=1e-8)
msol = optx.minimise(rosenbrock, bfgs, jnp.array([-1.2, 1.0]), max_steps=200)
out["bfgs_min"] = msol.value
out["bfgs_steps"] = np.asarray(msol.stats["num_steps"])
np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
