"""Issue #32, a third route for repeated layers: the layer's forward and backward compiled once
each as programs of their own, chained by the host, against purejit's unrolled and rolled
training steps. Measures what the route would give before the compiler builds it.

A rolled loop keeps what each layer saves for the backward pass in stacks, and XLA copies
every saved value into its row and back out (a GPU's cuBLAS and cuDNN calls take whole
buffers; `gpu_logs/s19/rollprof_h200`: 459 device-to-device copies, 3.5 ms of a 24 ms
step). Chained programs keep each saved value in a buffer of its own, as the unrolled
program does: the forward program returns `purejit.vjp`'s pullback (its leaves are the
residuals) and the backward program takes it. "purejit host route" is the compiler's own
host loop (`compiler_options={"roll_layers": "host"}`, `purejit/compiler/host_loop.py`):
the rolled step split at its loops, each loop's body one program launched per layer;
"purejit host route kN" runs N layers a launch (`host_layers_per_run`). Each form runs in a
fresh process:

    python -m bench.tools.host_loop --out DIR [--layers 12 --d 1024 --heads 16 --seq 1024
        --batch 8 --dtype bfloat16 --steps 10]

Per form: the first call (trace + compile + run), the steady step (best of 3 windows of
`--steps` chained, donated steps, waited for at the end), the device's peak memory where
the back end reports it, and the largest parameter difference from the unrolled program
after 3 steps.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

FORMS = ("purejit unrolled", "purejit rolled", "purejit host loop", "purejit host route")


def _model(a):
    import ml_dtypes  # noqa: F401  (names bfloat16 for numpy)

    from bench.models import transformer_params

    dt = np.dtype(a.dtype)
    params = transformer_params(a.layers, a.d, np.random.default_rng(0), dtype=dt)
    x = np.random.default_rng(1).standard_normal((a.batch, a.seq, a.d)).astype(dt)
    return params, x


def _whole_step(a, roll, per_run=1):
    """One jitted, donated training step over the Python loop of layers (`roll`: the
    `roll_layers` option: False, True, or "host" for the compiler's host loop, running
    `per_run` layers a launch)."""
    import purejit
    import purejit.numpy as xp
    from bench.models import transformer

    tmap = purejit.tree_util.tree_map
    layer = purejit.jit(lambda h, p: transformer(xp, [p], h, a.heads))

    def loss(ps, h):
        for p in ps:
            h = layer(h, p)
        return xp.mean(h**2)

    def step(ps, h):
        value, grads = purejit.value_and_grad(loss)(ps, h)
        return tmap(lambda p, g: p - 1e-3 * g, ps, grads), value

    opts = {"roll_layers": roll}
    if roll == "host":
        opts["host_layers_per_run"] = per_run
    return purejit.jit(step, donate_argnums=0, compiler_options=opts)


def _host_loop_step(a):
    """The same step as programs compiled once each: a layer's forward (returning its
    pullback), its backward with the layer's update (the parameters donated), and the
    loss's head: 2 calls a layer."""
    import purejit
    import purejit.numpy as xp
    from bench.models import transformer

    tmap = purejit.tree_util.tree_map

    def layer(p, h):
        return transformer(xp, [p], h, a.heads)

    def backward_update(p, pullback, g):
        g_p, g_h = pullback(g)
        return tmap(lambda w, d: w - 1e-3 * d, p, g_p), g_h

    forward = purejit.jit(lambda p, h: purejit.vjp(layer, p, h))
    backward = purejit.jit(backward_update, donate_argnums=0)
    head = purejit.jit(purejit.value_and_grad(lambda h: xp.mean(h**2)))

    def step(ps, h):
        pullbacks = []
        for p in ps:
            h, pullback = forward(p, h)
            pullbacks.append(pullback)
        value, g = head(h)
        new = [None] * len(ps)
        for i in reversed(range(len(ps))):
            new[i], g = backward(ps[i], pullbacks.pop(), g)
        return new, value

    return step


