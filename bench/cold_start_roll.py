"""`python -m bench.cold_start --roll-ab [--layers N] [--workload W] [--roll-forms F]`: the
steady step of repeated layers rolled into one scan (`compiler_options={"roll_layers": True}`)
against the same program unrolled, interleaved in one process, with temporaries and the
bytes the rolled program's compiled HLO spends stacking and unstacking per call."""

from __future__ import annotations

import contextlib
import time

import numpy as np


def ab_workload(args, purejit, xp):
    """(per-layer parameters, input, layer) of `--workload`: the bench.models transformer,
    an MLP stack (residual tanh layers of width d), a conv stack (3x3 convolutions of d/4
    channels on 16x16 images, residual relu) or a scan RNN (one tanh cell over seq steps per
    layer, a `lax.scan` inside each layer)."""
    from bench.models import transformer, transformer_params

    rng, n, d = np.random.default_rng(0), args.layers, args.d
    if args.workload == "transformer":
        import ml_dtypes  # noqa: F401  (names bfloat16 for numpy)

        dt = np.dtype(getattr(args, "dtype", None) or "float32")
        x = rng.standard_normal((args.batch, args.seq, d)).astype(dt)
        params = transformer_params(n, d, rng, dtype=dt)
        return params, x, lambda x, p: transformer(xp, [p], x, args.heads)

    def w(*shape, fan):
        return (rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32)

    if args.workload == "mlp":
        params = [{"w": w(d, d, fan=d), "b": np.zeros(d, np.float32)} for _ in range(n)]
        x = rng.standard_normal((args.batch * args.seq, d)).astype(np.float32)
        return params, x, lambda x, p: x + xp.tanh(x @ p["w"] + p["b"])
    if args.workload == "conv":
        c = max(d // 4, 8)
        params = [{"k": w(3, 3, c, c, fan=9 * c), "b": np.zeros(c, np.float32)} for _ in range(n)]
        x = rng.standard_normal((args.batch, 16, 16, c)).astype(np.float32)
        dn = ("NHWC", "HWIO", "NHWC")

        def conv(x, p):
            y = purejit.lax.conv_general_dilated(x, p["k"], (1, 1), "SAME", dimension_numbers=dn)
            return x + xp.maximum(y + p["b"], 0.0)

        return params, x, conv
    if args.workload == "rnn":
        params = [{"w": w(d, d, fan=d), "u": w(d, d, fan=d)} for _ in range(n)]
        x = rng.standard_normal((args.seq, args.batch, d)).astype(np.float32)

        def rnn(xs, p):
            def cell(h, x):
                h = xp.tanh(h @ p["w"] + x @ p["u"])
                return h, h

            return purejit.lax.scan(cell, xs[0], xs)[1]

        return params, x, rnn
    raise SystemExit(f"--workload {args.workload!r}: one of transformer, mlp, conv, rnn")


@contextlib.contextmanager
def packing(flag: bool):
    """While open, rolled programs that lower pack their saved values into one stacked
    output (`RollLayers(pack_ys=flag)`) whatever the back end's default (on GPU only): the
    A/B of `--pack-ab` and `bench.tools.roll_profile`."""
    from purejit.passes import pipeline

    default = pipeline.RollLayers
    pipeline.RollLayers = lambda **kw: default(**{**kw, "pack_ys": flag})
    try:
        yield
    finally:
        pipeline.RollLayers = default


def roll_ab(args) -> dict:
    """Steady step of purejit rolled against unrolled, interleaved in this one process (a
    fairer ratio than separate processes on a busy machine), best of `--ab-calls`, for the
    loop traced flat and for the loop over a jitted layer; with each program's temporaries
    and, from the rolled program's compiled HLO, the bytes it writes per call stacking
    per-layer arrays, zero-filling its loops' stacked outputs and slicing rows back out
    (`bench/cold_start_hlo.py`)."""
    import purejit
    import purejit.numpy as xp
    from bench.cold_start_hlo import kernel_counts, stacking_bytes, trip_kernels

    params, x, block = ab_workload(args, purejit, xp)

    def programs(layer):
        def forward(ps, x):
            for p in ps:
                x = layer(x, p)
            return x

        def loss(ps, x):
            return xp.mean(forward(ps, x) ** 2)

        def step(ps, x):
            value, grads = purejit.value_and_grad(loss)(ps, x)
            return purejit.tree_util.tree_map(lambda p, g: p - 1e-3 * g, ps, grads), value

        return (("forward", forward), ("training step", step))

    best = {}
    forms = {"flat loop": block, "jitted layer": purejit.jit(block)}
    for form in args.roll_forms.split(","):
        for what, fun in programs(forms[form]):
            fs = {r: purejit.jit(fun, compiler_options={"roll_layers": r}) for r in (False, True)}
            gpu = purejit.devices()[0].platform in ("gpu", "cuda", "rocm")  # packs by default
            if args.pack_ab:  # the rolled program with the other packing
                fs["other"] = purejit.jit(fun, compiler_options={"roll_layers": True})
            # the rolled program building its stacks itself (before `stacked_params`)
            fs["inside"] = purejit.jit(
                fun, compiler_options={"roll_layers": True, "stacked_params": False}
            )
            dev = purejit.tree_util.tree_map(xp.asarray, params)
            temp, moved, kernels = {}, {}, {}
            for r, f in fs.items():
                with packing(not gpu) if r == "other" else contextlib.nullcontext():
                    purejit.tree_util.tree_map(np.asarray, f(dev, x))
                compiled = next(iter(f.cache.values()))
                temp[r] = compiled.memory_analysis().temp_size_in_bytes
                moved[r] = stacking_bytes(compiled.as_text())
                k = kernel_counts(compiled.as_text())
                kernels[r] = " + ".join(str(n) for n in [k["entry"], *k["loop_bodies"]])
                if r is True:  # what each trip adds to the layer's kernels, per loop
                    trips = trip_kernels(compiled.as_text())
            times = {r: float("inf") for r in fs}
            for _ in range(args.ab_calls):
                for r, f in fs.items():
                    # waits for the results on the device: copying them to the host would
                    # time the training step's 8 parameter transfers a layer, not the step
                    t0 = time.perf_counter()
                    for leaf in purejit.tree_util.tree_leaves(f(dev, x)):
                        leaf.block_until_ready()
                    times[r] = min(times[r], time.perf_counter() - t0)
            m = moved[True]
            if what == "training step":
                donated = _donated_steps(purejit, xp, fun, params, x, args.ab_calls)
                best[f"{form}, donated training step"] = donated
            best[f"{form}, {what}"] = {"times": times, "temp": temp, "hlo_bytes": m}
            best[f"{form}, {what}"]["kernels"] = kernels
            ratio = times[True] / times[False]
            print(
                f"{args.workload}, {args.layers} layers, {form}, {what}: unrolled "
                f"{times[False] * 1e3:.2f} ms, rolled {times[True] * 1e3:.2f} ms, rolled / "
                f"unrolled {ratio:.3f}x; temporaries {temp[False] / 2**20:.1f} -> "
                f"{temp[True] / 2**20:.1f} MiB ({temp[True] / max(temp[False], 1):.2f}x); "
                f"rolled HLO per call: {m['loops']} loops, stack {m['stack'] / 2**20:.2f} MiB, "
                f"ys zero-fill {m['ys_init'] / 2**20:.2f} MiB, unstack "
                f"{m['unstack'] / 2**20:.2f} MiB; kernels (entry + loop bodies) unrolled "
                f"{kernels[False]}, rolled {kernels[True]}",
                flush=True,
            )
            added = ("row reads", "row writes", "loop copies", "counter")
            print(
                "    rolled, per trip of each loop: "
                + "; ".join(", ".join(f"{trip[a]} {a}" for a in added) for trip in trips),
                flush=True,
            )
            best[f"{form}, {what}"]["trip_kernels"] = trips
            mi = moved["inside"]
            print(
                f"    rolled, stacks built in the program (stacked_params off): "
                f"{times['inside'] * 1e3:.2f} ms ({times['inside'] / times[False]:.3f}x "
                f"unrolled), temporaries {temp['inside'] / 2**20:.1f} MiB, HLO per call: stack "
                f"{mi['stack'] / 2**20:.2f} MiB, unstack {mi['unstack'] / 2**20:.2f} MiB; "
                f"kernels {kernels['inside']}",
                flush=True,
            )
            if what == "training step":
                dt = donated["times"]
                print(
                    "    donated training step, each call on the previous call's outputs: "
                    + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in dt.items())
                    + f"; rolled / unrolled {dt['rolled'] / dt['unrolled']:.3f}x, stacks "
                    f"inside / unrolled {dt['rolled, stacks inside'] / dt['unrolled']:.3f}x; "
                    "temporaries "
                    + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in donated["temp"].items()),
                    flush=True,
                )
                print(
                    "    donated training step, dispatch (until the call returns): "
                    + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in donated["dispatch"].items())
                    + "; row views made per call: "
                    + ", ".join(f"{k} {v:.0f}" for k, v in donated["views"].items()),
                    flush=True,
                )
            if "other" in fs:
                print(
                    f"    rolled with saved values {'one stack each' if gpu else 'packed'} "
                    f"(above: {'packed' if gpu else 'one stack each'}): "
                    f"{times['other'] * 1e3:.2f} ms ({times['other'] / times[False]:.3f}x "
                    f"unrolled), kernels {kernels['other']}",
                    flush=True,
                )
    return best


