"""The seed workloads of whole-program optimisation, timed and counted.

    python -m bench.seed_workloads [--quick] [--budget SECONDS]
    python bench/seed_workloads.py --quick

Workloads (written once in bench/workloads.py against a NumPy-like namespace):
complex_activation (sin, cos, mul, add, mul, relu), the tiny-ops chain (x*2, +1, sigmoid,
x*x, tanh, x/(|x|+1)), an MLP with a dead matmul, and layer_norm -> linear -> gelu ->
residual. Sizes scale with the platform (bigger on a GPU).

For each: steady-state time per call of NumPy, purejit eager (op by op), purejit jit with
XLA fusing (`fusion="xla"`, the default), purejit jit with purejit's groups as the kernels
(`fusion="purejit"`, where the back end allows) and `jax.jit`, as ratios to `jax.jit`
(warm-up, then many calls between two synchronisations); and the kernel counts: purejit's
plan, what XLA compiled for each purejit mode, and what XLA compiled for `jax.jit`.
Prints a Markdown table. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from bench.run import fmt_t, steady
from bench.workloads import build

SEEDS = (
    "complex_activation",
    "tiny_ops_chain",
    "mlp_dead_matmul",
    "layernorm_linear_gelu_residual",
)
MODES = ("numpy", "purejit eager", "purejit jit", "purejit jit fusion=purejit", "jax.jit")


def seed_workloads(platform: str, quick: bool):
    """The four seed workloads from the benchmark suite, at this platform's sizes."""
    return [w for w in build(platform, quick) if w.name in SEEDS]


def _kernels(hlo_text: str) -> int:
    from purejit.backend.fusion import kernels

    return len(kernels(hlo_text))


def measure(w, budget: float) -> dict:
    """Times per mode and kernel counts for one workload."""
    import jax
    import jax.numpy as jxnp

    import purejit
    import purejit.numpy as pnp

    pj_args = tuple(pnp.asarray(a) + 0 for a in w.args)  # on the device
    jx_args = tuple(jax.device_put(a) for a in w.args)

    def pj(*a):
        return w.fn(pnp, *a)

    jitted = {
        "purejit jit": purejit.jit(pj),
        "purejit jit fusion=purejit": purejit.jit(pj, compiler_options={"fusion": "purejit"}),
    }
    fns = {
        "numpy": (lambda *a: w.fn(np, *a), w.args),
        "purejit eager": (pj, pj_args),
        **{k: (f, pj_args) for k, f in jitted.items()},
        "jax.jit": (jax.jit(lambda *a: w.fn(jxnp, *a)), jx_args),
    }
    res = {"name": w.name, "shape": "x".join(map(str, w.args[0].shape)), "time": {}, "kernels": {}}
    for mode, (fn, args) in fns.items():
        try:
            res["time"][mode] = steady(fn, args, budget)
        except Exception as e:  # noqa: BLE001  (reported in the table, never hidden)
            res["time"][mode] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
    for mode, f in jitted.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ex = purejit.explain(f, *pj_args)
        res["kernels"][mode] = (len(ex.kernels), len(ex.groups), len(ex.xla_kernels))
        res["kernels"][mode + " match"] = ex.kernels_match
        res["fusion route"] = ex.fusion if mode.endswith("purejit") else res.get("fusion route")
    jax_hlo = fns["jax.jit"][0].lower(*jx_args).compile().as_text()
    res["kernels"]["jax.jit"] = _kernels(jax_hlo)
    return res


def table(results, platform: str, device: str) -> str:
    """The Markdown report."""
    head = (
        ["workload", "input"]
        + [m for m in MODES]
        + ["kernels: plan / XLA (xla)", "plan / XLA (purejit)", "jax.jit"]
    )
    lines = [
        f"# purejit seed workloads: {platform} ({device})",
        "",
        (
            "Time per call; every mode as a ratio to `jax.jit` (lower is better). Kernels: "
            "purejit's plan (kernels, of them fusion groups) / kernels XLA compiled."
        ),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in results:
        base = r["time"].get("jax.jit")
        cells = []
        for m in MODES:
            t = r["time"].get(m)
            if isinstance(t, str) or t is None:
                cells.append("err" if t else "—")
            elif m == "jax.jit":
                cells.append(fmt_t(t))
            else:
                cells.append(
                    f"{t / base:.2f}x ({fmt_t(t)})" if isinstance(base, float) else fmt_t(t)
                )
        k = r["kernels"]
        ks = []
        for mode in ("purejit jit", "purejit jit fusion=purejit"):
            plan, groups, xla = k[mode]
            flag = "" if k[mode + " match"] else " ≠"
            ks.append(f"{plan} ({groups} groups) / {xla}{flag}")
        lines.append(
            f"| {r['name']} | {r['shape']} | "
            + " | ".join(cells)
            + " | "
            + " | ".join(ks)
            + f" | {k['jax.jit']} |"
        )
    route = next((r.get("fusion route") for r in results if r.get("fusion route")), "xla")
    lines += [
        "",
        f'`fusion="purejit"` route on this back end: {route}'
        + (" (flat program: not realised here)" if route == "xla" else ""),
        "≠: XLA's kernels differ from purejit's plan (`purejit.explain` names each difference).",
    ]
    errors = [
        (r["name"], m, t) for r in results for m, t in r["time"].items() if isinstance(t, str)
    ]
    lines += [f"- {n} / {m}: {e}" for n, m, e in errors]
    return "\n".join(lines)


def main(argv=None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, short timing (CPU CI)")
    p.add_argument("--budget", type=float, default=None, help="seconds of timing per mode")
    args = p.parse_args(argv)
    from purejit.backend import pjrt

    plat = pjrt.platform()
    budget = args.budget if args.budget is not None else (0.05 if args.quick else 0.5)
    results = [measure(w, budget) for w in seed_workloads(plat, args.quick)]
    device = getattr(pjrt.default_device(), "device_kind", plat)
    text = table(results, plat, device)
    print(text)
    return text


if __name__ == "__main__":
    main()
