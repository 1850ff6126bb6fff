"""vmap: purejit.vmap against jax.vmap, lax.map and a Python loop over jit, as ratios.

    python -m bench.vmap [--quick] [--out docs/benchmarks] [--budget 0.3] [--repeats 3]

Workloads, each written once against (numpy-like, lax-like, vmap, grad) and batched over
examples:

    per-example grads   the gradient of an MLP's loss for every example of a batch (needs
                        `purejit.grad`; skipped, and said so, until it exists)
    ensemble            16 MLPs with stacked parameters applied to one shared batch
    ensemble, bigger models
                        8 wider MLPs on one batch: on CPU a loop over the members
                        (`lax.map`) beats JAX's batched program, as in JAX's issues
    Newton while_loop   Newton's method for a cube root, one vector per example; each
                        example stops at its own tolerance (batched: as long as the slowest)
    cond, one expensive branch
                        per example, a cheap update or a chain of matmuls, picked by the
                        data; half the examples take the expensive branch (a batched
                        predicate runs both branches for everyone, see README's vmap notes)
    cond, uniform predicate
                        the same program when every example takes the cheap branch

Forms timed (steady state, warm-up then many calls between two synchronisations, best of
`--repeats`): purejit's `jit(vmap(f, lowering=...))` with each lowering ("batched": a rule
per op, "loop": a scan over the examples, "auto": the faster of the two, measured once when
first compiled), `jax.jit(jax.vmap(f))`, `jit(lambda: lax.map(f, xs))` for both, and a
Python loop calling `jit(f)` once per example (purejit, JAX; `--no-python-loop` skips it).
Ratios are to jax.vmap in the same process (below 1: faster). Writes `vmap_<platform>.md` and
`vmap_<platform>.png` to `--out`. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from bench.run import _block

FORMS = [
    "purejit batched",
    "purejit loop",
    "purejit auto",
    "jax.vmap",
    "purejit lax.map",
    "jax lax.map",
    "purejit python loop",
    "jax python loop",
]


def _mlp(xp, params, x):
    (w1, b1), (w2, b2), (w3, b3) = params
    h = xp.tanh(x @ w1 + b1)
    h = xp.tanh(h @ w2 + b2)
    return h @ w3 + b3


def _layers(rng, sizes, lead=()):
    out = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        w = (rng.normal(size=(*lead, a, b)) / np.sqrt(a)).astype(np.float32)
        out.append((w, np.zeros((*lead, b), np.float32)))
    return tuple(out)


def per_example_grads(size):
    d, h, batch = size

    def make(xp, lax, vmap, grad):
        def loss(params, x, y):
            return ((_mlp(xp, params, x) - y) ** 2).sum()

        return grad(loss)

    rng = np.random.default_rng(0)
    params = _layers(rng, [d, h, h, 1])
    x = rng.normal(size=(batch, d)).astype(np.float32)
    y = rng.normal(size=(batch, 1)).astype(np.float32)
    name = f"per-example grads (MLP {d}-{h}-{h}-1, batch {batch})"
    return make, (params, x, y), (None, 0, 0), name


def ensemble(size, members: int = 16, out: int = 8, what: str = "ensemble of"):
    d, h, batch = size

    def make(xp, lax, vmap, grad):
        return lambda params, x: _mlp(xp, params, x)

    rng = np.random.default_rng(1)
    params = _layers(rng, [d, h, h, out], lead=(members,))
    x = rng.normal(size=(batch, d)).astype(np.float32)
    return (
        make,
        (params, x),
        (0, None),
        f"{what} {members} MLPs ({d}-{h}-{h}-{out}, batch {batch})",
    )


def big_ensemble(size):
    d, h, out, batch = size
    return ensemble((d, h, batch), members=8, out=out, what="ensemble of bigger models:")


def newton(size):
    n, batch = size

    def make(xp, lax, vmap, grad):
        def cbrt(a):
            def cond(c):
                i, _, step = c
                return (step > 1e-6) & (i < 100)

            def body(c):
                i, x, _ = c
                dx = (x * x * x - a) / (3.0 * x * x)
                return i + 1, x - dx, xp.max(xp.abs(dx) / (xp.abs(x) + 1.0))

            x0 = xp.maximum(xp.abs(a), 1.0) * xp.sign(a) + (a == 0)
            return lax.while_loop(cond, body, (0, x0, xp.float32(1.0)))[1]

        return cbrt

    rng = np.random.default_rng(2)
    scale = 10.0 ** rng.uniform(0, 6, size=(batch, 1))  # examples need different step counts
    a = (rng.uniform(-1, 1, size=(batch, n)) * scale).astype(np.float32)
    return make, (a,), (0,), f"Newton while_loop (cube roots, {batch} examples of {n})"


def expensive_cond(size, uniform: bool = False):
    d, depth, batch = size

    def make(xp, lax, vmap, grad):
        def f(w, x):
            def expensive(v):
                for _ in range(depth):
                    v = xp.tanh(w @ v)
                return v

            return lax.cond(x[0] > 0, expensive, lambda v: v * 0.5, x)

        return f

    rng = np.random.default_rng(3)
    w = (rng.normal(size=(d, d)) / np.sqrt(d)).astype(np.float32)
    x = rng.normal(size=(batch, d)).astype(np.float32)
    if uniform:
        x[:, 0] = -np.abs(x[:, 0])  # every example takes the cheap branch
        name = f"cond, uniform predicate ({batch} examples, all cheap)"
    else:
        name = f"cond, one expensive branch ({batch} examples, {depth} matmuls {d}x{d})"
    return make, (w, x), (None, 0), name


def _sizes(platform: str, quick: bool):
    if platform != "cpu":
        return {
            "mlp": (256, 512, 512),
            "big": (1024, 4096, 1024, 256),
            "newton": (4096, 256),
            "cond": (512, 8, 256),
        }
    if quick:
        return {
            "mlp": (16, 32, 16),
            "big": (32, 64, 32, 8),
            "newton": (64, 16),
            "cond": (32, 2, 16),
        }
    return {
        "mlp": (64, 128, 64),
        "big": (512, 1024, 512, 64),
        "newton": (512, 64),
        "cond": (128, 4, 64),
    }


def _examples(args, axes, k):
    """The k-th example's arguments (mapped ones indexed, the others as they are)."""
    import jax

    return [
        a if ax is None else jax.tree_util.tree_map(lambda leaf: leaf[k], a)
        for a, ax in zip(args, axes)
    ]


