"""purejit.random is bit-identical to jax.random: over 1,000 drawn cases in CI (seeds vary at
run time under one compiled function per group), eagerly and under jit; the 10,000-case run
is `python -m bench.random_bits --n 10000`."""

from __future__ import annotations

import numpy as np
import pytest

from bench import random_bits as rb

# the loop samplers (gamma family, poisson) compile for seconds each: CI keeps one of each
# kind; the full table runs in bench.random_bits
_HEAVY = {"gamma", "loggamma", "beta", "dirichlet", "generalized_normal", "ball", "poisson"}
_HEAVY |= {"binomial", "chisquare", "f", "t", "multinomial"}
_KEEP_HEAVY = {"gamma[4, 3]:float32([3])", "poisson[5, 4]:int32([4])", "beta[8]:float32([],[])"}
_KEEP_HEAVY |= {
    "binomial[9]:float32([9],[])",
    "binomial[7]:float32([],[7])",
    "binomial[4, 3]:float16([3],[])",
    "chisquare[7]:float32([])",
    "f[6]:float32([],[])",
    "t[6]:float32([])",
    "multinomial[]:int32([2],[2, 3])",
}


def _ci_groups():
    out = []
    for g in rb.groups():
        name, shape = g[0], g[1]
        if name in _HEAVY and rb.label(g) not in _KEEP_HEAVY:
            continue
        if name in ("uniform", "normal") and len(shape) == 1 and shape[0] in (1, 7):
            continue  # () , (3, 5), (0,), (2, 0, 3) and (129,) cover the layouts
        out.append(g)
    return out


GROUPS = _ci_groups()
SEEDS_PER_GROUP = -(-1000 // len(GROUPS))


@pytest.mark.parametrize("index", range(len(GROUPS)), ids=[rb.label(g) for g in GROUPS])
def test_group_matches_jax_random(index):
    g = GROUPS[index]
    bad = rb.run_group(g, rb.seeds_for(index, SEEDS_PER_GROUP), eager_seeds=1)
    assert not bad, "\n".join(bad[:10])


def test_ci_runs_at_least_1000_cases_over_every_sampler():
    assert len(GROUPS) * SEEDS_PER_GROUP >= 1000
    names = {g[0] for g in GROUPS}
    for n in ("uniform", "normal", "bits", "truncated_normal", "bernoulli", "categorical",
              "randint", "permutation", "choice", "gumbel", "exponential", "laplace",
              "logistic", "rademacher", "gamma", "beta", "poisson", "binomial", "orthogonal",
              "multivariate_normal", "cauchy", "pareto", "rayleigh", "weibull_min",
              "triangular", "lognormal", "geometric", "wald", "maxwell",
              "double_sided_maxwell", "chisquare", "f", "t", "multinomial", "clone"):  # fmt: skip
        assert n in names, n
    dtypes = {np.dtype(g[2]).name for g in GROUPS if g[2] is not None}
    assert {"float32", "float16", "bfloat16"} <= dtypes
    shapes = {g[1] for g in GROUPS}
    assert {(), (0,), (2, 0, 3), (129,)} <= shapes
