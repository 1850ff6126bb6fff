"""The numerics contract of fused attention, measured over seeds: for each case of the GPU test
matrix (`tests/nn/test_attention_gpu.py`), the forward and the q/k/v gradients of
`purejit.nn.dot_product_attention` fused (cuDNN) and unfused (`implementation="xla"`, the
program as written), each against a float64 reference, as the median over seeds of the max
and of the mean absolute error. For grouped-query cases it also measures the fused call with
k and v repeated to every query head (the group sums then happen outside cuDNN).

    python -m bench.attention_numerics --out DIR [--seeds 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import numpy as np


def _forms(kw, n_heads):
    import purejit.nn as pnn
    import purejit.numpy as pnp

    def fused(q, k, v):
        return pnn.dot_product_attention(q, k, v, **kw)

    def xla(q, k, v):
        return pnn.dot_product_attention(q, k, v, implementation="xla", **kw)

    def expanded(q, k, v):
        g = n_heads // k.shape[2]
        return pnn.dot_product_attention(
            q, pnp.repeat(k, g, axis=2), pnp.repeat(v, g, axis=2), **kw
        )

    forms = {"fused": fused, "xla": xla}
    return forms, expanded


def run_case(name, seeds):
    import purejit
    from tests.nn.test_attention_gpu import BF16, CASES, _err, _f64_reference, _inputs

    n_heads, k_heads = CASES[name][3], CASES[name][4]
    acc: dict = {}
    for seed in range(seeds):
        q, k, v, kw = _inputs(name, seed)
        forms, expanded = _forms(kw, n_heads)
        if k_heads != n_heads:
            forms["fused, k/v repeated"] = expanded
        shape = (q.shape[0], q.shape[1], q.shape[2], v.shape[3])
        d_out = np.random.default_rng(1000 + seed).normal(size=shape).astype(BF16)
        ref_out, ref_g = _f64_reference(q, k, v, kw, d_out)
        for form, f in forms.items():

            def loss(q, k, v, f=f):
                return (f(q, k, v).astype(np.float32) * d_out.astype(np.float32)).sum()

            out = np.asarray(purejit.jit(f)(q, k, v)).astype(np.float64)
            grads = purejit.jit(purejit.grad(loss, argnums=(0, 1, 2)))(q, k, v)
            for what, a, ref in [("out", out, ref_out)] + [
                (f"d{c}", np.asarray(g).astype(np.float64), r)
                for c, g, r in zip("qkv", grads, ref_g)
            ]:
                if "query_seq_lengths" in kw:  # rows the call leaves undefined are not compared
                    from tests.nn.test_attention_gpu import _valid_rows

                    if what in ("out", "dq"):
                        a, ref = a[_valid_rows(kw, a.shape)], ref[_valid_rows(kw, ref.shape)]
                e = _err(a, ref)
                acc.setdefault(what, {}).setdefault(form, {"max": [], "mean": []})
                acc[what][form]["max"].append(e["max"])
                acc[what][form]["mean"].append(e["mean"])
    return {
        what: {form: {s: statistics.median(v) for s, v in d.items()} for form, d in forms.items()}
        | {
            "seeds_fused_max_le_xla": sum(
                a <= b for a, b in zip(forms["fused"]["max"], forms["xla"]["max"])
            ),
            "seeds_fused_mean_le_xla": sum(
                a <= b for a, b in zip(forms["fused"]["mean"], forms["xla"]["mean"])
            ),
        }
        for what, forms in acc.items()
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--seeds", type=int, default=8)
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    from tests.nn.test_attention_gpu import CASES

    results = {}
    lines = [
        f"# attention numerics contract, median over {a.seeds} seeds (error vs float64)",
        "",
        "| case | result | fused max | xla max | fused mean | xla mean | seeds fused max ≤ xla"
        " | seeds fused mean ≤ xla | k/v repeated max / mean |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name in CASES:
        r = run_case(name, a.seeds)
        results[name] = r
        for what, d in r.items():
            rep = d.get("fused, k/v repeated")
            rep_s = f"{rep['max']:.3e} / {rep['mean']:.3e}" if rep else ""
            lines.append(
                f"| {name} | {what} | {d['fused']['max']:.3e} | {d['xla']['max']:.3e} | "
                f"{d['fused']['mean']:.3e} | {d['xla']['mean']:.3e} | "
                f"{d['seeds_fused_max_le_xla']}/{a.seeds} | "
                f"{d['seeds_fused_mean_le_xla']}/{a.seeds} | {rep_s} |"
            )
        print("\n".join(lines[-len(r) :]), flush=True)
    with open(os.path.join(a.out, "attention_numerics.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(a.out, "attention_numerics.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
