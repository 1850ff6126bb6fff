"""Bit-identity of purejit.random against jax.random over many drawn cases.

A *group* is one sampler at one shape, dtype and parameter set; a *case* is one seed. Each
group compiles once per library: a jitted function of the seed (the key is made inside from
the traced seed) and of the parameters (traced arguments) runs every case, in purejit and in
JAX, and the bits are compared. Eager calls are compared on a few seeds of every group too.

    python -m bench.random_bits --n 10000        # 10,000 cases, prints mismatches

tests/random/test_bits.py runs the same groups with fewer seeds in CI.

On a GPU, XLA's autotuner picks between kernels for some fusions by timing them, so JAX's own
bits can change from one process to the next (jax.random.maxwell float32 on an H200: 12% of
values one ulp apart, depending on whether a reduction ran as a Triton kernel); run as a
script, this module asks XLA for deterministic kernels before jax starts. The test suite
cannot set that flag for every test (it changes GEMM and scatter choices the other tests
compare under), so on a GPU tests/random/test_bits.py runs `--ci K/N` in subprocesses.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import ml_dtypes
import numpy as np

import purejit
import purejit.random as pr

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def _g(name, shape=(), dtype=None, *params, **kw):
    """A group: sampler `name`, static shape/dtype/kw, traced array `params`."""
    return (name, shape, dtype, tuple(np.asarray(p) for p in params), kw)


def groups() -> list:
    gs = []
    for dt in (F32, F16, BF16):
        for shape in ((), (1,), (7,), (3, 5), (0,), (2, 0, 3), (129,)):
            gs += [_g("uniform", shape, dt), _g("normal", shape, dt)]
        gs += [
            _g("uniform", (33,), dt, np.float32(-2.5), np.float32(7.0)),
            _g("truncated_normal", (65,), dt, np.float32(-2.0), np.float32(2.0)),
            _g("truncated_normal", (4, 3), dt, np.array([-1.0, 0.0, 0.5], np.float32), 3.0),
            _g("exponential", (31,), dt),
            _g("laplace", (31,), dt),
            _g("logistic", (31,), dt),
            _g("gumbel", (31,), dt),
            _g("gumbel", (17,), dt, mode="high"),
            _g("gumbel", (19,), dt, mode="highest"),
            _g("categorical", (), None, np.linspace(-1, 1, 11).astype(dt)),
        ]
    gs += [
        _g("bits", (9,), np.uint32),
        _g("bits", (9,), np.uint8),
        _g("bits", (5, 2), np.uint16),
        _g("normal", (6,), np.complex64),
        _g("bernoulli", (50,), None, np.float32(0.3)),
        _g("bernoulli", (5, 2), None, np.array([0.1, 0.9], np.float32)),
        _g("bernoulli", (20,), None, np.float32(0.7), mode="high"),
        _g("rademacher", (21,), np.int32),
        _g("rademacher", (8,), np.int8),
        _g("categorical", (4, 5), None, np.random.default_rng(1).normal(size=(5, 7)).astype(F32)),
        _g(
            "categorical",
            (),
            None,
            np.random.default_rng(2).normal(size=(3, 6)).astype(F32),
            axis=0,
        ),
        _g(
            "categorical",
            (3, 5),
            None,
            np.random.default_rng(3).normal(size=(5, 4)).astype(F32),
            replace=False,
        ),
        _g("randint", (40,), np.int32, np.int32(0), np.int32(10)),
        _g("randint", (40,), np.int32, np.int32(-5), np.int32(2**31 - 1)),
        _g("randint", (13,), np.int32, np.int32(7), np.int32(3)),
        _g("randint", (40,), np.uint32, np.int32(3), np.int32(1000)),
        _g("randint", (40,), np.int8, np.int32(-200), np.int32(300)),
        _g("randint", (40,), np.uint8, np.int32(0), np.int32(256)),
        _g(
            "randint",
            (6, 3),
            np.int16,
            np.array([0, 10, -50], np.int32),
            np.array([5, 20, 2000], np.int32),
        ),
        _g("permutation", (), None, np.arange(10)),
        _g("permutation", (), None, np.arange(12).reshape(3, 4)),
        _g("permutation", (), None, np.arange(12.0).reshape(3, 4), axis=1, independent=True),
        _g("permutation_int", (), None, n=3000),
        _g("choice", (5,), None, np.arange(10)),
        _g("choice", (3, 2), None, np.arange(20.0), replace=False),
        _g("choice", (4,), None, np.arange(8), np.linspace(0.1, 1, 8).astype(F32)),
        _g("choice", (4,), None, np.arange(8), np.linspace(0.1, 1, 8).astype(F32), replace=False),
        _g("gamma", (9,), F32, np.float32(2.5)),
        _g("gamma", (4, 3), F32, np.array([0.1, 1.0, 7.0], np.float32)),
        _g("loggamma", (8,), F32, np.float32(0.3)),
        _g("beta", (8,), F32, np.float32(0.5), np.float32(2.0)),
        _g("dirichlet", (5,), F32, np.array([0.5, 1.0, 3.0], np.float32)),
        _g("poisson", (20,), np.int32, np.float32(3.5)),
        _g("poisson", (20,), np.int32, np.float32(50.0)),
        _g("poisson", (5, 4), np.int32, np.array([0.0, 1.0, 12.0, 300.0], np.float32)),
        _g("generalized_normal", (10,), F32, np.float32(1.5)),
        _g("ball", (4,), F32, np.float32(2.0), d=3),
        _g("binomial", (20,), F32, np.float32(10.0), np.float32(0.3)),
        _g("binomial", (20,), F32, np.float32(200.0), np.float32(0.7)),
        _g(
            "binomial",
            (9,),
            F32,
            np.array([0, 3, 30, 500, -1, np.nan, np.inf, 1e4, 7.5], np.float32),
            np.float32(0.45),
        ),
        _g(
            "binomial",
            (7,),
            F32,
            np.float32(40.0),
            np.array([0.1, 0.5, 0.9, -0.1, np.nan, 1.0, 0.0], np.float32),
        ),
        _g("binomial", (4, 3), F16, np.array([5, 50, 100], np.float16), np.float16(0.35)),
        _g("binomial", (11,), BF16, np.float32(60.0), np.array(0.55, BF16)),
        _g("orthogonal", (), F32, n=4),
        _g("orthogonal", (2,), F32, n=3, m=5),
        _g("orthogonal", (), F32, n=6, m=2),
    ]
    gs += [
        _g("cauchy", (33,), F32),
        _g("cauchy", (17,), F16),
        _g("cauchy", (17,), BF16),
        _g("pareto", (21,), F32, np.float32(2.5)),
        _g("rayleigh", (3, 2), F32, np.array([1.0, 2.5], np.float32)),
        _g("rayleigh", (9,), BF16, np.array(1.5, BF16)),
        _g("weibull_min", (19,), F32, np.float32(2.0), np.float32(1.5)),
        _g("triangular", (25,), F32, np.float32(-1.0), np.float32(0.3), np.float32(2.0)),
        _g("lognormal", (15,), F32, np.float32(0.5)),
        _g("lognormal", (4,), np.complex64, np.float32(0.7)),
        _g("geometric", (30,), np.int32, np.float32(0.2)),
        _g("geometric", (4, 3), np.int8, np.array([0.05, 0.5, 0.9], np.float32)),
        _g("wald", (23,), F32, np.float32(1.3)),
        _g("maxwell", (11,), F32),
        _g("maxwell", (5,), F16),
        _g("maxwell", (30000,), F32),  # 90,000 counters: the unrolled hash on CPU
        _g("double_sided_maxwell", (3,), F32, np.float32(1.0), np.float32(2.0)),
        _g("double_sided_maxwell", (), F32, np.array([1.0, -1.0], np.float32), np.float32(0.5)),
        _g("chisquare", (7,), F32, np.float32(3.0)),
        _g("f", (6,), F32, np.float32(3.0), np.float32(5.0)),
        _g("t", (6,), F32, np.float32(4.0)),
        _g("multinomial", (), F32, np.float32(20.0), np.array([0.2, 0.3, 0.5], np.float32)),
        _g(
            "multinomial",
            (),
            np.int32,
            np.array([5.0, 100.0], np.float32),
            np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]], np.float32),
        ),
        _g("clone", (), None),
    ]
    cov = _spd(4)
    for method in ("cholesky", "eigh", "svd"):
        gs += [
            _g("multivariate_normal", (), None, np.arange(4.0, dtype=F32), cov, method=method),
            _g("multivariate_normal", (5,), F32, np.zeros(4, F32), cov, method=method),
            _g("multivariate_normal", (2, 3), F32, np.ones((3, 4), F32), cov, method=method),
            _g("multivariate_normal", (3,), F16, np.ones(4, F32), cov, method=method),
        ]
    return gs


def _spd(n: int) -> np.ndarray:
    """A well-conditioned symmetric positive definite float32 matrix."""
    a = np.random.default_rng(7).normal(size=(n, n))
    return (a @ a.T / n + np.eye(n)).astype(np.float32)


# the call of each sampler from (random module, key, shape, dtype, params, kw)
def _call(mod, name, key, shape, dtype, params, kw):
    if name == "uniform":
        return mod.uniform(key, shape, dtype, *params)
    if name in ("normal", "exponential", "laplace", "logistic", "rademacher", "bits"):
        return getattr(mod, name)(key, shape, dtype)
    if name == "gumbel":
        return mod.gumbel(key, shape, dtype, **kw)
    if name == "truncated_normal":
        return mod.truncated_normal(key, *params, shape, dtype)
    if name == "bernoulli":
        return mod.bernoulli(key, params[0], shape, **kw)
    if name == "categorical":
        return mod.categorical(key, params[0], shape=shape or None, **kw)
    if name == "randint":
        return mod.randint(key, shape, *params, dtype)
    if name == "permutation":
        return mod.permutation(key, params[0], **kw)
    if name == "permutation_int":
        return mod.permutation(key, kw["n"])
    if name == "choice":
        p = params[1] if len(params) > 1 else None
        return mod.choice(key, params[0], shape, p=p, **kw)
    if name in ("gamma", "loggamma"):
        return getattr(mod, name)(key, params[0], shape, dtype)
    if name == "beta":
        return mod.beta(key, *params, shape, dtype)
    if name == "dirichlet":
        return mod.dirichlet(key, params[0], shape, dtype)
    if name == "poisson":
        return mod.poisson(key, params[0], shape, dtype)
    if name == "generalized_normal":
        return mod.generalized_normal(key, params[0], shape, dtype)
    if name == "binomial":
        return mod.binomial(key, *params, shape, dtype)
    if name == "orthogonal":
        return mod.orthogonal(key, kw["n"], shape, dtype, m=kw.get("m"))
    if name == "multivariate_normal":
        return mod.multivariate_normal(key, *params, shape or None, dtype, method=kw["method"])
    if name in ("cauchy", "maxwell"):
        return getattr(mod, name)(key, shape, dtype)
    if name in ("pareto", "rayleigh", "lognormal", "geometric", "wald", "chisquare", "t"):
        return getattr(mod, name)(key, *params, shape, dtype)
    if name in ("weibull_min", "double_sided_maxwell"):
        return getattr(mod, name)(key, *params, shape, dtype)
    if name in ("triangular", "f"):
        return getattr(mod, name)(key, *params, shape, dtype)
    if name == "multinomial":
        return mod.multinomial(key, *params, dtype=dtype)
    if name == "clone":
        return mod.key_data(mod.clone(key))
    if name == "ball":
        return mod.ball(key, kw["d"], params[0], shape, dtype)
    raise KeyError(name)


def label(group) -> str:
    name, shape, dtype, params, kw = group
    dt = np.dtype(dtype).name if dtype is not None else "-"
    extra = "".join(f",{k}={v}" for k, v in kw.items())
    pshapes = ",".join(str(list(p.shape)) for p in params)
    return f"{name}{list(shape)}:{dt}({pshapes}{extra})"


def _bits(x) -> np.ndarray:
    x = np.asarray(x)
    return np.ascontiguousarray(x).reshape(-1).view(np.uint8) if x.size else x.reshape(-1)


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(_bits(a), _bits(b))


def _where_differ(got: np.ndarray, want: np.ndarray, shown: int = 3) -> str:
    """How many elements differ, and the first few: flat index, purejit's and JAX's value."""
    g, w = got.reshape(-1), want.reshape(-1)
    gb = g.view(np.uint8).reshape(g.size, -1) if g.size else g
    wb = w.view(np.uint8).reshape(w.size, -1) if w.size else w
    idx = np.nonzero(np.any(gb != wb, axis=-1))[0] if g.size else []
    first = ", ".join(f"[{i}] {g[i]!r} vs {w[i]!r}" for i in idx[:shown])
    return f"{len(idx)} of {g.size} differ: {first}"


def run_group(group, seeds: np.ndarray, *, eager_seeds: int = 2) -> list[str]:
    """Compare one group over `seeds`; returns a message per mismatching case."""
    name, shape, dtype, params, kw = group

    def pj_one(seed, *ps):
        return _call(pr, name, pr.key(seed), shape, dtype, ps, kw)

    def jx_one(seed, *ps):
        return _call(jax.random, name, jax.random.key(seed), shape, dtype, ps, kw)

    pj, jx = purejit.jit(pj_one), jax.jit(jx_one)
    bad = []
    for s in seeds:
        got, want = np.asarray(pj(s, *params)), np.asarray(jx(s, *params))
        if got.shape != want.shape or got.dtype != want.dtype:
            return [
                f"{label(group)}: {got.dtype}{list(got.shape)} vs {want.dtype}{list(want.shape)}"
            ]
        if not np.array_equal(_bits(got), _bits(want)):
            bad.append(f"{label(group)} seed={int(s)} (jit): {_where_differ(got, want)}")
    for s in seeds[:eager_seeds]:
        a = _call(pr, name, pr.key(int(s)), shape, dtype, params, kw)
        b = _call(jax.random, name, jax.random.key(int(s)), shape, dtype, params, kw)
        if not _same(a, b):
            bad.append(f"{label(group)} seed={int(s)} (eager): differs from jax.random")
    return bad


def seeds_for(group_index: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(1000 + group_index)
    s = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    s[: min(n, 3)] = [0, 1, -1][: min(n, 3)]
    return s


# the loop samplers (gamma family, poisson) compile for seconds each: CI keeps one of each
# kind; the full table runs with --n
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


def ci_groups() -> list:
    """The groups CI runs (tests/random/test_bits.py): every sampler, fewer heavy ones."""
    out = []
    for g in groups():
        name, shape = g[0], g[1]
        if name in _HEAVY and label(g) not in _KEEP_HEAVY:
            continue
        if name in ("uniform", "normal") and len(shape) == 1 and shape[0] in (1, 7):
            continue  # () , (3, 5), (0,), (2, 0, 3) and (129,) cover the layouts
        out.append(g)
    return out


CI_SEEDS_PER_GROUP = -(-1000 // len(ci_groups()))


def run_ci(shard: int, shards: int) -> list[str]:
    """CI's cases of every `shards`-th group from `shard` on; the mismatch messages."""
    bad = []
    for i, g in enumerate(ci_groups()):
        if i % shards == shard:
            bad += run_group(g, seeds_for(i, CI_SEEDS_PER_GROUP), eager_seeds=1)
    return bad


