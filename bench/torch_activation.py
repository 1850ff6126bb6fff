"""`complex_activation` on CPU: purejit against `jax.jit` and `torch.compile`, in one run.

    taskset -c 0,1 python -m bench.torch_activation      # two cores, as CI's machine

The seed program (sin, cos, mul, add, mul, relu over 1M float32) is timed in rounds that
interleave the frameworks (best of many calls per round, median over rounds). torch is
optional: without it the line says so and only the purejit / JAX ratio is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

from bench.cold_start import best_of  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args(argv)

    import jax
    import jax.numpy as jnp

    import purejit
    import purejit.numpy as pnp

    x = np.random.default_rng(0).standard_normal(args.n).astype(np.float32)

    def program(xp, v):
        y = xp.sin(v) * xp.cos(v)
        y = y + v
        return xp.maximum(y * 0.5, 0.0)

    pf = purejit.jit(lambda v: program(pnp, v))
    jf = jax.jit(lambda v: program(jnp, v))
    px, jx = pnp.asarray(x) + 0, jnp.asarray(x)
    runs = {
        "purejit": lambda: pf(px).block_until_ready(),
        "jax.jit": lambda: jf(jx).block_until_ready(),
    }
    want = program(np, x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(pf(px)), want, rtol=1e-6, atol=1e-6)
    torch_note = ""
    try:
        import torch

        torch.set_num_threads(len(os.sched_getaffinity(0)))
        tf = torch.compile(lambda v: torch.relu((torch.sin(v) * torch.cos(v) + v) * 0.5))
        tx = torch.from_numpy(x.copy())
        np.testing.assert_allclose(tf(tx).numpy(), want, rtol=1e-5, atol=1e-5)
        runs["torch.compile"] = lambda: tf(tx)
        torch_note = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    except Exception as e:  # noqa: BLE001 - torch missing or its compiler unavailable
        torch_note = f"torch.compile not measured ({type(e).__name__}: {e})"[:200]
    for fn in runs.values():  # warm up
        best_of(fn, 3)
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, fn in runs.items():
            times[name].append(best_of(fn, args.calls))
    med = {k: statistics.median(v) for k, v in times.items()}
    cores = len(os.sched_getaffinity(0))
    print(f"complex_activation, {args.n} float32 on {cores} CPU cores; {torch_note}")
    rounds = f"median over {args.rounds} interleaved rounds of best-of-{args.calls}"
    print(f"jax {jax.__version__}; {rounds}")
    for name, t in med.items():
        print(f"  {name:14s} {t * 1e6:9.1f} us")
    print(f"purejit / jax.jit: {med['purejit'] / med['jax.jit']:.3f}x (goal <= 0.2x)")
    if "torch.compile" in med:
        r = med["purejit"] / med["torch.compile"]
        print(f"purejit / torch.compile: {r:.3f}x (goal <= 1.2x)")


if __name__ == "__main__":
    main()
