"""The rolled training step compiled by two versions of the `roll_layers` pass, against the
unrolled step, interleaved in one process: what a change of the pass does to the compiled
HLO (kernels in the entry and per loop trip, stacking bytes, temporaries) and to the steady
step time.

`--old PATH` is a `passes/roll_layers.py` of another commit (it loads as its own module and
replaces this tree's pass for the "old" program), e.g.

    git show main:passes/roll_layers.py > /tmp/old_roll_layers.py
    python -m bench.tools.roll_pass_ab --old /tmp/old_roll_layers.py --layers 12 --pack

The model is `bench.cold_start --roll-sweep --train`'s: the bench.models transformer (d=128,
4 heads, batch 2 x seq 64) over a jitted layer, value_and_grad + SGD on donated parameters.
`--pack` packs each loop's saved values into one stacked output as the compiler does on GPU
(`RollLayers(pack_ys=True)`), else as on CPU. Best of `--reps` rounds of one call each.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
import time

import numpy as np


def _load(path: str):
    spec = importlib.util.spec_from_file_location("old_roll_layers", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="a roll_layers.py of another commit")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--pack", action="store_true", help="pack saved values as on GPU")
    ap.add_argument("--reps", type=int, default=40)
    args = ap.parse_args(argv)

    import purejit
    import purejit.numpy as xp
    from bench.cold_start_hlo import kernel_counts, stacking_bytes, trip_kernels
    from bench.models import transformer, transformer_params
    from purejit.passes import pipeline

    params = transformer_params(args.layers, 128, np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((2, 64, 128)).astype(np.float32)
    block = purejit.jit(lambda x, p: transformer(xp, [p], x, 4))

    def loss(ps, x):
        for p in ps:
            x = block(x, p)
        return xp.mean(x**2)

    def step(ps, x):
        value, grads = purejit.value_and_grad(loss)(ps, x)
        return purejit.tree_util.tree_map(lambda p, g: p - 1e-3 * g, ps, grads), value

    @contextlib.contextmanager
    def pass_class(cls):
        default = pipeline.RollLayers
        pipeline.RollLayers = lambda **kw: cls(**{**kw, "pack_ys": args.pack})
        try:
            yield
        finally:
            pipeline.RollLayers = default

    classes = {"unrolled": None, "old": _load(args.old).RollLayers, "new": pipeline.RollLayers}
    fs, state, info = {}, {}, {}
    for name, cls in classes.items():
        f = purejit.jit(step, donate_argnums=0, compiler_options={"roll_layers": cls is not None})
        dev = purejit.tree_util.tree_map(lambda a: xp.asarray(a) + 0, params)
        with pass_class(cls) if cls else contextlib.nullcontext():
            state[name], value = f(dev, x)
        compiled = next(iter(f.cache.values()))
        text = compiled.as_text()
        k = kernel_counts(text)
        moved = stacking_bytes(text)
        info[name] = {
            "kernels": " + ".join(str(n) for n in [k["entry"], *k["loop_bodies"]]),
            "trips": trip_kernels(text),
            "temp_mib": round(compiled.memory_analysis().temp_size_in_bytes / 2**20, 2),
            "mib": {key: round(moved[key] / 2**20, 2) for key in ("stack", "ys_init", "unstack")},
            "loss": float(np.asarray(value)),
        }
        fs[name] = f
    best = dict.fromkeys(fs, float("inf"))
    for _ in range(args.reps):
        for name, f in fs.items():
            t0 = time.perf_counter()
            state[name], value = f(state[name], x)
            float(np.asarray(value))
            best[name] = min(best[name], time.perf_counter() - t0)
    for name in fs:
        ratio = best[name] / best["unrolled"]
        steady = f"{best[name] * 1e3:7.2f} ms ({ratio:.3f}x unrolled)"
        print(f"{name:9s} {steady} {json.dumps(info[name])}", flush=True)
    return {name: {"steady": best[name], **info[name]} for name in fs}


if __name__ == "__main__":
    main()
