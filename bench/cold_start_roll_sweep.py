"""`python -m bench.cold_start --roll-sweep 12,24,48 [--train] [--repeats N]`: repeated
layers, each variant's first call in its own fresh process with an empty cache.

`ROLL_VARIANTS` are the rows of each layer count (purejit rolled, unrolled, and rolled with
the loop traced flat; `jax.jit` unrolled and with `lax.scan` over stacked parameters);
`roll_child` is one variant's cold first call and steady call in the child process (`--child
... --variant K`), with purejit's time split, temporaries, the stacking bytes and kernels of
the compiled HLO (`bench/cold_start_hlo.py`); `roll_sweep` spawns every variant at every layer
count, interleaved over `--repeats` rounds, and prints the table of median first calls.
"""

from __future__ import annotations

import json
import tempfile
import time

import numpy as np

from bench.cold_start_process import best_of, spawn


ROLL_VARIANTS = (
    "purejit rolled",
    "purejit unrolled",
    "jax.jit unrolled",
    "jax.jit scan",
    "purejit rolled, flat loop",
)


def roll_child(args):
    """One cold first call of a roll-sweep variant, in this fresh process."""
    from bench.models import transformer, transformer_params

    params = transformer_params(args.layers, args.d, np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((args.batch, args.seq, args.d)).astype(np.float32)
    heads, variant = args.heads, ROLL_VARIANTS[args.variant]
    out = {"variant": variant}
    if variant.startswith("purejit"):
        import purejit
        import purejit.numpy as xp

        purejit.config.update(cache_dir=args.cache)
        np.asarray(purejit.jit(lambda a: a + 1)(np.ones(3, np.float32)))  # start the backend

        def block(x, p):
            return transformer(xp, [p], x, heads)

        if variant != "purejit rolled, flat loop":  # else the loop is traced flat
            block = purejit.jit(block)
        vg, tmap = purejit.value_and_grad, purejit.tree_util.tree_map
        options = {"roll_layers": variant != "purejit unrolled"}
        options.update(json.loads(args.purejit_options))

        def jit(f, **kw):
            return purejit.jit(f, compiler_options=options, **kw)

        def put(t):
            return tmap(lambda a: xp.asarray(a) + 0, t)
    else:
        import jax
        import jax.numpy as xp

        jax.config.update("jax_compilation_cache_dir", args.cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        jax.jit(lambda a: a + 1)(np.ones(3, np.float32)).block_until_ready()
        vg, tmap = jax.value_and_grad, jax.tree_util.tree_map
        jit, put = jax.jit, lambda t: tmap(jax.device_put, t)

        def block(x, p):
            return transformer(xp, [p], x, heads)

        if variant == "jax.jit scan":
            params = tmap(lambda *a: np.stack(a), *params)

    if variant == "jax.jit scan":

        def model(ps, x):
            return jax.lax.scan(lambda h, p: (block(h, p), None), x, ps)[0]
    else:

        def model(ps, x):
            for p in ps:
                x = block(x, p)
            return x

    def loss(ps, x):
        return xp.mean(model(ps, x) ** 2)

    def step(ps, x):
        value, grads = vg(loss)(ps, x)
        return tmap(lambda p, g: p - 1e-3 * g, ps, grads), value

    if args.train:
        f = jit(step, donate_argnums=0)
        dev = put(params)
        t0, c0 = time.perf_counter(), time.process_time()
        new, value = f(dev, x)
        float(np.asarray(value))
        out["first_call"] = time.perf_counter() - t0
        out["first_call_cpu"] = time.process_time() - c0
        state, returns = [new], [float("inf")]

        def train_step():  # the parameters of one step are donated to the next
            t0 = time.perf_counter()
            state[0], value = f(state[0], x)
            returns[0] = min(returns[0], time.perf_counter() - t0)
            return float(np.asarray(value))

        out["steady"] = best_of(train_step, n=10)
        out["returns"] = returns[0]
        out["checksum"] = float(np.asarray(value))
    else:
        f = jit(model)
        t0, c0 = time.perf_counter(), time.process_time()
        y = np.asarray(f(params, x))
        out["first_call"] = time.perf_counter() - t0
        # the process's CPU time (all its threads): moves less with a shared machine's load
        out["first_call_cpu"] = time.process_time() - c0
        out["steady"] = best_of(lambda: np.asarray(f(params, x)), n=10)
        out["checksum"] = float(np.abs(y).sum())
    from bench.cold_start_hlo import kernel_counts, stacking_bytes, trip_kernels

    if variant.startswith("purejit"):
        compiled = next(iter(f.cache.values()))
        out["timings"] = compiled.lowered.timings
        out["hlo_bytes"] = stacking_bytes(compiled.as_text())
    else:
        compiled = f.lower(params, x).compile()
    out["kernels"] = kernel_counts(compiled.as_text())
    out["trip_kernels"] = trip_kernels(compiled.as_text())  # in the --out JSON
    out["temp"] = compiled.memory_analysis().temp_size_in_bytes
    print("RESULT " + json.dumps(out))


def roll_sweep(args) -> dict:
    """Every variant at every layer count, each in a fresh process; prints the table."""
    import jax

    dev = jax.devices()[0]
    what = "training step (value_and_grad + SGD, donated)" if args.train else "forward"
    print(
        f"\n### Repeated layers, {what}: transformer d={args.d}, heads={args.heads}, batch "
        f"{args.batch} x seq {args.seq}, a Python loop (over a jitted layer unless flat) "
        f"({dev.platform}: {dev.device_kind}); fresh process and empty cache per row"
        f"{'' if args.purejit_options == '{}' else '; purejit options ' + args.purejit_options}"
        f"{f'; median of {args.repeats} interleaved rounds' if args.repeats > 1 else ''}"
        "\n"
    )
    print(
        "| layers | variant | first call (s) | vs jax.jit unrolled | vs jax.jit scan | trace "
        "| passes | emit | XLA compile | steady (ms) | steady vs unrolled | temporaries (MiB) "
        "| stack / ys zero-fill / unstack per call (MiB) | kernels: entry + loop bodies "
        "| call returns (ms) |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
    rows = {}
    for layers in [int(n) for n in args.roll_sweep.split(",")]:
        args.layers = layers
        runs: dict = {name: [] for name in ROLL_VARIANTS}
        for _ in range(max(args.repeats, 1)):  # interleaved: each round runs every variant
            for k, name in enumerate(ROLL_VARIANTS):
                with tempfile.TemporaryDirectory() as cache:
                    runs[name].append(spawn(name, cache, args, variant=k))
        got = {name: _median_run(rs) for name, rs in runs.items()}
        rows[layers] = got
        ju, js = got["jax.jit unrolled"], got["jax.jit scan"]
        for name, r in got.items():
            t = r.get("timings", {})
            split = [f"{t[k]:.3f}" if k in t else "-" for k in ("trace", "passes", "emit")]
            xla = t.get("xla_compile")
            base = got["purejit unrolled"] if name.startswith("purejit") else ju
            m = r.get("hlo_bytes")
            moved = "-"
            if m and m["loops"]:
                moved = " / ".join(f"{m[k] / 2**20:.2f}" for k in ("stack", "ys_init", "unstack"))
            k = r["kernels"]
            kernels = " + ".join(str(n) for n in [k["entry"], *k["loop_bodies"]])
            ret = f"{r['returns'] * 1e3:.2f}" if "returns" in r else "-"
            print(
                f"| {layers} | {name} | {r['first_call']:.3f} "
                f"| {r['first_call'] / ju['first_call']:.2f}x "
                f"| {r['first_call'] / js['first_call']:.2f}x | {' | '.join(split)} "
                f"| {'-' if xla is None else f'{xla:.3f}'} | {r['steady'] * 1e3:.2f} "
                f"| {r['steady'] / base['steady']:.2f}x | {r['temp'] / 2**20:.1f} | {moved} "
                f"| {kernels} | {ret} |"
            )
        sums = [r["checksum"] for r in got.values()]
        spread = (max(sums) - min(sums)) / max(abs(max(sums)), 1e-30)
        if spread > 1e-3:
            raise AssertionError(f"{layers} layers: the variants disagree ({sums})")
    return rows


def _median_run(runs: list[dict]) -> dict:
    """The run of median first call, its purejit time split replaced by each part's median
    over the runs, and every run's first call (`first_calls`)."""
    ordered = sorted(runs, key=lambda r: r["first_call"])
    out = dict(ordered[(len(ordered) - 1) // 2])
    out["first_calls"] = [r["first_call"] for r in runs]
    if "timings" in out:
        keys = set().union(*(r.get("timings", {}) for r in runs))
        out["timings"] = {
            k: float(np.median([r["timings"][k] for r in runs if k in r.get("timings", {})]))
            for k in keys
        }
    return out
