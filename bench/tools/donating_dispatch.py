"""Host time per call of a donating training step whose execution is negligible: what the
dispatch costs when a launch-bound step is bound by the host.

The step scales every parameter (a list of per-layer dicts of 8 arrays, 16 wide, donated)
and returns them with the NumPy batch's sum, as `f(params, x)`; the state is threaded
through the calls. Forms, interleaved in one process, best of `--reps` rounds of
`--calls` calls each (the clock stops when the last call returns, before the arrays are
ready):

- `jax.jit`: JAX's own, donating;
- `purejit`: purejit's default (jaxlib's C++ dispatch runs the donating program);
- `purejit, Python dispatch`: the same with the C++ fast path refused for this function, as
  purejit dispatched donating programs before they could take it;
- `purejit, no donation`: the step without `donate_argnums` (C++ dispatch).

    python -m bench.tools.donating_dispatch [--layers 12,24] [--reps 30] [--calls 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

WIDTH = 16
NAMES = ("ln1_s", "ln1_b", "wqkv", "wo", "ln2_s", "ln2_b", "w1", "w2")


def init(layers: int) -> list[dict]:
    rng = np.random.default_rng(0)
    out = []
    for _ in range(layers):
        layer = {}
        for n in NAMES:
            shape = (WIDTH, WIDTH) if n.startswith("w") else (WIDTH,)
            layer[n] = rng.standard_normal(shape).astype(np.float32)
        out.append(layer)
    return out


def make_step(tree_map):
    def step(params, x):
        return tree_map(lambda p: p * 0.999, params), x.sum()

    return step


def forms(layers: int):
    """{name: (call, state, ready)}: `call(state, x) -> (state, loss)`."""
    import jax

    import purejit
    from purejit import tree_util
    from purejit.compiler import cpp_dispatch

    params = init(layers)
    pstep = make_step(tree_util.tree_map)
    python_only = purejit.jit(pstep, donate_argnums=0)
    real = cpp_dispatch.fastpath_for

    def refusing(jitted, *args):
        return None if jitted is python_only else real(jitted, *args)

    cpp_dispatch.fastpath_for = refusing

    def purejit_state():
        return tree_util.tree_map(lambda v: purejit.device_put(v), params)

    def purejit_ready(state):
        for leaf in tree_util.tree_leaves(state):
            leaf.block_until_ready()

    def jax_ready(state):
        jax.block_until_ready(state)

    return {
        "jax.jit": (
            jax.jit(make_step(jax.tree.map), donate_argnums=0),
            jax.tree.map(jax.device_put, params),
            jax_ready,
        ),
        "purejit": (purejit.jit(pstep, donate_argnums=0), purejit_state(), purejit_ready),
        "purejit, Python dispatch": (python_only, purejit_state(), purejit_ready),
        "purejit, no donation": (purejit.jit(pstep), purejit_state(), purejit_ready),
    }


def measure(layers: int, reps: int, calls: int) -> dict[str, float]:
    """Best host seconds per call of each form."""
    table = forms(layers)
    x = np.ones((8, WIDTH), np.float32)
    states = {name: state for name, (_, state, _) in table.items()}
    for name, (f, _, ready) in table.items():  # compile, and reach the steady path
        for _ in range(3):
            states[name] = f(states[name], x)[0]
        ready(states[name])
    best = {name: float("inf") for name in table}
    for _ in range(reps):
        for name, (f, _, ready) in table.items():
            state = states[name]
            t0 = time.perf_counter()
            for _ in range(calls):
                state = f(state, x)[0]
            t1 = time.perf_counter()
            ready(state)
            states[name] = state
            best[name] = min(best[name], (t1 - t0) / calls)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", default="12,24")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args(argv)
    rows = []
    names = None
    for layers in [int(n) for n in args.layers.split(",")]:
        best = measure(layers, args.reps, args.calls)
        names = list(best)
        rows.append((layers, best))
    print(
        f"host ms per call of a donating step, best of {args.reps} x {args.calls} calls, "
        "interleaved"
    )
    print("| layers (arrays) | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for layers, best in rows:
        cells = " | ".join(f"{best[n] * 1e3:.3f}" for n in names)
        print(f"| {layers} ({layers * len(NAMES)}) | {cells} |")


if __name__ == "__main__":
    main()
