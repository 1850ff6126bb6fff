"""purejit.random is bit-identical to jax.random: over 1,000 drawn cases in CI (seeds vary at
run time under one compiled function per group), eagerly and under jit; the 10,000-case run
is `python -m bench.random_bits --n 10000`."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from bench import random_bits as rb

GROUPS = rb.ci_groups()
SEEDS_PER_GROUP = rb.CI_SEEDS_PER_GROUP
# On a GPU, XLA's autotuner chooses some kernels by timing them, so JAX's own bits differ
# between processes (bench/random_bits.py); there the groups run in subprocesses with XLA's
# deterministic mode, which the rest of the suite must not get (it changes GEMM and scatter
# kernels that other tests compare under).
ON_GPU = jax.default_backend() == "gpu"
GPU_SHARDS = 4


@pytest.mark.skipif(ON_GPU, reason="on GPU: test_groups_on_gpu_with_deterministic_xla")
@pytest.mark.parametrize("index", range(len(GROUPS)), ids=[rb.label(g) for g in GROUPS])
def test_group_matches_jax_random(index):
    g = GROUPS[index]
    bad = rb.run_group(g, rb.seeds_for(index, SEEDS_PER_GROUP), eager_seeds=1)
    assert not bad, "\n".join(bad[:10])


@pytest.mark.skipif(not ON_GPU, reason="GPU only (on CPU the groups run in this process)")
@pytest.mark.parametrize("shard", range(GPU_SHARDS))
def test_groups_on_gpu_with_deterministic_xla(shard):
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_gpu_deterministic_ops=true").strip()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run(
        [sys.executable, "-m", "bench.random_bits", "--ci", f"{shard}/{GPU_SHARDS}"],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]


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
