"""The numerics contract of fused attention, measured over seeds: for each case of the GPU test
matrix (`tests/nn/test_attention_gpu.py`), the forward and the q/k/v gradients of four forms,
each against a float64 reference, as the median over seeds of the max and of the mean
absolute error:

    fused    purejit.nn.dot_product_attention (implementation=None: cuDNN where it runs)
    xla      implementation="xla" (JAX's XLA-path program, which the rewrite never fuses)
    off      implementation=None under jit(..., compiler_options={"fused_attention": False})
             (the op's decomposed program, as written)
    jax      jax.nn.dot_product_attention(implementation="xla") under jax.jit (the reference
             program of the contract)

and per case how many seeds have the fused error at most the unfused ("xla") one, for the
max and for the mean. Grouped-query cases also measure the fused call with k and v repeated
to every query head (the group sums then happen outside cuDNN). Each form's compiled
gradient is checked for cuDNN attention calls: only "fused" may hold any.

    python -m bench.attention_numerics --out DIR [--seeds 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import numpy as np

FORMS = ("fused", "xla", "off", "jax")
OFF = {"fused_attention": False}
CUDNN = "__cudnn$fmha"  # the custom calls of cuDNN's fused attention (forward and backward)
# medians this close are reported as a tie, named row by row: dv is P^T dO in both programs (P
# rounded to bf16, float32 sums), so only the order of the sums differs (2e-5 relative, 32 seeds)
TIE = 1e-4


def _forms(kw, n_heads, k_heads):
    """name -> (library, function of q, k, v, bias, compiler options). The bias (None where the
    case has none) is an argument, so one compile serves every seed."""
    import jax

    import purejit.nn as pnn
    import purejit.numpy as pnp

    def pj(impl):
        return lambda q, k, v, bias: pnn.dot_product_attention(
            q, k, v, bias=bias, implementation=impl, **kw
        )

    def expanded(q, k, v, bias):
        g = n_heads // k.shape[2]
        return pnn.dot_product_attention(
            q, pnp.repeat(k, g, axis=2), pnp.repeat(v, g, axis=2), bias=bias, **kw
        )

    def jx(q, k, v, bias):
        return jax.nn.dot_product_attention(q, k, v, bias=bias, implementation="xla", **kw)

    forms = {
        "fused": ("purejit", pj(None), None),
        "xla": ("purejit", pj("xla"), None),
        "off": ("purejit", pj(None), OFF),
        "jax": ("jax", jx, None),
    }
    if k_heads != n_heads:
        forms["fused, k/v repeated"] = ("purejit", expanded, None)
    return forms


def _compiled(lib, f, opts, args):
    """(forward, gradient of a weighted sum, cuDNN attention calls in the gradient's emitted
    module), each compiled once for `args` = (q, k, v, bias, d_out)."""
    import jax

    import purejit

    def loss(q, k, v, bias, d_out):
        return (f(q, k, v, bias).astype(np.float32) * d_out.astype(np.float32)).sum()

    if lib == "jax":
        lowered = jax.jit(jax.grad(loss, argnums=(0, 1, 2))).lower(*args)
        return jax.jit(f), lowered.compile(), lowered.as_text().count(CUDNN)
    fwd = purejit.jit(f, compiler_options=opts)
    g = purejit.jit(purejit.grad(loss, argnums=(0, 1, 2)), compiler_options=opts)
    lowered = g.lower(*args)
    return fwd, lowered.compile(), lowered.module.count(CUDNN)


def run_case(name, seeds):
    from tests.nn.test_attention_gpu import BF16, CASES, _err, _f64_reference, _inputs, _valid_rows

    n_heads, k_heads = CASES[name][3], CASES[name][4]
    acc: dict = {}
    cudnn_calls: dict = {}
    compiled: dict = {}
    for seed in range(seeds):
        q, k, v, kw = _inputs(name, seed)
        bias = kw.pop("bias", None)
        shape = (q.shape[0], q.shape[1], q.shape[2], v.shape[3])
        d_out = np.random.default_rng(1000 + seed).normal(size=shape).astype(BF16)
        ref_out, ref_g = _f64_reference(q, k, v, dict(kw, bias=bias), d_out)
        if not compiled:  # the cases' seeds share shapes and every non-array argument
            for form, (lib, f, opts) in _forms(kw, n_heads, k_heads).items():
                compiled[form] = _compiled(lib, f, opts, (q, k, v, bias, d_out))
        for form, (fwd, grad, n_calls) in compiled.items():
            out, grads = fwd(q, k, v, bias), grad(q, k, v, bias, d_out)
            cudnn_calls[form] = n_calls
            results = [("out", out, ref_out)] + list(zip(("dq", "dk", "dv"), grads, ref_g))
            for what, a, ref in results:
                a = np.asarray(a).astype(np.float64)
                if "query_seq_lengths" in kw and what in ("out", "dq"):
                    # rows the call leaves undefined are not compared
                    a, ref = a[_valid_rows(kw, a.shape)], ref[_valid_rows(kw, ref.shape)]
                e = _err(a, ref)
                d = acc.setdefault(what, {}).setdefault(form, {"max": [], "mean": []})
                d["max"].append(e["max"])
                d["mean"].append(e["mean"])
    out = {}
    for what, forms in acc.items():
        r = {form: {s: statistics.median(v) for s, v in d.items()} for form, d in forms.items()}
        for s in ("max", "mean"):
            pairs = zip(forms["fused"][s], forms["xla"][s])
            r[f"seeds_fused_{s}_le_xla"] = sum(a <= b for a, b in pairs)
        out[what] = r
    out["cudnn_calls_in_grad"] = cudnn_calls
    return out


def _row(name, what, d, seeds):
    cells = [f"{d[f]['max']:.3e}" for f in FORMS] + [f"{d[f]['mean']:.3e}" for f in FORMS]
    rep = d.get("fused, k/v repeated")
    rep_s = f"{rep['max']:.3e} / {rep['mean']:.3e}" if rep else ""
    counts = [f"{d[f'seeds_fused_{s}_le_xla']}/{seeds}" for s in ("max", "mean")]
    return f"| {name} | {what} | " + " | ".join(cells + counts + [rep_s]) + " |"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--seeds", type=int, default=8)
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    from tests.nn.test_attention_gpu import CASES

    head = [f"{f} max" for f in FORMS] + [f"{f} mean" for f in FORMS]
    lines = [
        f"# attention numerics contract, median over {a.seeds} seeds (error vs float64)",
        "",
        'fused: implementation=None; xla: implementation="xla" (never fused); off: '
        "implementation=None with fused_attention off; jax: jax.nn.dot_product_attention("
        'implementation="xla"). Seed counts: fused error ≤ xla error.',
        "",
        "| case | result | " + " | ".join(head) + " | seeds fused max ≤ xla | seeds fused mean "
        "≤ xla | k/v repeated max / mean |",
        "|---|---|" + "---:|" * (len(head) + 2) + "---|",
    ]
    results, problems = {}, []
    for name in CASES:
        r = run_case(name, a.seeds)
        results[name] = r
        ops = r["cudnn_calls_in_grad"]
        problems += [f"{name}: {f} has {n} cuDNN attention calls" for f, n in ops.items()
                     if n and f not in ("fused", "fused, k/v repeated")]  # fmt: skip
        rows = [
            _row(name, what, d, a.seeds) for what, d in r.items() if what != "cudnn_calls_in_grad"
        ]
        lines += rows
        print("\n".join(rows), f"\n  cuDNN attention calls in each gradient: {ops}", flush=True)
    outside, ties = [], []
    for name, r in results.items():
        for what, d in r.items():
            for s in ("max", "mean") if what != "cudnn_calls_in_grad" else ():
                fused, xla = d["fused"][s], d["xla"][s]
                if fused > xla:
                    row = f"{name} {what} {s} (+{fused / xla - 1:.1e} relative)"
                    (ties if fused <= xla * (1 + TIE) else outside).append(row)
    lines += [
        "",
        "Contract (median fused error ≤ median xla error, max and mean, every case and result): "
        + ("holds" if not outside else "broken by " + "; ".join(outside))
        + (
            f"; fused above xla by under {TIE:.0e} relative (a tie): " + "; ".join(ties)
            if ties
            else ""
        ),
        "Unfused forms with cuDNN attention calls: " + ("; ".join(problems) or "none"),
    ]
    with open(os.path.join(a.out, "attention_numerics.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(a.out, "attention_numerics.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[-2:]))


if __name__ == "__main__":
    main()
