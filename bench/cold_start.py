"""Cold start: the first call of a 12-layer transformer, without and with a warm persistent cache.

    python -m bench.cold_start [--quick] [--layers 12] [--d 256] [--seq 128] [--batch 4]
    python -m bench.cold_start --repeats 5 [--layers 48]   # the cold-start protocol
    python -m bench.cold_start --train --repeats 5         # the same for the training step

With `--repeats N`, only cold first calls: N fresh processes for each of purejit and jax.jit,
interleaved (purejit, jax, purejit, ...), each with its own empty cache folder (purejit's
`cache_dir`; JAX's compilation cache, which also holds XLA's autotuning results on GPU) and
the same XLA options; prints median, min and max and the ratio of the medians.

Every measurement runs in a fresh Python process (imports and backend start excluded, the
first call of the model timed, result brought to the host):

    purejit cold   empty `cache_dir`: trace, passes, StableHLO, XLA compile, run (fills it)
    purejit warm   a new process on that cache: trace, pass cache, StableHLO, executable load
    jax.jit cold   empty `jax_compilation_cache_dir`
    jax.jit warm   a new process on that cache

With `--train --repeats N`, the same cold-only protocol for the training step of
`bench.train`: `jit(value_and_grad(loss))` plus the SGD update of the donated parameters of
its transformer (the issue 13 model on GPU: 12 layers, batch 8, sequence 1024, width 1024, 16
heads, bfloat16; `bench.train`'s small sizes on CPU, `--quick` its quick ones; `--layers`,
`--d`, `--heads`, `--seq`, `--batch`, `--dtype` override), purejit with its default options
(automatic remat) against `jax.jit`, first call = trace + compile + one step with the
result on the host. The children inherit the environment, so XLA_FLAGS (e.g. the
`--xla-keep-barriers` flag of `bench.train`, here `--xla-keep-barriers` too) are the same
as in the steady-state run.

With `--roll-sweep 12,24,48` (add `--train` for the training step), repeated layers: the
model written as a Python loop over a jitted layer, for each layer count, each variant in
its own fresh process with an empty cache: purejit rolled (`compiler_options={"roll_layers":
True}`), purejit unrolled (the default), `jax.jit` unrolled, `jax.jit` with `lax.scan`
over stacked parameters, and purejit rolled with the loop traced flat (no jitted layer);
first call, purejit's trace / passes / emit / XLA compile, steady call, temporaries, the
bytes purejit's compiled HLO spends stacking and unstacking per call, the kernels of each
compiled HLO (entry, and each loop body, paid per trip) and, for the training step, the host
time until the call returns (its dispatch, where the device runs asynchronously). The
training step is `value_and_grad` of the mean square output plus SGD on the donated
parameters. `--out DIR` also writes the table (.md) and the rows (.json) there. With
`--repeats N`, N interleaved rounds of every variant: the row of the median first call, with
the median of each part of purejit's time split (a shared machine's load moves single runs)
(`bench/cold_start_roll_sweep.py`).
`--roll-ab [--layers N] [--workload transformer|mlp|conv|rnn]` times the steady forward and
training step of purejit rolled and unrolled interleaved in one process (the loop traced flat
and over a jitted layer), with the same memory and HLO figures (`bench/cold_start_roll.py`).

The model is `bench.models.transformer` (pre-LN encoder, written once for purejit.numpy and
jax.numpy). Prints a Markdown table with the first-call times, the warm/cold ratios (the
goal: purejit warm <= 10% of cold), the same without the model's own run time (first
call minus a steady-state call: on a CPU the run itself is seconds) and purejit's time split.
The purejit cache key includes a hash of purejit's IR and pass sources, so editing them
between the two runs (a shared checkout) turns the warm run's pass cache into a miss.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from bench.cold_start_process import best_of, spawn
from bench.cold_start_roll import roll_ab
from bench.cold_start_roll_sweep import roll_child, roll_sweep


def _train_child(args):
    """One cold first call of bench.train's training step, in this fresh process."""
    from bench.train import step_of, transformer_workload

    sizes = dict(layers=args.layers, batch=args.batch, seq=args.seq, width=args.d, heads=args.heads)
    sizes["dtype"] = args.dtype
    out = {}
    if args.child == "purejit":
        import purejit
        import purejit.numpy as pnp

        purejit.config.update(cache_dir=args.cache)
        platform = purejit.devices()[0].platform
        desc, make_loss, params, x, y = transformer_workload(platform, args.quick, **sizes)
        np.asarray(purejit.jit(lambda a: a + 1)(np.ones(3, np.float32)))  # start the backend
        tm = purejit.tree_util
        step = step_of(make_loss(pnp, purejit.lax), purejit.value_and_grad, tm.tree_map)
        f = purejit.jit(step, donate_argnums=0)
        args_dev = [tm.tree_map(lambda a: pnp.asarray(a) + 0, t) for t in (params, x, y)]
        leaves = tm.tree_leaves
    else:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_compilation_cache_dir", args.cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        platform = jax.devices()[0].platform
        desc, make_loss, params, x, y = transformer_workload(platform, args.quick, **sizes)
        jax.jit(lambda a: a + 1)(np.ones(3, np.float32)).block_until_ready()
        tm = jax.tree_util
        step = step_of(make_loss(jnp, jax.lax), jax.value_and_grad, tm.tree_map)
        f = jax.jit(step, donate_argnums=0)
        args_dev = [tm.tree_map(jax.device_put, t) for t in (params, x, y)]
        leaves = tm.tree_leaves
    for leaf in leaves(args_dev):
        leaf.block_until_ready()
    t0 = time.perf_counter()
    new_params, loss = f(*args_dev)
    for leaf in leaves(new_params):
        leaf.block_until_ready()
    out["loss"] = float(np.asarray(loss))
    out["first_call"] = time.perf_counter() - t0
    out["model"] = desc
    out["platform"] = platform
    print("RESULT " + json.dumps(out))


