"""Diagnostics for differences between purejit and JAX on one device: for each named case,
both programs' StableHLO and XLA-optimised HLO are written under OUT, and the results
compared bit for bit, including across recompiles in the same process (whether XLA itself
gives the same bits twice) and timed.

    python tools/gpu_diag.py OUT [case ...]     (cases: maxwell mvn gumbel split cholesky)
"""

from __future__ import annotations

import os
import sys
import time

import jax
import jax.numpy as jjnp
import numpy as np

import purejit
import purejit.numpy as pnp
import purejit.random as pr
from gpu_dispatch_profile import per_call  # tools/, beside this script


def _cases():
    f32 = np.float32
    cov = np.array([[2.0, 0.3, 0.1, 0.0], [0.3, 1.5, 0.2, 0.1], [0.1, 0.2, 1.0, 0.3],
                    [0.0, 0.1, 0.3, 0.8]])  # fmt: skip
    mean = np.arange(4.0)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 64, 64)).astype(f32)
    spd = a @ np.swapaxes(a, -1, -2) + 64 * np.eye(64, dtype=f32)
    return {
        "maxwell": (lambda r, k: r.maxwell(k, (30000,), f32), ()),
        "mvn": (lambda r, k, m, c: r.multivariate_normal(k, m, c), (mean, cov)),
        "gumbel": (lambda r, k: r.gumbel(k, (17,), jjnp.bfloat16, mode="high"), ()),
        "split": (lambda r, k: r.split(k, 1 << 20), ()),
        "cholesky": (None, (spd,)),
    }


def _pair(name, fn, params):
    if name == "cholesky":
        return (lambda s, x: pnp.linalg.cholesky(x)), (lambda s, x: jjnp.linalg.cholesky(x))
    return (lambda s, *p: fn(pr, pr.key(s), *p)), (
        lambda s, *p: fn(jax.random, jax.random.key(s), *p)
    )


def _bits(x):
    x = (
        np.asarray(jax.random.key_data(x))
        if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key)
        else np.asarray(x)
    )
    return x.view(np.uint8) if x.dtype.itemsize == 1 else x.view(f"u{x.dtype.itemsize}")


def _pbits(x):
    try:
        x = pr.key_data(x)
    except Exception:
        pass
    x = np.asarray(x)
    return x.view(f"u{x.dtype.itemsize}")


def _time(f, *args, reps=50):
    jax.block_until_ready(f(*args))
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def _pipelined(f, *args):
    """ms per call, calls issued back to back (gpu_dispatch_profile.per_call)."""
    return per_call(f, args, n=200) / 1e3


def _raw(pj, args):
    """The purejit executable run directly on device buffers (no dispatch checks)."""
    exe = pj.lower(*args).compile().exe
    bufs = [jax.device_put(np.asarray(a)) for a in args]
    return per_call(lambda *b: exe.execute_unchecked(list(b)), bufs, n=200) / 1e3


def main(out, names):
    os.makedirs(out, exist_ok=True)
    cases = _cases()
    for name in names or list(cases):
        fn, params = cases[name]
        pj_f, jx_f = _pair(name, fn, params)
        seed = np.int32(0)
        pj, jx = purejit.jit(pj_f), jax.jit(jx_f)
        with open(f"{out}/{name}_pj_stablehlo.txt", "w") as fh:
            fh.write(pj.lower(seed, *params).as_text())
        with open(f"{out}/{name}_pj_hlo.txt", "w") as fh:
            fh.write(pj.lower(seed, *params).compile().as_text())
        with open(f"{out}/{name}_jax_stablehlo.txt", "w") as fh:
            fh.write(jx.lower(seed, *params).as_text())
        with open(f"{out}/{name}_jax_hlo.txt", "w") as fh:
            fh.write(jx.lower(seed, *params).compile().as_text())
        a, b = _pbits(pj(seed, *params)), _bits(jx(seed, *params))
        print(f"{name}: jit differ {int((a != b).sum())} of {a.size}")
        # recompiles: XLA's own determinism
        jx_again = [_bits(jax.jit(lambda s, *p: jx_f(s, *p))(seed, *params)) for _ in range(3)]
        pj_again = [_pbits(purejit.jit(lambda s, *p: pj_f(s, *p))(seed, *params)) for _ in range(3)]
        print(f"  jax recompiles differ from first: {[int((x != b).sum()) for x in jx_again]}")
        print(f"  purejit recompiles differ from first: {[int((x != a).sum()) for x in pj_again]}")
        if name not in ("gumbel", "mvn"):
            pt, jt = _time(pj, seed, *params), _time(jx, seed, *params)
            print(f"  time purejit {pt:.4f} ms  jax {jt:.4f} ms  ratio {pt / jt:.3f}")
            dev = [jax.device_put(np.asarray(p)) for p in params]
            pp, jp = _pipelined(pj, seed, *dev), _pipelined(jx, seed, *dev)
            print(f"  pipelined purejit {pp:.4f} ms  jax {jp:.4f} ms  ratio {pp / jp:.3f}")
            print(f"  purejit executable alone {_raw(pj, (seed, *params)):.4f} ms")
        # eager
        if name != "cholesky":
            ea = _pbits(fn(pr, pr.key(0), *params))
            eb = _bits(fn(jax.random, jax.random.key(0), *params))
            print(f"  eager differ {int((ea != eb).sum())} of {ea.size}")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
    import shutil

    shutil.make_archive(sys.argv[1], "gztar", sys.argv[1])
    shutil.rmtree(sys.argv[1])
