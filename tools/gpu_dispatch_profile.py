"""Where a jitted call's host time goes, purejit against JAX, on the default device:
per-call time (calls back to back, one synchronisation) of purejit's jit, its executable
called directly, jaxlib's execute without result handlers, and jax.jit; then a cProfile of
purejit's calls.

    python tools/gpu_dispatch_profile.py
"""

from __future__ import annotations

import cProfile
import pstats
import time

import jax
import jax.numpy as jjnp
import numpy as np

import purejit
import purejit.numpy as pnp


def per_call(f, args, n=2000):
    """Best mean µs per call over `n` calls issued back to back, one synchronisation each."""
    r = f(*args)
    jax.block_until_ready(r)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            r = f(*args)
        jax.block_until_ready(r)
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 64, 64)).astype(np.float32)
    spd = a @ np.swapaxes(a, -1, -2) / 64 + np.eye(64, dtype=np.float32)
    tiny = np.ones(4, np.float32)
    cases = {
        "tiny add": ((lambda x: x + 1), (lambda x: x + 1), (tiny,)),
        "cholesky 1 arg": (
            lambda s: pnp.linalg.cholesky(s), lambda s: jjnp.linalg.cholesky(s), (spd,)),
        "cholesky 3 args": (
            lambda x, s, b: pnp.linalg.cholesky(s),
            lambda x, s, b: jjnp.linalg.cholesky(s), (a, spd, a)),
    }  # fmt: skip
    for name, (pf, jf, args) in cases.items():
        pargs = [pnp.asarray(x) + 0 for x in args]
        jargs = [jax.device_put(x) for x in args]
        pj, jx = purejit.jit(pf), jax.jit(jf)
        comp = pj.lower(*pargs).compile()
        bufs = [x.buffer for x in pargs]
        exe = comp.exe
        raw = exe._exe
        rows = {
            "purejit jit": per_call(pj, pargs),
            "purejit executable (handlers)": per_call(
                lambda *b: exe.execute_unchecked(list(b)), bufs),
            "jaxlib execute_sharded, no handlers": per_call(
                lambda *b: raw.execute_sharded(list(b)).disassemble_into_single_device_arrays(),
                bufs),
            "jaxlib execute": per_call(lambda *b: raw.execute(list(b)), bufs),
            "jax.jit": per_call(jx, jargs),
        }  # fmt: skip
        print(f"## {name}")
        for k, v in rows.items():
            print(f"  {k:40s} {v:8.2f} us")
    pj = purejit.jit(lambda x: x + 1)
    x = pnp.asarray(tiny) + 0
    pj(x)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(20000):
        r = pj(x)
    jax.block_until_ready(r)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