def _child(args):
    if args.variant is not None:
        return roll_child(args)
    if args.train:
        return _train_child(args)
    from bench.models import transformer, transformer_params

    params = transformer_params(args.layers, args.d, np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((args.batch, args.seq, args.d)).astype(np.float32)
    out = {}
    if args.child == "purejit":
        import purejit
        import purejit.numpy as pnp
        from purejit.compiler import cache as compile_cache

        purejit.config.update(cache_dir=args.cache)
        np.asarray(purejit.jit(lambda a: a + 1)(np.ones(3, np.float32)))  # start the backend
        f = purejit.jit(lambda p, x: transformer(pnp, p, x, args.heads))
        t0 = time.perf_counter()
        y = np.asarray(f(params, x))
        out["first_call"] = time.perf_counter() - t0
        out["steady"] = best_of(lambda: np.asarray(f(params, x)))
        stats = purejit.cache_stats(f)
        out["xla_compiles"] = stats.compiles
        out["cache_loads"] = stats.persistent_hits
        out["pass_cache_hits"] = compile_cache.counters.pass_hits
        lowered = next(iter(f.cache.values())).lowered
        out["timings"] = lowered.timings
    else:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_compilation_cache_dir", args.cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        jax.jit(lambda a: a + 1)(np.ones(3, np.float32)).block_until_ready()
        f = jax.jit(lambda p, x: transformer(jnp, p, x, args.heads))
        t0 = time.perf_counter()
        y = np.asarray(f(params, x))
        out["first_call"] = time.perf_counter() - t0
        out["steady"] = best_of(lambda: np.asarray(f(params, x)))
    out["checksum"] = float(np.abs(y).sum())
    print("RESULT " + json.dumps(out))


def _repeated_cold(args) -> dict:
    times = {"purejit": [], "jax": []}
    losses: dict = {}
    model = None
    for _ in range(args.repeats):
        for kind in times:
            with tempfile.TemporaryDirectory() as cache:
                r = spawn(kind, cache, args)
                times[kind].append(r["first_call"])
                model = r.get("model", model)
                if "loss" in r:
                    losses[kind] = r["loss"]
    stats = {k: (float(np.median(v)), min(v), max(v)) for k, v in times.items()}
    what = (
        f"training step (value_and_grad + SGD, donated parameters) of the {model}"
        if args.train
        else f"{args.layers}-layer transformer, d={args.d}"
    )
    flags = os.environ.get("XLA_FLAGS", "")
    print(
        f"\n### Cold first call, {what}, {args.repeats} fresh processes each, interleaved, "
        f"empty caches{f' (XLA_FLAGS={flags})' if flags else ''}\n"
    )
    print("| | median (s) | min (s) | max (s) |\n|---|---:|---:|---:|")
    for k, (med, lo, hi) in stats.items():
        print(f"| {'jax.jit' if k == 'jax' else k} | {med:.3f} | {lo:.3f} | {hi:.3f} |")
    print(f"\npurejit / jax.jit (medians): {stats['purejit'][0] / stats['jax'][0]:.2f}x")
    if losses:
        print("first loss: " + ", ".join(f"{k} {v:.6g}" for k, v in losses.items()))
        a, b = losses["purejit"], losses["jax"]
        if not np.isclose(a, b, rtol=5e-2, atol=5e-2):
            raise AssertionError(f"purejit's first loss {a} != jax's {b}")
    return times


class _Tee:
    """Writes to stdout and to a file."""

    def __init__(self, stream, path: str):
        self.stream, self.file = stream, open(path, "w")

    def write(self, text):
        self.stream.write(text)
        self.file.write(text)

    def flush(self):
        self.stream.flush()
        self.file.flush()


def _written(args, run) -> dict:
    """`run(args)` with what it prints also written to `args.out`/<name>.md and what it
    returns to <name>.json (name: the mode with its layer counts, the platform, and "train"
    for a training step)."""
    import jax

    if args.roll_ab:
        mode = f"roll_ab_{args.workload}_{args.layers}"
    else:
        mode = f"roll_sweep_{args.roll_sweep.replace(',', '-')}"
    name = f"cold_start_{mode}_{jax.devices()[0].platform}{'_train' if args.train else ''}"
    os.makedirs(args.out, exist_ok=True)
    tee = _Tee(sys.stdout, os.path.join(args.out, name + ".md"))
    stdout, sys.stdout = sys.stdout, tee
    try:
        got = run(args)
    finally:
        sys.stdout = stdout
        tee.file.close()
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(got, f, indent=1, default=str)
    return got


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 layers, d=128, seq 64 (CPU)")
    ap.add_argument("--layers", type=int, default=None, help="default 12")
    ap.add_argument("--d", type=int, default=None, help="width, default 256")
    ap.add_argument("--heads", type=int, default=None, help="default 4")
    ap.add_argument("--seq", type=int, default=None, help="default 128")
    ap.add_argument("--batch", type=int, default=None, help="default 4")
    ap.add_argument(
        "--train",
        action="store_true",
        help="the training step of bench.train's transformer (its sizes for the platform "
        "unless given; with --repeats)",
    )
    ap.add_argument("--dtype", default=None, help="--train only: float32 or bfloat16")
    ap.add_argument(
        "--xla-keep-barriers",
        action="store_true",
        help="as bench.train's flag: XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander",
    )
    ap.add_argument(
        "--roll-sweep",
        default=None,
        help="layer counts, e.g. 12,24,48: repeated layers rolled / unrolled / jax.jit "
        "unrolled / jax.jit lax.scan (with --train: the training step)",
    )
    ap.add_argument(
        "--roll-ab",
        action="store_true",
        help="steady step of purejit rolled vs unrolled, interleaved in one process",
    )
    ap.add_argument(
        "--roll-forms",
        default="flat loop,jitted layer",
        help="--roll-ab: which forms of the loop, comma-separated: flat loop, jitted layer",
    )
    ap.add_argument(
        "--out", default=None, help="--roll-sweep / --roll-ab: a folder for the table (.md, .json)"
    )
    ap.add_argument("--ab-calls", type=int, default=10, help="--roll-ab: timed calls each")
    ap.add_argument(
        "--purejit-options",
        default="{}",
        help="--roll-sweep: more compiler_options of the purejit variants, as JSON "
        "(e.g. '{\"remat\": false}')",
    )
    ap.add_argument(
        "--pack-ab",
        action="store_true",
        help="--roll-ab: also the rolled program with the other packing of its saved values "
        "(RollLayers.pack_ys: on by default on GPU, off on CPU), interleaved",
    )
    ap.add_argument(
        "--workload",
        default="transformer",
        help="--roll-ab: transformer (bench.models), mlp, conv or rnn (a scan in each layer)",
    )
    ap.add_argument("--variant", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child", choices=("purejit", "jax"), help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument(
        "--repeats",
        type=int,
        default=0,
        help="cold-only protocol, N each; with --roll-sweep: N interleaved rounds, medians",
    )
    args = ap.parse_args(argv)
    if args.child:
        return _child(args)
    if args.xla_keep_barriers:
        flag = "--xla_disable_hlo_passes=cse_barrier_expander"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
    if args.roll_sweep or args.roll_ab:
        defaults = dict(layers=12, d=128, heads=4, seq=64, batch=2)
        for k, v in defaults.items():
            if getattr(args, k) is None:
                setattr(args, k, v)
        if not args.out:
            return roll_ab(args) if args.roll_ab else roll_sweep(args)
        return _written(args, roll_ab if args.roll_ab else roll_sweep)
    if args.train:
        if not args.repeats:
            raise SystemExit("--train runs the cold-only protocol: give --repeats N (N >= 1)")
        return _repeated_cold(args)
    defaults = dict(layers=12, d=256, heads=4, seq=128, batch=4)
    if args.quick:
        defaults.update(layers=4, d=128, seq=64, batch=2)
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.repeats:
        return _repeated_cold(args)

    rows = {}
    with tempfile.TemporaryDirectory() as pj, tempfile.TemporaryDirectory() as jx:
        rows["purejit cold"] = spawn("purejit", pj, args)
        rows["purejit warm"] = spawn("purejit", pj, args)
        rows["jax.jit cold"] = spawn("jax", jx, args)
        rows["jax.jit warm"] = spawn("jax", jx, args)
    sums = {r["checksum"] for r in rows.values()}
    spread = (max(sums) - min(sums)) / max(max(sums), 1e-30)

    import jax

    dev = jax.devices()[0]
    print(
        f"\n### Cold start: {args.layers}-layer transformer, d={args.d}, heads={args.heads}, "
        f"batch {args.batch} x seq {args.seq} ({dev.platform}: {dev.device_kind})\n"
    )
    print(
        "| run | first call (s) | warm / cold | vs jax.jit cold | steady call (s) "
        "| first - steady (s) | warm / cold |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    jcold = rows["jax.jit cold"]["first_call"]
    for fw in ("purejit", "jax.jit"):
        cold = rows[f"{fw} cold"]
        for mode in ("cold", "warm"):
            r = rows[f"{fw} {mode}"]
            t, over = r["first_call"], r["first_call"] - r["steady"]
            cold_over = cold["first_call"] - cold["steady"]
            print(
                f"| {fw} {mode} | {t:.3f} | {t / cold['first_call']:.1%} | {t / jcold:.2f}x "
                f"| {r['steady']:.3f} | {over:.3f} | {over / cold_over:.1%} |"
            )
    warm, cold = rows["purejit warm"], rows["purejit cold"]
    print("\npurejit time split (s):\n")
    print(
        "| run | trace | passes | emit | XLA compile / cache load | XLA compiles "
        "| pass cache hits |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in (("cold", cold), ("warm", warm)):
        t = r["timings"]
        xla = t.get("xla_compile", t.get("cache_load", 0.0))
        print(
            f"| {name} | {t['trace']:.3f} | {t['passes']:.3f} | {t['emit']:.3f} | {xla:.3f} "
            f"| {r['xla_compiles']} | {r['pass_cache_hits']} |"
        )
    ratio = warm["first_call"] / cold["first_call"]
    over = (warm["first_call"] - warm["steady"]) / (cold["first_call"] - cold["steady"])
    print(
        f"\npurejit warm first call = {ratio:.1%} of cold (goal <= 10%), {over:.1%} without "
        f"the model's own run time; outputs agree to {spread:.1e} (relative, sum of |y|)"
    )
    return rows


if __name__ == "__main__":
    main()
