"""Control flow: compile time and run time of purejit against jax.jit, as ratios.

    python -m bench.control_flow [--quick] [--steps 1000] [--repeats 3]

Two programs, each written once against a (lax, numpy) pair and run through both compilers
in the same process:

    scan RNN        h_{t+1} = tanh(h_t W + x_t U + b) over `steps` steps with lax.scan,
                    returning the last state and the mean of every state (ys).
    Newton while    the cube root of a vector by Newton's method in lax.while_loop, stopping
                    when the largest update is below a tolerance (a data-dependent trip count).

Compile time is the first call's work (trace, passes, StableHLO, XLA compile) from a fresh
function object, best of `--repeats`; run time is the steady-state time per call (warm up,
then many calls between two synchronisations), best of `--repeats`. Sizes are small on CPU
(the whole run stays under a minute) and larger on GPU. Prints a Markdown table; a ratio
below 1 means purejit is faster. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.run import steady


def scan_rnn(lax, xp):
    def rnn(h0, xs, w, u, b):
        def step(h, x):
            h = xp.tanh(h @ w + x @ u + b)
            return h, h

        h, hs = lax.scan(step, h0, xs)
        return h, hs.mean(axis=0)

    return rnn


def newton_cbrt(lax, xp):
    def cbrt(a):
        def cond(c):
            i, _, step = c
            return (step > 1e-6) & (i < 100)

        def body(c):
            i, x, _ = c
            dx = (x * x * x - a) / (3.0 * x * x)
            return i + 1, x - dx, xp.max(xp.abs(dx) / (xp.abs(x) + 1.0))

        init = (0, xp.maximum(xp.abs(a), 1.0) * xp.sign(a) + (a == 0), xp.float32(1.0))
        i, x, _ = lax.while_loop(cond, body, init)
        return i, x

    return cbrt


def _inputs(platform: str, steps: int, quick: bool):
    rng = np.random.default_rng(0)
    gpu = platform != "cpu"
    batch, hidden = (64, 512) if gpu else (8, 64 if not quick else 32)
    n = 1 << 24 if gpu else (1 << 16 if not quick else 1 << 12)
    rnn = (
        np.zeros((batch, hidden), np.float32),
        rng.normal(size=(steps, batch, hidden)).astype(np.float32),
        (rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)).astype(np.float32),
        (rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)).astype(np.float32),
        np.zeros(hidden, np.float32),
    )
    newton = (rng.uniform(-1e3, 1e3, size=n).astype(np.float32),)
    return {
        f"scan RNN ({steps} steps, {batch}x{hidden})": (scan_rnn, rnn),
        f"Newton while_loop (cube root of {n:,})": (newton_cbrt, newton),
    }


def _block(out):
    for leaf in _leaves(out):
        leaf.block_until_ready()


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compile_seconds(jit, make, args, repeats: int) -> float:
    """Best time of the first call (trace + compile + one run) of a fresh jitted function."""
    best = float("inf")
    for _ in range(repeats):
        f = jit(make())
        t0 = time.perf_counter()
        _block(f(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes (CI smoke run)")
    p.add_argument("--steps", type=int, default=1000, help="scan length of the RNN")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--budget", type=float, default=0.5, help="seconds per timed batch")
    a = p.parse_args(argv)

    import jax
    import jax.numpy as jnp

    import purejit
    import purejit.numpy as pnp
    from purejit import lax as plax

    platform = jax.devices()[0].platform
    rows = []
    for name, (program, host_args) in _inputs(platform, a.steps, a.quick).items():
        pj_args = [pnp.asarray(x) + 0 for x in host_args]  # on the device before timing
        jx_args = [jax.device_put(x) for x in host_args]
        pj_f, jx_f = purejit.jit(program(plax, pnp)), jax.jit(program(jax.lax, jnp))
        for got, want in zip(_leaves(pj_f(*pj_args)), _leaves(jx_f(*jx_args))):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-3, atol=1e-4)
        pj_c = compile_seconds(purejit.jit, lambda p=program: p(plax, pnp), pj_args, a.repeats)
        jx_c = compile_seconds(jax.jit, lambda p=program: p(jax.lax, jnp), jx_args, a.repeats)
        pj_r = steady(pj_f, pj_args, a.budget, a.repeats)
        jx_r = steady(jx_f, jx_args, a.budget, a.repeats)
        rows.append((name, pj_c, jx_c, pj_r, jx_r))
        print(
            f"# {name}: compile {pj_c / jx_c:.2f}x, run {pj_r / jx_r:.2f}x of jax.jit", flush=True
        )

    print(f"\n## Control flow on {platform} ({jax.devices()[0].device_kind})\n")
    print(
        "| program | purejit compile ms | jax.jit compile ms | ratio | purejit run ms "
        "| jax.jit run ms | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, pj_c, jx_c, pj_r, jx_r in rows:
        print(
            f"| {name} | {pj_c * 1e3:.1f} | {jx_c * 1e3:.1f} | {pj_c / jx_c:.2f} "
            f"| {pj_r * 1e3:.3f} | {jx_r * 1e3:.3f} | {pj_r / jx_r:.2f} |"
        )


if __name__ == "__main__":
    main()
