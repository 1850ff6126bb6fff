"""The rolled program's cold first call from two checkouts, interleaved with JAX's rows.

    git archive e003e08 | tar -x -C /tmp/base          # the checkout to compare against
    python -m bench.tools.cold_start_ab --base /tmp/base --layers 48 --rounds 5 [--train]

Each round runs, each in a fresh process with an empty cache (`bench.cold_start`'s
`--roll-sweep` children): purejit rolled from `--base`, purejit rolled from this checkout,
`jax.jit` unrolled and `jax.jit` with `lax.scan` (`--variants` picks others: the purejit
unrolled programs of both checkouts too). Prints the
median of each column: first call (wall, and the process's CPU time, which moves less with
a shared machine's load), purejit's trace / passes / emit / XLA compile, steady call,
temporaries, and the ratios of the first calls to JAX's. Every child runs this checkout's
`bench/cold_start.py` over its checkout's purejit (and `bench` package). The base's own
`purejit/ir` and `purejit/passes` must resolve to its `ir/` and `passes/` (symlinks, made
here when missing), so that its children do not import this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VARIANTS = {  # name -> (checkout, bench.cold_start's ROLL_VARIANTS index)
    "base rolled": ("base", 0),
    "purejit rolled": ("here", 0),
    "base unrolled": ("base", 1),
    "purejit unrolled": ("here", 1),
    "jax.jit unrolled": ("here", 2),
    "jax.jit scan": ("here", 3),
}


def run_child(root: str, script: str, argv: list[str], what: str):
    """Run this checkout's `script` with `argv` in a fresh process over `root`'s purejit (no
    persistent cache of the environment's) and return the JSON of its `RESULT ` line."""
    run = (
        f"import runpy, sys; sys.argv[0] = {script!r}; runpy.run_path(sys.argv[0], "
        "run_name='__main__')"
    )
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("PUREJIT_CACHE_DIR", None)
    cmd = [sys.executable, "-c", run, *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{root} {what} failed:\n{proc.stderr[-3000:]}")
    line = next(s for s in proc.stdout.splitlines() if s.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def link_base(base: str) -> str:
    """`base` as an absolute path whose `purejit/ir` and `purejit/passes` resolve to its own
    `ir/` and `passes/` (symbolic links made when missing)."""
    base = os.path.abspath(base)
    for sub in ("ir", "passes"):
        link = os.path.join(base, "purejit", sub)
        if not os.path.exists(link):
            os.symlink(os.path.join("..", sub), link)
    return base


def _child(root: str, variant: int, args) -> dict:
    kind = "purejit" if variant in (0, 1, 4) else "jax"
    with tempfile.TemporaryDirectory() as cache:
        # this checkout's child code (its timings) over `root`'s purejit
        argv = ["--child", kind, "--cache", cache, "--variant", str(variant)]
        argv += ["--purejit-options", "{}"]
        for k in ("layers", "d", "heads", "seq", "batch"):
            argv += [f"--{k}", str(getattr(args, k))]
        argv += ["--train"] if args.train else []
        script = os.path.join(ROOT, "bench", "cold_start.py")
        return run_child(root, script, argv, f"variant {variant}")


def _median(runs: list[dict], get) -> float:
    vals = [v for v in map(get, runs) if v is not None]
    return float(np.median(vals)) if vals else float("nan")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the other checkout (a folder)")
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--train", action="store_true", help="the training step, not the forward")
    default = "base rolled,purejit rolled,jax.jit unrolled,jax.jit scan"
    ap.add_argument("--variants", default=default, help=f"comma-separated, of {list(VARIANTS)}")
    for k, v in dict(d=128, heads=4, seq=64, batch=2).items():
        ap.add_argument(f"--{k}", type=int, default=v)
    args = ap.parse_args(argv)
    base = link_base(args.base)
    names = [n.strip() for n in args.variants.split(",")]
    runs: dict[str, list] = {n: [] for n in names}
    for _ in range(args.rounds):
        for n in names:
            where, variant = VARIANTS[n]
            runs[n].append(_child(base if where == "base" else ROOT, variant, args))
    what = "training step" if args.train else "forward"
    print(f"\n{args.layers}-layer {what}, median of {args.rounds} interleaved rounds\n")
    cols = ("trace", "passes", "emit", "xla_compile")
    print("| variant | first call (s) | CPU (s) | trace | passes | emit | XLA compile "
          "| steady (ms) | temporaries (MiB) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    med = {}
    for n, rs in runs.items():
        med[n] = {
            "first": _median(rs, lambda r: r["first_call"]),
            "cpu": _median(rs, lambda r: r.get("first_call_cpu")),
        }
        split = [_median(rs, lambda r, k=k: r.get("timings", {}).get(k)) for k in cols]
        split = " | ".join("-" if np.isnan(t) else f"{t:.3f}" for t in split)
        steady = _median(rs, lambda r: r["steady"]) * 1e3
        temp = _median(rs, lambda r: r["temp"]) / 2**20
        m = med[n]
        print(f"| {n} | {m['first']:.3f} | {m['cpu']:.3f} | {split} | {steady:.2f} | {temp:.1f} |")
    print()
    for n in ("base rolled", "purejit rolled"):
        for ref in ("jax.jit unrolled", "jax.jit scan"):
            if n in med and ref in med:
                wall = med[n]["first"] / med[ref]["first"]
                cpu = med[n]["cpu"] / med[ref]["cpu"]
                print(f"{n} / {ref}: {wall:.2f}x (CPU time {cpu:.2f}x)")
    return runs


if __name__ == "__main__":
    main()
