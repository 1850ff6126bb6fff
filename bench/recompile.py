"""The recompilation trap: a stream of calls whose batch size changes every time.

    python -m bench.recompile [--quick] [--calls 200] [--max-batch 512]

A two-layer MLP (x[b, 256] @ W1[256, 512] -> relu -> @ W2[512, 16]) is called `--calls`
times with batch sizes drawn uniformly from 1..max_batch (one fixed seed, the same stream for
everyone) by

    jax.jit                 one compile per new batch size
    purejit (no buckets)    the same, plus the trap guard's warning (silenced here)
    purejit (buckets=)      batch padded to the next power of two from 16: one compile per
                            bucket, outputs sliced back

Each call takes NumPy inputs and brings the result back to NumPy (a request stream), so all
three pay the same transfers. The persistent cache is off. Prints a Markdown table: total
wall time, compiles, mean time per call, and the ratio of jax.jit's total time to each
(the goal: buckets at least 10x faster in total than jax.jit).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def mlp(xp, x, w1, w2):
    return xp.maximum(x @ w1, 0.0) @ w2


def stream(calls: int, max_batch: int, seed: int = 0) -> list[int]:
    return [int(b) for b in np.random.default_rng(seed).integers(1, max_batch + 1, calls)]


def run_stream(f, sizes, w1, w2, d_in: int) -> float:
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((b, d_in)).astype(np.float32) for b in sizes]
    t0 = time.perf_counter()
    for x in xs:
        y = np.asarray(f(x, w1, w2))
        assert y.shape[0] == x.shape[0]
    return time.perf_counter() - t0


def buckets_for(max_batch: int, smallest: int = 16) -> list[int]:
    out, b = [], smallest
    while b < max_batch:
        out.append(b)
        b *= 2
    return out + [max(b, smallest)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="40 calls (CPU smoke run)")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--max-batch", type=int, default=512)
    ap.add_argument("--d-in", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    args = ap.parse_args(argv)
    calls = 40 if args.quick else args.calls

    import jax
    import jax.numpy as jnp_ref

    import purejit
    import purejit.numpy as pnp

    purejit.config.update(cache_dir=None)
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((args.d_in, args.hidden)) / 16).astype(np.float32)
    w2 = (rng.standard_normal((args.hidden, 16)) / 16).astype(np.float32)
    sizes = stream(calls, args.max_batch)
    buckets = buckets_for(args.max_batch)

    # warm both runtimes up (backend start, first-use costs) on an unrelated program
    jax.jit(lambda a: a + 1)(np.ones(3, np.float32)).block_until_ready()
    np.asarray(purejit.jit(lambda a: a + 1)(np.ones(3, np.float32)))

    jf = jax.jit(lambda x, a, b: mlp(jnp_ref, x, a, b))
    pf = purejit.jit(lambda x, a, b: mlp(pnp, x, a, b), recompile_warn_after=0)
    bf = purejit.jit(
        lambda x, a, b: mlp(pnp, x, a, b), buckets={"x": {0: buckets}}, recompile_warn_after=0
    )
    x0 = np.ones((3, args.d_in), np.float32)
    for f in (jf, pf, bf):  # the same numbers from all three
        np.testing.assert_allclose(
            np.asarray(f(x0, w1, w2)), np.asarray(jf(x0, w1, w2)), rtol=2e-4, atol=2e-4
        )
    jf = jax.jit(lambda x, a, b: mlp(jnp_ref, x, a, b))  # fresh caches for the timed runs
    pf = purejit.jit(lambda x, a, b: mlp(pnp, x, a, b), recompile_warn_after=0)
    bf = purejit.jit(
        lambda x, a, b: mlp(pnp, x, a, b), buckets={"x": {0: buckets}}, recompile_warn_after=0
    )

    rows = []
    t = run_stream(jf, sizes, w1, w2, args.d_in)
    rows.append(("jax.jit", t, jf._cache_size()))
    t = run_stream(pf, sizes, w1, w2, args.d_in)
    rows.append(("purejit, no buckets", t, purejit.cache_stats(pf).compiles))
    t = run_stream(bf, sizes, w1, w2, args.d_in)
    rows.append((f"purejit, buckets {buckets}", t, purejit.cache_stats(bf).compiles))

    dev = jax.devices()[0]
    print(
        f"\n### Recompilation trap: {calls} calls, batch uniform in 1..{args.max_batch}, "
        f"MLP {args.d_in}->{args.hidden}->16 ({dev.platform}: {dev.device_kind})\n"
    )
    print(f"distinct batch sizes in the stream: {len(set(sizes))}\n")
    print("| variant | total (s) | compiles | per call (ms) | jax.jit total / this |")
    print("|---|---:|---:|---:|---:|")
    base = rows[0][1]
    for name, t, n in rows:
        print(f"| {name} | {t:.3f} | {n} | {1e3 * t / calls:.2f} | {base / t:.1f}x |")
    ratio = base / rows[2][1]
    print(f"\nbuckets vs jax.jit: {ratio:.1f}x less total time (goal: >= 10x)")
    return rows


if __name__ == "__main__":
    main()