def run(n_cases: int, select=None, log=print) -> tuple[int, list[str]]:
    gs = [g for g in groups() if select is None or select(g)]
    per = max(1, -(-n_cases // len(gs)))
    bad, total = [], 0
    for i, g in enumerate(gs):
        t = time.perf_counter()
        msgs = run_group(g, seeds_for(i, per))
        total += per
        bad += msgs
        log(f"{label(g):60s} {per} cases  {'ok' if not msgs else f'{len(msgs)} BAD'}  "
            f"{time.perf_counter() - t:.1f}s")  # fmt: skip
    return total, bad


def _deterministic_xla():
    """Ask XLA for deterministic kernels; read when jax's backend starts, which importing
    this module does not do."""
    flag = "--xla_gpu_deterministic_ops=true"
    if flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()


def main(argv=None) -> int:
    _deterministic_xla()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10000, help="number of cases (seeds x groups)")
    ap.add_argument("--only", default=None, help="run the groups whose sampler has this name")
    ap.add_argument("--ci", default=None, metavar="K/N", help="CI's cases, shard K of N")
    args = ap.parse_args(argv)
    if args.ci:
        k, n = (int(v) for v in args.ci.split("/"))
        bad = run_ci(k, n)
        for m in bad:
            print("MISMATCH", m)
        print(f"CI shard {k}/{n} on {jax.default_backend()}: {len(bad)} mismatching cases")
        return 1 if bad else 0
    select = (lambda g: g[0] == args.only) if args.only else None
    total, bad = run(args.n, select)
    for m in bad:
        print("MISMATCH", m)
    print(f"{total} cases in {len(groups())} groups on {jax.default_backend()}: "
          f"{len(bad)} mismatches")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["ci_groups", "groups", "run", "run_ci", "run_group"]
