"""Eager dispatch: purejit's op-by-op mode against JAX's, in one process, as ratios.

    python -m bench.eager [--rounds 7] [--calls 1000] [--quick] [--only NAME ...]

Rows (each call runs outside any jit; arguments live on the device before timing):

    chain       `x = sin(x) * 1.01 + x` on 16 float32s: three ops, one with a weakly typed
                Python float (goal: <= 1.0x JAX)
    mlp         a 12-op MLP forward: four layers of `tanh(x @ w + b)` on a batch of 8
                (goal: <= 1.0x JAX)
    vmap softmax
                eager `vmap(nn.softmax)` over 8 rows of 16 (goal: <= 1.5x JAX)

plus the rows `bench/eager_grad.py` lists in its `ROWS` (eager `grad(jit(f))`,
`vmap(jit(f))`), when that module exists: `ROWS = [(name, make, args, goal), ...]` where
`make(lib)` returns the function to time for one library (`lib.np`, `lib.nn`, `lib.lax`,
`lib.jit`, `lib.grad`, `lib.vmap`) and `args` are NumPy arrays (nested lists and tuples
allowed), put on the device before timing.

Method: each round times `--calls` calls of purejit then of JAX (the order alternates
between rounds), between two synchronisations; a row reports the median over `--rounds`
rounds of the time per call, and the median of the rounds' ratios purejit / JAX (below 1:
purejit faster). A row
whose first purejit call takes over 10 ms runs fewer calls per round (said in the output).
Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
import types

import numpy as np


class Row:
    """One workload: `make(lib)` returns a function of `args` for that library."""

    def __init__(self, name, make, args, goal):
        self.name, self.make, self.args, self.goal = name, make, args, goal


def _chain(lib):
    def step(x):
        return lib.np.sin(x) * 1.01 + x

    return step


def _mlp(lib):
    def forward(params, x):
        for w, b in params:
            x = lib.np.tanh(x @ w + b)
        return x

    return forward


def _vmap_softmax(lib):
    return lib.vmap(lib.nn.softmax)


def _mlp_args():
    rng = np.random.default_rng(0)
    params = [
        (
            (rng.standard_normal((32, 32)) / np.sqrt(32)).astype(np.float32),
            (0.1 * rng.standard_normal(32)).astype(np.float32),
        )
        for _ in range(4)
    ]
    return (params, rng.standard_normal((8, 32)).astype(np.float32))


def rows() -> list[Row]:
    out = [
        Row("chain", _chain, (np.linspace(0, 1, 16, dtype=np.float32),), 1.0),
        Row("mlp", _mlp, _mlp_args(), 1.0),
        Row(
            "vmap softmax",
            _vmap_softmax,
            (np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32),),
            1.5,
        ),
    ]
    try:  # eagerad's rows (grad(jit(f)), vmap(jit(f))), in their own module
        extra = importlib.import_module("bench.eager_grad")
    except ImportError:
        extra = None
    for spec in getattr(extra, "ROWS", ()):
        out.append(Row(*spec))
    return out


def _libraries():
    import jax
    import jax.numpy as jnp

    import purejit
    import purejit.numpy as pnp

    def lib(np_, mod, put):
        return types.SimpleNamespace(
            np=np_, nn=mod.nn, lax=mod.lax, jit=mod.jit, grad=mod.grad, vmap=mod.vmap, put=put
        )

    return {
        "purejit": lib(pnp, purejit, purejit.device_put),
        "jax": lib(jnp, jax, jax.device_put),
    }


def _block(tree):
    import jax

    for leaf in jax.tree_util.tree_leaves(tree):
        leaf.block_until_ready()
    return tree


def _on_device(put, tree):
    if isinstance(tree, (list, tuple)):
        return type(tree)(_on_device(put, t) for t in tree)
    return put(tree)


def _time(fn, args, calls):
    _block(fn(*args))
    start = time.perf_counter()
    for _ in range(calls):
        out = fn(*args)
    _block(out)
    return (time.perf_counter() - start) / calls


def _leaves(tree):
    if isinstance(tree, (list, tuple)):
        return [x for t in tree for x in _leaves(t)]
    return [tree]


def measure(row: Row, rounds: int, calls: int) -> dict:
    libs = _libraries()
    fns, args = {}, {}
    for name, lib in libs.items():
        fns[name] = row.make(lib)
        args[name] = _on_device(lib.put, row.args)
    # the same numbers from both libraries first
    got = [np.asarray(x) for x in _leaves(fns["purejit"](*args["purejit"]))]
    want = [np.asarray(x) for x in _leaves(fns["jax"](*args["jax"]))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
    start = time.perf_counter()
    fns["purejit"](*args["purejit"])
    first = time.perf_counter() - start
    n = calls if first < 0.01 else max(5, int(0.2 * calls * 0.01 / max(first, 1e-9)))
    times = {"purejit": [], "jax": []}
    for r in range(rounds):
        order = ("purejit", "jax") if r % 2 == 0 else ("jax", "purejit")
        for lib in order:
            times[lib].append(_time(fns[lib], args[lib], n))
    p, j = statistics.median(times["purejit"]), statistics.median(times["jax"])
    # each round times both libraries back to back: the median of the per-round ratios
    # follows a machine whose load drifts between rounds better than a ratio of medians
    ratio = statistics.median([a / b for a, b in zip(times["purejit"], times["jax"])])
    return {"row": row.name, "calls": n, "purejit_us": p * 1e6, "jax_us": j * 1e6,
            "ratio": ratio, "goal": row.goal}  # fmt: skip


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="3 rounds of 200 calls")
    ap.add_argument("--only", nargs="*", help="row names to run")
    a = ap.parse_args(argv)
    rounds, calls = (3, 200) if a.quick else (a.rounds, a.calls)
    import jax

    print(f"eager dispatch, {jax.devices()[0].platform}: median of {rounds} rounds, "
          "purejit / JAX per call")  # fmt: skip
    results = []
    for row in rows():
        if a.only and row.name not in a.only:
            continue
        res = measure(row, rounds, calls)
        results.append(res)
        ok = "ok" if res["ratio"] <= res["goal"] else "above goal"
        print(f"  {res['row']:<16} purejit {res['purejit_us']:9.1f} us  jax "
              f"{res['jax_us']:9.1f} us  ratio {res['ratio']:5.2f}x  (goal <= "
              f"{res['goal']:.1f}x: {ok}; {res['calls']} calls a round)", flush=True)  # fmt: skip
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
