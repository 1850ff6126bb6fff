"""purejit.random against jax.random: generation time and compile time.

    python -m bench.random --out DIR [--size N] [--procs P] [--compile-only]

* generation: `normal` and `uniform` of N float32 values (default 64M on GPU, 4M on CPU)
  and `split` of N/64 keys (1M at the default GPU size), each jitted with the key as an
  argument; steady state (warm-up, then many calls between two synchronisations); purejit
  and JAX in the same process, interleaved.
* compile: a program of 100 sampler calls (normal, uniform, bernoulli, randint, gumbel,
  truncated_normal, ..., each with a fresh split key) lowered and compiled in fresh
  processes with empty caches, purejit and JAX alternating, P processes each.

Writes DIR/random_<platform>.md and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SAMPLERS = ["normal", "uniform", "bernoulli", "randint", "gumbel", "truncated_normal",
            "exponential", "laplace", "logistic", "rademacher"]  # fmt: skip


def _program(random, n_calls: int = 100):
    def f(key):
        out = []
        for i in range(n_calls):
            key, sub = random.split(key)
            name = SAMPLERS[i % len(SAMPLERS)]
            if name == "bernoulli":
                out.append(random.bernoulli(sub, 0.3, (64,)))
            elif name == "randint":
                out.append(random.randint(sub, (64,), 0, 100))
            elif name == "truncated_normal":
                out.append(random.truncated_normal(sub, -2.0, 2.0, (64,)))
            else:
                out.append(getattr(random, name)(sub, (64,)))
        return out

    return f


def _compile_child(lib: str) -> float:
    """Lower + compile the 100-call program once in this (fresh) process; seconds."""
    import numpy as np

    if lib == "jax":
        import jax

        jax.config.update("jax_enable_compilation_cache", False)
        key = jax.random.key(0)
        jax.jit(lambda x: x + 1)(np.float32(0)).block_until_ready()  # start the backend
        t = time.perf_counter()
        jax.jit(_program(jax.random)).lower(key).compile()
        return time.perf_counter() - t
    import purejit
    import purejit.random as pr

    key = pr.key(0)
    purejit.jit(lambda x: x + 1)(np.float32(0))
    t = time.perf_counter()
    off = [p for p in os.environ.get("BENCH_RANDOM_DISABLE_PASSES", "").split(",") if p]
    opts = {"disable_passes": off} if off else None
    purejit.jit(_program(pr), compiler_options=opts).lower(key).compile()
    return time.perf_counter() - t


def _timeit(fn, *args, reps: int) -> float:
    out = fn(*args)
    _block(out)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps):
            out = fn(*args)
        _block(out)
        best = min(best, (time.perf_counter() - t) / reps)
    return best


def _block(x):
    if hasattr(x, "block_until_ready"):
        x.block_until_ready()
    else:
        import numpy as np

        np.asarray(x)


def generation(size: int) -> list[tuple[str, float, float]]:
    import jax

    import purejit
    import purejit.random as pr

    n_keys = max(1, size // 64)
    rows = []
    cases = [
        ("normal", f"{size:,} float32", lambda r: lambda k: r.normal(k, (size,))),
        ("uniform", f"{size:,} float32", lambda r: lambda k: r.uniform(k, (size,))),
        ("split", f"{n_keys:,} keys", lambda r: lambda k: r.key_data(r.split(k, n_keys))),
    ]
    for name, what, make in cases:
        pj, jx = purejit.jit(make(pr)), jax.jit(make(jax.random))
        kp, kj = pr.key(0), jax.random.key(0)
        reps = 5 if size >= 2**24 else 20
        tp, tj = [], []
        for _ in range(3):  # interleaved
            tp.append(_timeit(pj, kp, reps=reps))
            tj.append(_timeit(jx, kj, reps=reps))
        rows.append((f"{name} ({what})", min(tp), min(tj)))
    return rows


def compile_times(procs: int) -> tuple[list[float], list[float]]:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PUREJIT_CACHE_DIR", None)
    out = {"purejit": [], "jax": []}
    for _ in range(procs):
        for lib in ("purejit", "jax"):
            r = subprocess.run(
                [sys.executable, "-m", "bench.random", "--child", lib],
                capture_output=True, text=True, env=env, cwd=root, timeout=900,
            )  # fmt: skip
            if r.returncode != 0:
                raise RuntimeError(r.stderr[-2000:])
            out[lib].append(json.loads(r.stdout.strip().splitlines()[-1])["seconds"])
    return out["purejit"], out["jax"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--size", type=int, default=None, help="values per normal/uniform call")
    ap.add_argument("--procs", type=int, default=3, help="fresh processes per library")
    ap.add_argument("--compile-only", action="store_true", help="skip the generation timings")
    ap.add_argument("--disable-passes", default="", help="purejit passes off (comma list)")
    ap.add_argument("--child", choices=["jax", "purejit"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.disable_passes:  # the compile children read it from their environment
        os.environ["BENCH_RANDOM_DISABLE_PASSES"] = args.disable_passes
    if args.child:
        print(json.dumps({"seconds": _compile_child(args.child)}))
        return 0
    import jax

    platform = jax.default_backend()
    size = args.size or (64 * 2**20 if platform == "gpu" else 4 * 2**20)
    lines = [f"# purejit.random vs jax.random ({platform}: {jax.devices()[0].device_kind})", ""]
    lines += ["| workload | purejit | jax | ratio |", "|---|---|---|---|"]
    for name, tp, tj in [] if args.compile_only else generation(size):
        lines.append(f"| {name} | {tp * 1e3:.2f} ms | {tj * 1e3:.2f} ms | {tp / tj:.2f}x |")
    cp, cj = compile_times(args.procs)
    mp, mj = statistics.median(cp), statistics.median(cj)
    lines.append(
        f"| compile, 100 sampler calls (median of {args.procs} fresh processes) | "
        f"{mp:.2f} s | {mj:.2f} s | {mp / mj:.2f}x |"
    )
    lines += ["", f"purejit compile times: {[round(x, 2) for x in cp]}",
              f"jax compile times: {[round(x, 2) for x in cj]}"]  # fmt: skip
    text = "\n".join(lines) + "\n"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"random_{platform}.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
