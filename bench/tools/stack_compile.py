"""What XLA's compile of stacking per-layer parameters costs, by the form of the stacking.

    python -m bench.tools.stack_compile [--layers 48] [--d 128] [--repeats 3]

The rolled program of issue #32 stacks each kind of per-layer parameter on every call
(`passes/_stacking.py`: one concatenate of the layers' rows per kind). On the GPU its back end
costs about 1 ms of LLVM per concatenate operand (`docs/benchmarks/roll_layers_cpu.md`,
session 17). This times XLA's compile, each form in a fresh process, of a module that only
stacks the 8 parameter kinds of `bench.models.transformer_params` (48 layers x 8) and sums
each stack (so nothing is dead), written with JAX as the reference front end:

- `concatenate`: one concatenate of 48 rows per kind (purejit's form today);
- `dus_const`: 48 in-place `dynamic_update_slice`s into zeros per kind at constant offsets;
- `dus_runtime`: the same at offsets read from an int32 argument (not constants, so the 48
  updates of one kind are the same kernel for XLA's kernel reuse);
- `tree`: a concatenate of 6 concatenates of 8 rows per kind.

It prints the compile (`lower().compile()`) and the steady call of each form.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

FORMS = ("concatenate", "dus_const", "dus_runtime", "tree")


def _child(form: str, layers: int, d: int) -> dict:
    import jax
    import jax.numpy as jnp
    from jax import lax

    from bench.models import transformer_params

    jax.config.update("jax_enable_compilation_cache", False)
    params = transformer_params(layers, d, np.random.default_rng(0))
    kinds = sorted(params[0])
    per_kind = [[p[k] for p in params] for k in kinds]
    offsets = np.arange(layers, dtype=np.int32)

    def stack(rows, offs):
        if form == "concatenate":
            return jnp.concatenate([r[None] for r in rows], axis=0)
        if form == "tree":
            groups = [rows[i : i + 8] for i in range(0, len(rows), 8)]
            return jnp.concatenate(
                [jnp.concatenate([r[None] for r in g], axis=0) for g in groups], axis=0
            )
        buf = jnp.zeros((len(rows), *rows[0].shape), rows[0].dtype)
        for i, r in enumerate(rows):
            at = i if form == "dus_const" else offs[i]
            buf = lax.dynamic_update_slice(buf, r[None], (at,) + (0,) * r.ndim)
        return buf

    def f(per_kind, offs):
        return [jnp.sum(stack(rows, offs)) for rows in per_kind]

    dev = jax.device_put((per_kind, offsets))
    jax.block_until_ready(dev)
    t0 = time.perf_counter()
    compiled = jax.jit(f).lower(*dev).compile()
    t_compile = time.perf_counter() - t0
    jax.block_until_ready(compiled(*dev))
    best = float("inf")
    for _ in range(20):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*dev))
        best = min(best, time.perf_counter() - t0)
    return {"form": form, "compile_s": t_compile, "call_ms": best * 1e3}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(_child(args.child, args.layers, args.d)))
        return []
    rows = []
    for _ in range(args.repeats):
        for form in FORMS:
            cmd = [sys.executable, "-m", "bench.tools.stack_compile", "--child", form]
            cmd += ["--layers", str(args.layers), "--d", str(args.d)]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            line = [s for s in out.stdout.splitlines() if s.startswith("RESULT ")]
            if not line:
                print(f"{form}: failed\n{out.stderr[-2000:]}")
                continue
            rows.append(json.loads(line[0][len("RESULT ") :]))
    print(f"| form | compile (s), median of {args.repeats} | steady call (ms) |")
    print("|---|---:|---:|")
    for form in FORMS:
        got = [r for r in rows if r["form"] == form]
        if got:
            c = float(np.median([r["compile_s"] for r in got]))
            m = float(np.median([r["call_ms"] for r in got]))
            print(f"| {form} | {c:.3f} | {m:.3f} |")
    return rows


if __name__ == "__main__":
    main()
