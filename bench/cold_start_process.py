"""A cold-start measurement in a fresh process, for `bench.cold_start` and its roll sweep.

`spawn` runs `python -m bench.cold_start --child ...` (the sizes, options and an empty cache
folder of the caller's `args`; `PUREJIT_CACHE_DIR` removed from its environment) and returns
the JSON of the `RESULT` line the child prints; `best_of` is how a child times its steady
call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def best_of(call, n: int = 3) -> float:
    """The best of `n` timed calls (after warm-up): what running a program costs."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


def spawn(kind: str, cache: str, args, variant: int | None = None) -> dict:
    """The result of one child: purejit's or JAX's (`kind`) first call with the cache folder
    `cache`, or roll-sweep variant number `variant` (`kind` then names its row)."""
    if variant is not None:  # a roll-sweep variant (its kind is only the row's name)
        kind = "purejit" if kind.startswith("purejit") else "jax"
    cmd = [sys.executable, "-m", "bench.cold_start", "--child", kind, "--cache", cache]
    if variant is not None:
        cmd += ["--variant", str(variant), "--purejit-options", args.purejit_options]
    for k in ("layers", "d", "heads", "seq", "batch", "dtype"):
        if getattr(args, k) is not None:
            cmd += [f"--{k}", str(getattr(args, k))]
    if args.train:
        cmd += ["--train"] + (["--quick"] if args.quick and variant is None else [])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PUREJIT_CACHE_DIR", None)
    proc = subprocess.run(
        cmd, check=False, capture_output=True, text=True, env=env, cwd=root, timeout=1800
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} child failed:\n{proc.stderr[-3000:]}")
    line = next(s for s in proc.stdout.splitlines() if s.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])
