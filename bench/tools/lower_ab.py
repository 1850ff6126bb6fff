"""purejit's own part of a rolled first call (trace, passes, emit; no XLA) from two checkouts.

    git archive 909cd3a | tar -x -C /tmp/base          # the checkout to compare against
    python -m bench.tools.lower_ab --base /tmp/base --layers 48 --train [--rounds 4] [--lowerings 2]

Each round runs one process per checkout, alternately; each process lowers the
`bench.cold_start --roll-sweep` model (`roll_layers` on; `--train`: value_and_grad plus SGD on
donated parameters) `--lowerings` times, each time a fresh jitted layer and program and an
empty pass cache, and reports `Lowered.timings`. Prints, per checkout, the minimum and the
median of trace + passes + emit over all lowerings and over the first lowering of each process
(a cold interpreter: what a fresh process's first call pays), and the minimum of each part.
The minimum of several lowerings moves far less with a shared machine's load than one cold
process does (`bench.tools.cold_start_ab`, which times whole first calls, XLA included).
Children run this checkout's `_child` over each checkout's purejit (the base's `purejit/ir`
and `purejit/passes` must resolve to its `ir/` and `passes/`: made here when missing).
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTS = ("trace", "passes", "emit")


def _child(args) -> None:
    import tempfile

    import purejit
    import purejit.numpy as xp
    from bench.models import transformer, transformer_params

    np.asarray(purejit.jit(lambda a: a + 1)(np.ones(3, np.float32)))  # start the backend
    params = transformer_params(args.layers, args.d, np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((args.batch, args.seq, args.d))
    dev = purejit.tree_util.tree_map(lambda a: xp.asarray(a) + 0, params)
    rows = []
    for _ in range(args.lowerings):
        with tempfile.TemporaryDirectory() as cache:
            purejit.config.update(cache_dir=cache)
            block = purejit.jit(lambda h, p: transformer(xp, [p], h, args.heads))

            def model(ps, h):
                for p in ps:
                    h = block(h, p)
                return h

            def loss(ps, h):
                return xp.mean(model(ps, h) ** 2)

            def step(ps, h):
                value, grads = purejit.value_and_grad(loss)(ps, h)
                return purejit.tree_util.tree_map(lambda p, g: p - 1e-3 * g, ps, grads), value

            kw = {"donate_argnums": 0} if args.train else {}
            f = purejit.jit(
                step if args.train else model, compiler_options={"roll_layers": True}, **kw
            )
            low = f.lower(dev, x.astype(np.float32))
            rows.append({k: low.timings[k] for k in PARTS})
    print("RESULT " + json.dumps(rows))


def _run(root: str, args) -> list[dict]:
    # (in the parent only: a child runs this file over the base checkout's `bench`)
    from bench.tools.cold_start_ab import run_child

    argv = ["--child", "--base", root]
    for k in ("layers", "d", "heads", "seq", "batch", "lowerings"):
        argv += [f"--{k}", str(getattr(args, k))]
    argv += ["--train"] if args.train else []
    script = os.path.join(ROOT, "bench", "tools", "lower_ab.py")
    return run_child(root, script, argv, "lowering")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the other checkout (a folder)")
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--lowerings", type=int, default=2, help="lowerings per process")
    ap.add_argument("--train", action="store_true", help="the training step, not the forward")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for k, v in dict(d=128, heads=4, seq=64, batch=2).items():
        ap.add_argument(f"--{k}", type=int, default=v)
    args = ap.parse_args(argv)
    if args.child:
        _child(args)
        return {}
    from bench.tools.cold_start_ab import link_base

    base = link_base(args.base)
    runs: dict[str, list[list[dict]]] = {"base": [], "this checkout": []}
    for _ in range(args.rounds):
        runs["base"].append(_run(base, args))
        runs["this checkout"].append(_run(ROOT, args))
    what = "training step" if args.train else "forward"
    print(f"\n{args.layers}-layer {what}: purejit's lowering (s), {args.rounds} rounds x "
          f"{args.lowerings} lowerings per process\n")  # fmt: skip
    print("| checkout | t+p+e min | t+p+e median | first in process: min | median "
          "| trace min | passes min | emit min |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    out = {}
    for name, procs in runs.items():
        every = [r for rows in procs for r in rows]
        total = np.array([sum(r[k] for k in PARTS) for r in every])
        first = np.array([sum(rows[0][k] for k in PARTS) for rows in procs])
        mins = {k: min(r[k] for r in every) for k in PARTS}
        out[name] = {"min": float(total.min()), "median": float(np.median(total)), **mins}
        print(f"| {name} | {total.min():.3f} | {np.median(total):.3f} | {first.min():.3f} "
              f"| {np.median(first):.3f} | {mins['trace']:.3f} | {mins['passes']:.3f} "
              f"| {mins['emit']:.3f} |")  # fmt: skip
    return out


if __name__ == "__main__":
    main()
