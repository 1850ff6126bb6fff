"""The benchmark suite: `python -m bench [--quick] [--out docs/benchmarks]`.

For each workload: steady-state time of purejit jit, jax.jit, purejit eager and NumPy as
ratios to jax.jit; first-call time (trace + compile) of purejit and jax.jit; and the phases
of purejit's first call (trace, passes, emit, XLA compile). Writes `<platform>.md` and PNG
plots into the output folder. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import platform as pyplatform
import time

import numpy as np

from bench.workloads import build


def _block(out):
    import purejit

    for leaf in purejit.tree_util.tree_leaves(out):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def steady(fn, args, budget: float, repeats: int = 3) -> float:
    """Seconds per call: warm up, then time n calls between two synchronisations, where n
    fills about `budget` seconds; the best of `repeats` such batches."""
    for _ in range(2):
        _block(fn(*args))
    t0 = time.perf_counter()
    _block(fn(*args))
    one = max(time.perf_counter() - t0, 1e-7)
    n = int(min(max(budget / one, 1), 1 << 16))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            out = fn(*args)
        _block(out)
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def _frameworks(w):
    import jax
    import jax.numpy as jxnp

    import purejit
    import purejit.numpy as pnp

    def wrap(xp, lax):
        if w.needs_lax:
            return lambda *a: w.fn(xp, lax, *a)
        return lambda *a: w.fn(xp, *a)

    pj_args = purejit.tree_util.tree_map(lambda a: pnp.asarray(a) + 0, w.args)
    jx_args = jax.tree_util.tree_map(jax.device_put, w.args)
    if w.host_inputs:
        pj_args = jx_args = w.args
    plax = getattr(purejit, "lax", None)
    out = {
        "purejit jit": (lambda: purejit.jit(wrap(pnp, plax)), pj_args),
        "jax.jit": (lambda: jax.jit(wrap(jxnp, jax.lax)), jx_args),
    }
    if w.eager:
        out["purejit eager"] = (lambda: wrap(pnp, plax), pj_args)
        out["numpy"] = (lambda: wrap(np, None), w.args)
    return out


def run_workload(w, budget: float) -> dict:
    import purejit

    res = {"name": w.name, "steady": {}, "first": {}, "phases": {}, "error": {}}
    frameworks = _frameworks(w)
    for fw in ("jax.jit", "purejit jit"):
        try:
            # untimed, once per framework: the first compile of new shapes in a process
            # pays one-time costs (GPU library start-up, XLA's autotuning of the module's
            # own GEMMs and fusions, which differ between the two modules) that would fall
            # on whoever runs first; the timed first call below uses a new jit object
            make, args = frameworks[fw]
            _block(make()(*args))
        except Exception:
            pass
    for fw, (make, args) in frameworks.items():
        try:
            fn = make()
            if fw in ("purejit jit", "jax.jit"):
                t0 = time.perf_counter()
                _block(fn(*args))
                res["first"][fw] = time.perf_counter() - t0
            res["steady"][fw] = steady(fn, args, budget)
        except Exception as e:  # reported in the table, never hidden
            res["error"][fw] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    try:
        fn = purejit.jit(_frameworks(w)["purejit jit"][0]().fun)
        lowered = fn.lower(*_frameworks(w)["purejit jit"][1])
        lowered.compile()
        res["phases"] = dict(lowered.timings)
    except Exception as e:
        res["error"]["phases"] = f"{type(e).__name__}: {e}"
    return res


_NOT_IN_GEOMEAN = ("dispatch_tiny", "dispatch_numpy", "complex_activation")
_HEADLINES = [
    ("dispatch_tiny", "Dispatch overhead of a tiny function, arguments on the device (goal ≤ 1x)"),
    ("dispatch_numpy", "Dispatch overhead of a tiny function, NumPy arguments"),
    ("complex_activation", "complex_activation (sin, cos on CPU: goal ≤ 0.2x)"),
]


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def fmt_t(s):
    if s is None:
        return "—"
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")


def report(results, plat: str, device: str) -> str:
    fws = ["purejit jit", "purejit eager", "numpy"]
    lines = [
        f"# purejit benchmarks — {plat} ({device})",
        "",
        "Steady-state time per call as a ratio to `jax.jit` (lower is better; 1.00 = parity),",
        "first call (trace + compile + first run) in seconds, and purejit's first-call phases.",
        "Before the first calls are timed, each workload is compiled and run once, untimed, by",
        "each framework, so that one-time process costs (GPU library start-up, XLA's autotuning",
        "of each module's own GEMMs and fusions) fall on neither side; the timed first call",
        "uses a new jit object. First calls in fresh processes: `python -m bench.cold_start`.",
        "",
        "| workload | jax.jit | purejit jit | purejit eager | numpy | first call purejit / jax | "
        "trace | passes | emit | XLA compile |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        base = r["steady"].get("jax.jit")
        cells = []
        for fw in fws:
            t = r["steady"].get(fw)
            cells.append(f"{t / base:.2f}x" if t and base else ("err" if fw in r["error"] else "—"))
        fp, fj = r["first"].get("purejit jit"), r["first"].get("jax.jit")
        first = f"{fmt_t(fp)} / {fmt_t(fj)}" if fp and fj else "—"
        ph = r["phases"]
        lines.append(
            f"| {r['name']} | {fmt_t(base)} | "
            + " | ".join(cells)
            + f" | {first} | "
            + " | ".join(fmt_t(ph.get(k)) for k in ("trace", "passes", "emit", "xla_compile"))
            + " |"
        )
    ratios = [
        r["steady"]["purejit jit"] / r["steady"]["jax.jit"]
        for r in results
        if "purejit jit" in r["steady"]
        and "jax.jit" in r["steady"]
        and r["name"] not in _NOT_IN_GEOMEAN
    ]
    firsts = [
        r["first"]["purejit jit"] / r["first"]["jax.jit"]
        for r in results
        if "purejit jit" in r["first"] and "jax.jit" in r["first"]
    ]
    lines += [
        "",
        "Geometric mean, steady state purejit jit / jax.jit (excluding dispatch and "
        f"complex_activation): **{geomean(ratios):.2f}x** (goal ≤ 0.97x on CPU, ≤ 1.00x on GPU)",
        f"Geometric mean, first call purejit / jax.jit: **{geomean(firsts):.2f}x** (goal < 1x)",
    ]
    for name, what in _HEADLINES:
        r = next((r for r in results if r["name"] == name), None)
        if r and "purejit jit" in r["steady"] and "jax.jit" in r["steady"]:
            ratio = r["steady"]["purejit jit"] / r["steady"]["jax.jit"]
            t = fmt_t(r["steady"]["purejit jit"])
            lines.append(f"{what}: **{ratio:.2f}x** jax.jit ({t} a call)")
    errs = [(r["name"], fw, e) for r in results for fw, e in r["error"].items()]
    if errs:
        lines += ["", "Errors:", ""] + [f"- {n} / {fw}: `{e}`" for n, fw, e in errs]
    return "\n".join(lines) + "\n"


def plot(results, path_prefix: str, plat: str):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    names = [r["name"] for r in results]
    fws = ["purejit jit", "purejit eager", "numpy"]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(fws)
    for i, fw in enumerate(fws):
        vals = [
            r["steady"].get(fw, float("nan")) / r["steady"].get("jax.jit", float("nan"))
            for r in results
        ]
        ax.bar(np.arange(len(names)) + i * width, vals, width, label=fw)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(names)) + width, names, rotation=30, ha="right")
    ax.set_ylabel("time / jax.jit (log)")
    ax.set_title(f"Steady state vs jax.jit ({plat})")
    ax.legend()
    fig.tight_layout()
    p1 = f"{path_prefix}_steady.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    bottom = np.zeros(len(names))
    for phase in ("trace", "passes", "emit", "xla_compile"):
        vals = np.array([r["phases"].get(phase, 0.0) for r in results])
        ax.bar(np.arange(len(names)) - 0.2, vals, 0.4, bottom=bottom, label=f"purejit {phase}")
        bottom += vals
    ax.bar(
        np.arange(len(names)) + 0.2,
        [r["first"].get("jax.jit", 0.0) for r in results],
        0.4,
        label="jax.jit first call",
        color="grey",
    )
    ax.set_xticks(np.arange(len(names)), names, rotation=30, ha="right")
    ax.set_ylabel("seconds")
    ax.set_title(f"First call: purejit phases vs jax.jit ({plat})")
    ax.legend()
    fig.tight_layout()
    p2 = f"{path_prefix}_first_call.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes, short budgets (CI)")
    ap.add_argument("--out", default="docs/benchmarks")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    a = ap.parse_args(argv)
    from purejit.backend import pjrt

    plat = "gpu" if pjrt.is_gpu() else pjrt.platform()
    device = getattr(pjrt.default_device(), "device_kind", plat)
    budget = 0.05 if a.quick else 0.5
    results = []
    for w in build(plat, a.quick):
        if a.only and w.name not in a.only.split(","):
            continue
        t0 = time.perf_counter()
        results.append(run_workload(w, budget))
        print(f"{w.name}: done in {time.perf_counter() - t0:.1f} s", flush=True)
    tag = plat + ("_quick" if a.quick else "")
    os.makedirs(a.out, exist_ok=True)
    md = report(results, plat, f"{device}, {pyplatform.processor() or pyplatform.machine()}")
    plots = plot(results, os.path.join(a.out, tag), plat)
    md += "".join(f"\n![{os.path.basename(p)}]({os.path.basename(p)})\n" for p in plots)
    with open(os.path.join(a.out, f"{tag}.md"), "w") as f:
        f.write(md)
    print(md)
    return results


if __name__ == "__main__":
    main()