def _forms(make, args, axes, batch, python_loop: bool = True):
    """{form: (function, its arguments)} for every form that can run."""
    import jax
    import jax.numpy as jnp

    import purejit
    import purejit.numpy as pnp
    from purejit import lax as plax

    pgrad = getattr(purejit, "grad", None)
    sides = {
        "purejit": (pnp, plax, purejit.vmap, pgrad, purejit.jit, purejit.tree_util.tree_map),
        "jax": (jnp, jax.lax, jax.vmap, jax.grad, jax.jit, jax.tree_util.tree_map),
    }
    out = {}
    for side, (xp, lax, vmap, grad, jit, tmap) in sides.items():
        if grad is None and make.__qualname__.startswith("per_example_grads"):
            continue
        f = make(xp, lax, vmap, grad)
        dev = tmap(lambda a: xp.asarray(a) + 0 if side == "purejit" else jax.device_put(a), args)
        if side == "jax":
            out["jax.vmap"] = (jit(vmap(f, in_axes=axes)), dev)
        else:
            for how in ("batched", "loop", "auto"):
                out[f"purejit {how}"] = (jit(vmap(f, in_axes=axes, lowering=how)), dev)
        mapped = [i for i, ax in enumerate(axes) if ax is not None]

        def via_map(*a, f=f, lax=lax, mapped=mapped):
            def one(xs):
                full = list(a)
                for i, x in zip(mapped, xs):
                    full[i] = x
                return f(*full)

            return lax.map(one, [a[i] for i in mapped])

        out[f"{side} lax.map"] = (jit(via_map), dev)
        if not python_loop:
            continue
        jf = jit(f)
        examples = [_examples(dev, axes, k) for k in range(batch)]

        def loop(*_, jf=jf, examples=examples):
            return [jf(*e) for e in examples]

        out[f"{side} python loop"] = (loop, ())
    return out