def _donated_steps(purejit, xp, step, params, x, calls: int) -> dict:
    """The training step with its parameters donated, each call on the previous call's
    updated parameters (as a training loop runs it), unrolled, rolled, and rolled with the
    stacks built in the program; best of `calls` per program, interleaved. Also per program:
    the best dispatch time (until the call returns, before waiting for its results) and the
    row views (`purejit.backend.row_views`) its calls made, per call."""
    from purejit.backend import row_views

    made = [0]
    real = row_views._view

    def counting(*a, **k):  # every view made goes through `_view`
        made[0] += 1
        return real(*a, **k)

    options = {
        "unrolled": {},
        "rolled": {"roll_layers": True},
        "rolled, stacks inside": {"roll_layers": True, "stacked_params": False},
    }
    fs = {k: purejit.jit(step, donate_argnums=0, compiler_options=o) for k, o in options.items()}
    state = {k: purejit.tree_util.tree_map(xp.asarray, params) for k in fs}
    temp = {}
    for k, f in fs.items():
        state[k], _ = f(state[k], x)
        temp[k] = next(iter(f.cache.values())).memory_analysis().temp_size_in_bytes
    times = {k: float("inf") for k in fs}
    dispatch = {k: float("inf") for k in fs}
    views = {k: 0 for k in fs}
    row_views._view = counting
    try:
        for _ in range(calls):
            for k, f in fs.items():
                before = made[0]
                t0 = time.perf_counter()
                state[k], value = f(state[k], x)
                t1 = time.perf_counter()
                views[k] += made[0] - before
                value.block_until_ready()
                for leaf in purejit.tree_util.tree_leaves(state[k]):
                    leaf.block_until_ready()
                times[k] = min(times[k], time.perf_counter() - t0)
                dispatch[k] = min(dispatch[k], t1 - t0)
    finally:
        row_views._view = real
    per_call = {k: v / calls for k, v in views.items()}
    return {"times": times, "temp": temp, "dispatch": dispatch, "views": per_call}