def _block(tree):
    import purejit

    for leaf in purejit.tree_util.tree_leaves(tree):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def _peak_bytes():
    import jax  # the device's own counters (purejit shares JAX's PJRT client)

    try:
        return (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use")
    except (RuntimeError, NotImplementedError):
        return None


def _memory(a, step, ps, xd) -> dict:
    """The device's allocator counters after the steps, and what the program's buffers
    come to by XLA's figures: for the host route `HostLoopCompiled.memory_plan` (`model`:
    the most its launches hold at once; `saved_per_layer`: the forward body's outputs), for
    one program its arguments, outputs and temporaries less the donated aliases."""
    import jax

    try:
        stats = jax.devices()[0].memory_stats() or {}
    except (RuntimeError, NotImplementedError):
        stats = {}
    keys = ("bytes_in_use", "num_allocs", "largest_alloc_size", "bytes_reserved",
            "peak_bytes_reserved", "largest_free_block_bytes", "bytes_limit")  # fmt: skip
    out = {"allocator": {k: stats[k] for k in keys if k in stats}}
    if a.child == "purejit host loop":
        return out
    compiled = step.lower(ps, xd).compile()
    if hasattr(compiled, "memory_plan"):
        plan = compiled.memory_plan()
        first = compiled.lowered.host_route.split.launches[0].program
        out["model_bytes"] = plan["peak"]
        out["saved_per_layer"] = plan["programs"][first]["output"]
        out["programs"] = plan["programs"]
    else:
        m = compiled.memory_analysis()
        out["model_bytes"] = (m.argument_size_in_bytes + m.output_size_in_bytes
                              - m.alias_size_in_bytes + m.temp_size_in_bytes)  # fmt: skip
    return out


def child(a) -> dict:
    import purejit

    params, x = _model(a)
    if a.child == "purejit host loop":
        step = _host_loop_step(a)
    elif a.child.startswith("purejit host route"):
        # "purejit host route kN": N layers a launch (`host_layers_per_run`)
        k = a.child.removeprefix("purejit host route").strip()
        step = _whole_step(a, "host", int(k.removeprefix("k")) if k else 1)
    else:
        step = _whole_step(a, roll={"purejit rolled": True}.get(a.child, False))
    ps = purejit.tree_util.tree_map(lambda v: purejit.numpy.asarray(v) + 0, params)
    xd = purejit.numpy.asarray(x)
    _block((ps, xd))
    t0 = time.perf_counter()
    ps, value = step(ps, xd)
    _block((ps, value))
    first = time.perf_counter() - t0
    for _ in range(2):
        ps, value = step(ps, xd)
    _block((ps, value))
    check = np.asarray(ps[0]["qkv"], np.float32)
    np.save(os.path.join(a.out, a.child.replace(" ", "_") + "_qkv.npy"), check)
    windows, host = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            ps, value = step(ps, xd)
        host.append((time.perf_counter() - t0) / a.steps)
        _block((ps, value))
        windows.append((time.perf_counter() - t0) / a.steps)
    route = None
    if a.child.startswith("purejit host route"):  # what the compiler made of it (or why not)
        report = step.lower(ps, xd).host_route.report
        r = report.get("split")
        route = report["refused"] if r is None else (
            f"{r['programs']} programs, {r['launches']} launches a step"
        )  # fmt: skip
        for f in (r or {}).get("folded", ()):
            if "folded" in f:
                route += (f"; each layer's {f['folded']['ops_per_row']} ops after the "
                          "backward loop folded into its body")  # fmt: skip
    return {
        **_memory(a, step, ps, xd),
        "route": route,
        "first_call_s": first,
        "step_ms": min(windows) * 1e3,
        "host_ms": min(host) * 1e3,
        "peak_bytes": _peak_bytes(),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--d", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--forms", default=",".join(FORMS))
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    if a.child:
        print(json.dumps(child(a)))
        return
    forms = [s.strip() for s in a.forms.split(",")]
    rows = {}
    for form in forms:
        cmd = [sys.executable, "-m", "bench.tools.host_loop", "--child", form]
        cmd += [arg for arg in (argv if argv is not None else sys.argv[1:])]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            print(f"{form}: failed\n{r.stderr[-3000:]}", flush=True)
            continue
        rows[form] = json.loads(r.stdout.strip().splitlines()[-1])
        print(form, rows[form], flush=True)
    base = rows.get("purejit unrolled")
    ref = os.path.join(a.out, "purejit_unrolled_qkv.npy")
    lines = [
        f"# host loop: {a.layers} layers, d={a.d}, {a.heads} heads, batch {a.batch} x seq "
        f"{a.seq}, {a.dtype}, training step (donated)",
        "",
        "| form | first call (s) | step (ms) | / unrolled | host ms/step (until the calls "
        "return) | peak device memory (MiB) | max abs diff of layer 0's qkv after 3 steps |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for form, r in rows.items():
        ratio = f"{r['step_ms'] / base['step_ms']:.3f}x" if base else ""
        peak = f"{r['peak_bytes'] / 2**20:.0f}" if r["peak_bytes"] else ""
        diff = ""
        mine = os.path.join(a.out, form.replace(" ", "_") + "_qkv.npy")
        if os.path.exists(ref) and os.path.exists(mine):
            diff = f"{float(np.max(np.abs(np.load(mine) - np.load(ref)))):.2e}"
        lines.append(
            f"| {form} | {r['first_call_s']:.2f} | {r['step_ms']:.2f} | {ratio} | "
            f"{r['host_ms']:.2f} | {peak} | {diff} |"
        )
    mib = 2**20
    lines += [
        "",
        "| form | peak (MiB) | XLA's buffers at most (MiB) | peak - buffers (MiB) | "
        "forward trip's outputs (MiB) | allocator: allocs, largest free block (MiB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for form, r in rows.items():
        model, peak, al = r.get("model_bytes"), r["peak_bytes"], r.get("allocator", {})
        gap = f"{(peak - model) / mib:.0f}" if model and peak else ""
        saved = f"{r['saved_per_layer'] / mib:.1f}" if r.get("saved_per_layer") else ""
        free = al.get("largest_free_block_bytes")
        lines.append(
            f"| {form} | {f'{peak / mib:.0f}' if peak else ''} | "
            f"{f'{model / mib:.0f}' if model else ''} | {gap} | {saved} | "
            f"{al.get('num_allocs', '')}, {f'{free / mib:.0f}' if free else ''} |"
        )
    lines.append("")
    for form, r in rows.items():
        for k, p in enumerate(r.get("programs", ())):
            lines.append(
                f"- {form} program {k} ({p['kind']}, {p['launches']}x): "
                + ", ".join(f"{n} {p[n] / mib:.1f} MiB" for n in ("argument", "output",
                                                                   "temp", "alias"))
            )  # fmt: skip
    for form, r in rows.items():
        if r.get("route"):
            lines.append(f"\n{form}: {r['route']}")
    with open(os.path.join(a.out, "host_loop.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
