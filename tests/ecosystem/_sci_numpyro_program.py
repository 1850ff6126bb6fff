"""numpyro on purejit (tests/ecosystem/test_sci_dropin.py): NUTS on a tiny model (the mean
and scale of 8 normal observations), one chain, 200 warmup and 200 samples, with
`jit_model_args=True` and with the defaults.
`python _sci_numpyro_program.py OUT.npz` runs it on JAX,
`python -m purejit run _sci_numpyro_program.py OUT.npz` on purejit."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS

y = jnp.array([2.1, 1.7, 3.0, 2.4, 1.2, 2.8, 2.2, 1.9])


def model(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    numpyro.sample("obs", dist.Normal(mu, sigma), obs=y)


def run(**mcmc_kwargs):
    mcmc = MCMC(NUTS(model), num_warmup=200, num_samples=200, progress_bar=False, **mcmc_kwargs)
    mcmc.run(jax.random.PRNGKey(0), y, extra_fields=("num_steps", "diverging"))
    samples, extra = mcmc.get_samples(), mcmc.get_extra_fields()
    return {
        "mu": samples["mu"],
        "sigma": samples["sigma"],
        "num_steps": extra["num_steps"],
        "diverging": extra["diverging"],
    }


out = {}
# jit_model_args: the initial step's gradient is computed under jit too, so every number comes
# from compiled code (bit for bit as on JAX)
for k, v in run(jit_model_args=True).items():
    out["jit_" + k] = v
# the default computes that first gradient eagerly: JAX's eager gradient differs from its own
# jitted one by an ulp where purejit's eager one equals the jitted one, and the chains part
for k, v in run().items():
    out["default_" + k] = v
np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