def interleaved(forms: dict, budget: float, repeats: int) -> dict:
    """Seconds per call of every form: each round times every form once (n calls between two
    synchronisations, n filling about `budget`), so load on a shared machine hits all forms
    alike; the best of `repeats` rounds."""
    calls = {}
    for f, (fn, args) in forms.items():
        for _ in range(2):
            _block(fn(*args))
        t0 = time.perf_counter()
        _block(fn(*args))
        one = max(time.perf_counter() - t0, 1e-7)
        calls[f] = int(min(max(budget / one, 1), 1 << 16))
    best = dict.fromkeys(forms, float("inf"))
    for _ in range(repeats):
        for f, (fn, args) in forms.items():
            t0 = time.perf_counter()
            for _ in range(calls[f]):
                out = fn(*args)
            _block(out)
            best[f] = min(best[f], (time.perf_counter() - t0) / calls[f])
    return best


def run(platform: str, quick: bool, budget: float, repeats: int, python_loop: bool = True):
    import jax

    from purejit.transforms import vmap_lowering

    s = _sizes(platform, quick)
    workloads = [
        (per_example_grads, s["mlp"], {}),
        (ensemble, s["mlp"], {}),
        (big_ensemble, s["big"], {}),
        (newton, s["newton"], {}),
        (expensive_cond, s["cond"], {}),
        (expensive_cond, s["cond"], {"uniform": True}),
    ]
    rows = []
    for build, size, kw in workloads:
        make, args, axes, name = build(size, **kw)
        batch = next(
            np.shape(jax.tree_util.tree_leaves(a)[0])[ax]
            for a, ax in zip(args, axes)
            if ax is not None
        )
        forms = _forms(make, args, axes, batch, python_loop)
        if "purejit batched" not in forms:
            rows.append((name, {}, "needs purejit.grad (not in this build)"))
            print(f"# {name}: skipped (needs purejit.grad)", flush=True)
            continue
        vmap_lowering.CHOICES.clear()
        ref = forms["jax.vmap"][0](*forms["jax.vmap"][1])
        for how in ("batched", "loop", "auto"):
            fn, dev = forms[f"purejit {how}"]
            got = fn(*dev)  # auto measures both lowerings here, on its first call
            for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref)):
                # float32 dots run in TF32 on GPU (both libraries), and the forms contract in
                # other shapes, so they agree to TF32's accuracy there
                tol = 1e-2 if platform == "gpu" else 2e-3
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)
        choice = "/".join(c.lowering for c in vmap_lowering.CHOICES.values()) or "?"
        times = interleaved(forms, budget, repeats)
        rows.append((name, times, choice))
        r = {k: times[k] / times["jax.vmap"] for k in times}
        print(
            f"# {name}: purejit batched {r['purejit batched']:.2f}x, loop "
            f"{r['purejit loop']:.2f}x, auto {r['purejit auto']:.2f}x ({choice}) of jax.vmap; "
            f"jax lax.map {r['jax lax.map']:.2f}x",
            flush=True,
        )
    return rows


