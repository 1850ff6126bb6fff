"""Side by side: the programs purejit and JAX make for bench.vmap's workloads.

    python -m bench.tools.vmap_hlo [--workloads ensemble,per_example] [--sizes gpu|cpu]
                                   [--out DIR]

For each workload, `jit(vmap(f))` of purejit (batched lowering) and `jax.jit(jax.vmap(f))`
are lowered for the same arguments; the tool writes both StableHLO modules and both
compiled HLO modules (`<workload>_{purejit,jax}.{mlir,hlo}` in `--out`) and prints counts
of what matters for speed: dots (and where their batch dimensions sit), transposes,
broadcasts feeding a dot (an unbatched operand copied per example), copies in the compiled
program, and XLA's kernels (top-level fusions and custom calls). Runs on the default
backend (CPU here; the compiled HLO differs per backend).
"""

from __future__ import annotations

import argparse
import collections
import os
import re

from bench import vmap as bv

WORKLOADS = {
    "per_example": (bv.per_example_grads, "mlp"),
    "ensemble": (bv.ensemble, "mlp"),
    "big_ensemble": (bv.big_ensemble, "big"),
    "newton": (bv.newton, "newton"),
    "cond": (bv.expensive_cond, "cond"),
}


def stablehlo_summary(text: str) -> dict:
    """Counts of the StableHLO ops that decide the program's cost."""
    body = [ln for ln in text.splitlines() if "=" in ln]
    ops = collections.Counter()
    made_by = {}
    dots = []
    for ln in body:
        m = re.match(r"\s*(%[\w#:]+)\s*=\s*\"?(stablehlo\.\w+)\"?(.*)", ln)
        if not m:
            continue
        name, op, rest = m.group(1).split(":")[0], m.group(2), m.group(3)
        ops[op] += 1
        made_by[name] = op
        if op == "stablehlo.dot_general":
            args = re.findall(r"(%[\w#]+)", rest.split(")")[0] if rest.startswith("(") else rest)
            batch = re.search(r"lhs_batching_dimensions = \[([\d, ]*)\]", rest) or re.search(
                r"batching_dims = \[([\d, ]*)\]", rest
            )
            dots.append((args[:2], batch.group(1) if batch else ""))
    fed = sum(
        1
        for args, _ in dots
        for a in args
        if made_by.get(a.split("#")[0]) == "stablehlo.broadcast_in_dim"
    )
    return {
        "dot_general": ops["stablehlo.dot_general"],
        "lhs batch dims per dot": [b or "-" for _, b in dots],
        "transpose": ops["stablehlo.transpose"],
        "broadcast_in_dim": ops["stablehlo.broadcast_in_dim"],
        "broadcast feeding a dot": fed,
        "optimization_barrier": ops["stablehlo.optimization_barrier"],
    }


def hlo_summary(text: str) -> dict:
    """XLA's kernels and copies in a compiled HLO module's entry computation."""
    entry = text[text.index("ENTRY") :]
    lines = entry.splitlines()
    kernels = [ln for ln in lines if " fusion(" in ln or "custom-call(" in ln or " dot(" in ln]
    return {
        "kernels": len(kernels),
        "copies/transposes (whole module)": len(re.findall(r"= \S+ (?:copy|transpose)\(", text)),
        "kernel kinds": dict(
            collections.Counter(
                re.search(r"%([a-z_]+?)(?:[._]\d+)? =", ln).group(1) for ln in kernels
            )
        ),
    }


def lower_both(workload: str, sizes: str):
    import jax
    import jax.numpy as jnp

    import purejit
    import purejit.numpy as pnp
    from purejit import lax as plax

    build, key = WORKLOADS[workload]
    make, args, axes, name = build(bv._sizes(sizes, False)[key])
    pf = purejit.jit(purejit.vmap(make(pnp, plax, purejit.vmap, purejit.grad), in_axes=axes))
    jf = jax.jit(jax.vmap(make(jnp, jax.lax, jax.vmap, jax.grad), in_axes=axes))
    lp, lj = pf.lower(*args), jf.lower(*args)
    return name, {
        "purejit": (lp.as_text(), lp.compile().as_text()),
        "jax": (lj.as_text(), lj.compile().as_text()),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default="ensemble,per_example", help=",".join(WORKLOADS))
    p.add_argument("--sizes", default="gpu", choices=["gpu", "cpu"], help="bench.vmap's sizes")
    p.add_argument("--out", default=None, help="folder for the four modules per workload")
    a = p.parse_args(argv)
    for w in a.workloads.split(","):
        name, progs = lower_both(w, a.sizes)
        print(f"## {name}")
        for side, (shlo, hlo) in progs.items():
            print(f"  {side:8s} StableHLO: {stablehlo_summary(shlo)}")
            print(f"  {side:8s} compiled:  {hlo_summary(hlo)}")
            if a.out:
                os.makedirs(a.out, exist_ok=True)
                for ext, text in (("mlir", shlo), ("hlo", hlo)):
                    with open(os.path.join(a.out, f"{w}_{side}.{ext}"), "w") as fh:
                        fh.write(text)


if __name__ == "__main__":
    main()
