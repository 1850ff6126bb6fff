"""`python -m purejit demo`: a short tour of purejit on whatever backend is present.

It builds a small MLP (with one deliberately dead matmul), jits it, shows what each pass of
the pipeline did, the size of the StableHLO handed to XLA, the phases of the first call, and
steady-state timings of purejit's jit against purejit's eager mode. (Comparisons with
`jax.jit` live in `bench/`: purejit itself never calls JAX's transformations.)
"""

from __future__ import annotations

import collections
import itertools
import time

import numpy as np

import purejit
import purejit.numpy as jnp


def mlp(params, x, np_=jnp):
    """A small MLP with a log-softmax head; `np_` is a NumPy-like namespace (purejit.numpy)."""
    h = x
    for w, b in params[:-1]:
        h = np_.maximum(h @ w + b, 0.0)
    w, b = params[-1]
    logits = h @ w + b
    unused = h @ h.T  # dead code: the DCE pass removes it  # noqa: F841
    m = np_.max(logits, axis=-1, keepdims=True)
    z = logits - m
    return z - np_.log(np_.sum(np_.exp(z), axis=-1, keepdims=True))


def init_params(sizes, seed=0):
    """Random float32 (weight, bias) pairs for layer widths `sizes`."""
    rng = np.random.default_rng(seed)
    return [
        (
            (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
            np.zeros((n,), np.float32),
        )
        for m, n in itertools.pairwise(sizes)
    ]


def time_per_call(f, *args, min_seconds=0.2, max_calls=2000) -> float:
    """Seconds per call of `f(*args)` in steady state (one warm-up call, then a timed loop
    that waits for the device after the last call)."""
    _block(f(*args))
    n, t0 = 0, time.perf_counter()
    while True:
        out = f(*args)
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds or n >= max_calls:
            break
    _block(out)
    return (time.perf_counter() - t0) / n


def _block(x):
    for leaf in purejit.tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def _short_report(report: dict, limit: int = 3) -> str:
    """The first few scalar entries of a pass report, `key=value` (plans and IR left out)."""
    items = [f"{k}={v}" for k, v in report.items() if isinstance(v, (int, float, str, bool))]
    return ", ".join(items[:limit])


def op_histogram(fn) -> collections.Counter:
    """How many ops of each name a purejit IR function holds (nested regions included)."""
    return collections.Counter(op.name for op in fn.walk())


def main(batch: int = 64, sizes=(256, 512, 512, 10)) -> dict:
    """Run the tour and print it. Returns the numbers it printed (for tests)."""
    from purejit.backend import pjrt

    print(f"purejit {purejit.__version__} on {pjrt.platform()} "
          f"({len(pjrt.devices())} device(s))\n")  # fmt: skip
    host_params = init_params(list(sizes))
    host_x = np.random.default_rng(1).standard_normal((batch, sizes[0])).astype(np.float32)
    # purejit.Arrays move to the device once, on first use (NumPy inputs would be copied on
    # every call)
    params = purejit.tree_util.tree_map(jnp.asarray, host_params)
    x = jnp.asarray(host_x)
    f = purejit.jit(mlp)

    print("1. trace, optimise and lower:  purejit.jit(mlp).lower(params, x)")
    lowered = f.lower(params, x)
    print(f"   {'stage':<18} {'round':>5} {'ops in':>6} {'ops out':>7} {'ms':>7}  report")
    for r in lowered.records:
        rnd = str(r.iteration) if getattr(r, "iteration", 0) else ""
        print(f"   {r.name:<18} {rnd:>5} {r.ops_before:>6} {r.ops_after:>7} "
              f"{1e3 * r.seconds:>7.2f}  {_short_report(r.report)}")  # fmt: skip
    hist = op_histogram(lowered.fn)
    print("   optimised IR:", ", ".join(f"{n} x{c}" for n, c in sorted(hist.items())))
    module = lowered.as_text()
    print(f"   StableHLO: {len(module.splitlines())} lines, {len(module)} characters\n")

    print("2. compile with XLA and run")
    compiled = lowered.compile()
    t = lowered.timings
    phases = ", ".join(f"{k} {1e3 * v:.1f} ms" for k, v in t.items())
    print(f"   first-call phases: {phases}")
    cost = compiled.cost_analysis()
    print(f"   XLA cost analysis: {cost.get('flops', float('nan')):.3g} flops")
    out = np.asarray(f(params, x))
    eager_out = np.asarray(mlp(params, x))
    with purejit.disable_jit():
        disabled_out = np.asarray(f(params, x))
    print(f"   output {out.shape} {out.dtype}; rows sum to 1 after exp: "
          f"{np.allclose(np.exp(out).sum(-1), 1, atol=1e-4)}")  # fmt: skip
    print(f"   jit vs eager max |diff|: {np.abs(out - eager_out).max():.2e}; "
          f"disable_jit max |diff|: {np.abs(out - disabled_out).max():.2e}\n")  # fmt: skip

    print("3. steady-state time per call")
    results = {"jit": time_per_call(f, params, x), "eager": time_per_call(mlp, params, x)}
    base = results["jit"]
    for name, sec in results.items():
        print(f"   {name:<8} {1e6 * sec:>10.1f} us   {sec / base:>6.2f}x purejit.jit")
    print("   (against jax.jit: python -m bench)")
    print("\nNext: README.md, notebooks/quickstart.ipynb, `python -m purejit info`.")
    return {"records": lowered.records, "times": results, "out": out}