def _gm(xs) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def report(rows, platform: str, device: str, load: str = "", command: str = "") -> str:
    forms = [f for f in FORMS if any(f in r[1] for r in rows)]
    lines = [
        f"# vmap on {platform} ({device})",
        "",
        *([load, ""] if load else []),
        "Steady-state time per call as a ratio to `jax.jit(jax.vmap(f))` in the same process "
        "(lower is better); the jax.vmap column is the absolute time. purejit's lowerings: "
        "`batched` (a batching rule per op), `loop` (a scan over the examples), `auto` (the "
        "faster of the two, measured once at the first call; its choice in the last column). "
        f"Reproduce with `{command or 'python -m bench.vmap --out docs/benchmarks'}`.",
        "",
        "| workload | " + " | ".join(forms) + " | auto chose |",
        "|---|" + "---:|" * len(forms) + "---|",
    ]
    batched, auto, vs_own, vs_jax = [], [], [], []
    for name, times, note in rows:
        if not times:
            lines.append(f"| {name} | " + " | ".join([note] + [""] * len(forms)) + " |")
            continue
        ref = times["jax.vmap"]
        cells = []
        for f in forms:
            t = times.get(f)
            if t is None:
                cells.append("")
            elif f == "jax.vmap":
                cells.append(f"{t * 1e3:.3f} ms")
            else:
                cells.append(f"{t / ref:.2f}x")
        batched.append(times["purejit batched"] / ref)
        auto.append(times["purejit auto"] / ref)
        vs_own.append(times["purejit auto"] / min(times["purejit batched"], times["purejit loop"]))
        vs_jax.append(times["purejit auto"] / min(ref, times["jax lax.map"]))
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {note} |")
    if auto:
        lines += [
            "",
            f"- purejit batched against jax.vmap: geometric mean {_gm(batched):.2f}x, worst "
            f"{max(batched):.2f}x.",
            f"- purejit auto against jax.vmap: geometric mean {_gm(auto):.2f}x, worst "
            f"{max(auto):.2f}x (goal: every workload <= 1.00x, geometric mean <= 0.98x).",
            f"- purejit auto against the faster of purejit batched and loop: worst "
            f"{max(vs_own):.2f}x (never losing to either form is 1.00x, up to timing noise).",
            f"- purejit auto against the faster of jax.vmap and jax lax.map: geometric mean "
            f"{_gm(vs_jax):.2f}x, worst {max(vs_jax):.2f}x.",
        ]
    return "\n".join(lines) + "\n"


def plot(rows, path: str, platform: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r[1]]
    forms = [f for f in FORMS if all(f in r[1] for r in rows)]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(forms)
    for k, f in enumerate(forms):
        vals = [r[1][f] / r[1]["jax.vmap"] for r in rows]
        ax.bar(np.arange(len(rows)) + k * width, vals, width, label=f)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(rows)) + 0.4 - width / 2)
    ax.set_xticklabels([r[0].split(" (")[0] for r in rows], fontsize=8)
    ax.set_ylabel("time / jax.vmap (log)")
    ax.set_title(f"vmap on {platform}: time per call relative to jax.jit(jax.vmap(f))")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    p.add_argument("--out", default=None, help="folder for vmap_<platform>.md and .png")
    p.add_argument("--budget", type=float, default=0.1, help="seconds per timed batch")
    p.add_argument("--repeats", type=int, default=7, help="rounds (each times every form)")
    p.add_argument(
        "--no-python-loop", action="store_true", help="skip the Python loops over jit(f)"
    )
    a = p.parse_args(argv)

    import jax

    dev = jax.devices()[0]
    platform = dev.platform
    before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows = run(platform, a.quick, a.budget, a.repeats, not a.no_python_loop)
    load = ""
    if before is not None:
        load = (
            f"Machine load (1-minute average) {before:.1f} before and {os.getloadavg()[0]:.1f} "
            f"after the run, on {os.cpu_count()} cores: far above the core count, absolute "
            "times are noisy; the forms are timed in interleaved rounds so load hits them alike."
        )
    command = "python -m bench.vmap " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(rows, platform, dev.device_kind, load, command.strip())
    print("\n" + text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        suffix = "_quick" if a.quick else ""
        with open(os.path.join(a.out, f"vmap_{platform}{suffix}.md"), "w") as fh:
            fh.write(text)
        plot(rows, os.path.join(a.out, f"vmap_{platform}{suffix}.png"), platform)


if __name__ == "__main__":
    main()
