"""`jax.random` in drop-in mode: JAX's samplers take `out_sharding=` (explicit sharding, the
sharding of the result in its type); purejit's do not, as purejit has no sharding in types.
Libraries pass it through (Flax's `nnx.Dropout` gives `out_sharding=None`), so the view's
samplers take the keyword: None is the default and runs purejit's sampler, anything else
raises NotImplementedError naming the fix."""

from __future__ import annotations

import functools

from purejit import random as _random

# JAX 0.10's samplers with an `out_sharding` keyword
SAMPLERS = (
    "ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare", "dirichlet",
    "exponential", "f", "gamma", "generalized_normal", "geometric", "gumbel", "laplace",
    "loggamma", "logistic", "lognormal", "maxwell", "multivariate_normal", "normal",
    "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint", "rayleigh",
    "t", "triangular", "truncated_normal", "uniform", "wald",
)  # fmt: skip


def _with_out_sharding(name: str, fn):
    @functools.wraps(fn)
    def sampler(*args, out_sharding=None, **kwargs):
        if out_sharding is not None:
            raise NotImplementedError(
                f"random.{name}: out_sharding= needs JAX's explicit sharding (sharding in "
                "types), which purejit does not have; place the result with device_put or "
                "jit's out_shardings"
            )
        return fn(*args, **kwargs)

    return sampler


def overrides() -> dict:
    """The `jax.random` view's samplers that take `out_sharding`."""
    return {n: _with_out_sharding(n, getattr(_random, n)) for n in SAMPLERS if hasattr(_random, n)}
