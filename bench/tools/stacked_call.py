"""Host time per call of a rolled program whose parameters are stacks (`stacked_params`),
where the program's run is negligible: what purejit's Python dispatch of stacked groups
costs against jaxlib's C++ path.

The program is a donated SGD step of an MLP of `--layers` jitted tanh-dense layers (`d`
wide; a list of `{"w", "b"}` dicts, so 2 x layers + 1 leaves), rolled
(`roll_layers`). Forms, interleaved in one process, best of `--reps` rounds of `--calls`
chained calls each (the clock stops when the last call returns, before the arrays are
ready):

- `stacked (Python dispatch)`: the default rolled program, whose entry takes one stack per
  parameter kind; its leaves are lazy rows that each call finds as its stacks;
- `stacks inside (C++ path)`: `stacked_params: False`, one parameter per leaf, the stacks
  built in the program; jaxlib's C++ dispatch runs it.

With `--profile N`, cProfile's top entries (by own time) over N calls of the stacked form
follow, with the per-call time under the profiler.

    python -m bench.tools.stacked_call [--layers 48] [--d 16] [--reps 20] [--calls 50]
        [--profile 200]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import numpy as np


def params(layers: int, d: int) -> list[dict]:
    rng = np.random.default_rng(0)
    return [
        {
            "w": (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32),
            "b": rng.standard_normal(d).astype(np.float32),
        }
        for _ in range(layers)
    ]


def forms(layers: int, d: int) -> dict:
    """{name: (step, state)}: `step(state, x) -> new state` (donated), after 3 calls."""
    import purejit
    import purejit.numpy as pnp
    from purejit import tree_util

    layer = purejit.jit(lambda x, p: pnp.tanh(x @ p["w"] + p["b"]))

    def model(ps, x):
        for p in ps:
            x = layer(x, p)
        return x

    def step(ps, x):
        g = purejit.grad(lambda ps: pnp.mean(model(ps, x) ** 2))(ps)
        return tree_util.tree_map(lambda p, g: p - 0.1 * g, ps, g)

    out = {}
    for name, extra in (
        ("stacked (Python dispatch)", {}),
        ("stacks inside (C++ path)", {"stacked_params": False}),
    ):
        f = purejit.jit(step, donate_argnums=0, compiler_options={"roll_layers": True, **extra})
        out[name] = (f, tree_util.tree_map(purejit.device_put, params(layers, d)))
    return out


def _ready(state) -> None:
    from purejit import tree_util

    for leaf in tree_util.tree_leaves(state):
        leaf.block_until_ready()


def measure(layers: int, d: int, reps: int, calls: int, profile: int) -> tuple[dict, str]:
    """(best host seconds per call of each form, cProfile's report or '')."""
    table = forms(layers, d)
    x = np.random.default_rng(1).standard_normal((2, d)).astype(np.float32)
    states = {}
    for name, (f, state) in table.items():  # compile, and reach the steady path
        for _ in range(3):
            state = f(state, x)
        _ready(state)
        states[name] = state
    best = {name: float("inf") for name in table}
    for _ in range(reps):
        for name, (f, _) in table.items():
            state = states[name]
            t0 = time.perf_counter()
            for _ in range(calls):
                state = f(state, x)
            t1 = time.perf_counter()
            _ready(state)
            states[name] = state
            best[name] = min(best[name], (t1 - t0) / calls)
    report = ""
    if profile:
        name = "stacked (Python dispatch)"
        f, state = table[name][0], states[name]
        pr = cProfile.Profile()
        t0 = time.perf_counter()
        pr.enable()
        for _ in range(profile):
            state = f(state, x)
        pr.disable()
        per = (time.perf_counter() - t0) / profile
        _ready(state)
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
        report = f"cProfile of {profile} calls of {name}: {per * 1e3:.3f} ms a call\n{s.getvalue()}"
    return best, report


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--profile", type=int, default=0, help="cProfile this many stacked calls")
    args = ap.parse_args(argv)
    best, report = measure(args.layers, args.d, args.reps, args.calls, args.profile)
    print(
        f"host ms per call of a donated rolled SGD step, {args.layers} layers, d = {args.d} "
        f"({2 * args.layers + 1} leaves), best of {args.reps} x {args.calls} calls, interleaved"
    )
    print("| " + " | ".join(best) + " |")
    print("|" + "---:|" * len(best))
    print("| " + " | ".join(f"{v * 1e3:.3f}" for v in best.values()) + " |")
    if report:
        print()
        print(report)


if __name__ == "__main__":
    main()
