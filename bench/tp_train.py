"""Data-, tensor- and fully-sharded-data-parallel training steps of a transformer, purejit
against the same program in JAX.

    python -m bench.tp_train --out DIR                 # every GPU (or CPU device) of the host
    python -m bench.tp_train --quick --out DIR         # small sizes on 8 forced CPU devices

The model is the autodiff issue's transformer (12 layers, batch 8, sequence 1024, width 1024,
16 heads, MLP 4096, bfloat16 on GPU; causal softmax attention, pre-layer-norm, GELU) with a
mean-squared-error loss against a target, and a step is `value_and_grad` + Adam (first and
second moments in float32), with the state (parameters, moments, step count) donated:

- `single`: the whole step on one device (`jit`), the reference;
- `dp`: a `shard_map` over the mesh axis `dp` (batch split, parameters replicated); each
  device differentiates its shard's loss with respect to its `pvary`'d copy of the
  parameters, then `pmean` of the gradients and of the loss;
- `tp`: Megatron tensor parallelism over `tp`: heads and the MLP's hidden units split (the
  QKV and up-projection weights by columns, the attention output and down-projection
  weights by rows), a `psum` after each of the two; activations and layer norms replicated.
  `value_and_grad` runs inside the body: shard_map's varying-axes typing makes the
  gradients of replicated values come out right without a hand-written psum.
- `fsdp`: fully sharded data parallel under `shard_map` over `fsdp`: the batch and every
  parameter and moment split along its first dimension; the loss all-gathers each
  parameter where it uses it, so differentiating it reduce-scatters the gradients (the
  transpose of a tiled all-gather), and Adam updates each device's shards;
- `fsdp_jit`: the `single` step under `jit` with the same shardings for the state and the
  batch (in_shardings / out_shardings): XLA's partitioner places the gathers and scatters.

For each step and library: the median step time (interleaved timed loops, `--iters` calls
between two synchronisations, `--repeats` rounds), XLA's temporary and argument bytes per
device, the loss and the largest difference of the parameters from JAX's after `--check-steps`
(10) Adam steps from the same start, and for dp and FSDP the weak-scaling efficiency T1 / Tn
(T1: the single-device step on one device's share of the batch, timed in the same rounds).
Results go to `DIR/tp_train_<platform>[_quick].md` and `.json`. Absolute times mean something
on GPUs only (8 CPU devices share the host's cores: CPU weak scaling is far below 1).
`bench.tp_train_mp` runs the dp and fsdp steps as several processes, one device each.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from bench.tp_train_model import make_inputs, make_steps, shardings, state_specs

SIZES = {  # layers, batch, sequence, width, heads, MLP width
    "full": (12, 8, 1024, 1024, 16, 4096),
    "quick": (2, 8, 32, 64, 8, 256),
}
KINDS = ("single", "dp", "tp", "fsdp", "fsdp_jit")
# rows besides purejit's default: JAX with cuDNN attention (the baseline where purejit fuses
# attention), JAX as written, purejit with the attention rewrite off
VARIANTS = ("jax_cudnn", "jax", "purejit_unfused", "purejit_remat_off", "purejit_remat_on")
# the compiler options of purejit's variant rows
VARIANT_OPTIONS = {
    "purejit_unfused": {"fused_attention": False},
    "purejit_remat_off": {"remat": False},
    # the automatic plan forced on (programs over several devices save everything by default)
    "purejit_remat_on": {"remat": True},
}


# ---- running and timing ------------------------------------------------------------------------


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="write the table and JSON into this folder")
    p.add_argument("--quick", action="store_true", help="small sizes (8 forced CPU devices)")
    p.add_argument("--cpu-devices", type=int, default=None, help="force this many CPU devices")
    p.add_argument("--devices", type=int, default=None, help="mesh size (default: all)")
    add_size_args(p)
    p.add_argument("--iters", type=int, default=None)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", default=",".join(KINDS), help="which steps to run")
    p.add_argument("--check-steps", type=int, default=10, help="Adam steps before comparing")
    p.add_argument(
        "--variants",
        default=None,
        help="rows besides purejit's default, of " + ", ".join(VARIANTS) + " (default on GPU: "
        "all; on CPU: jax); the first JAX row given is the baseline of 'vs JAX'",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="with --out (GPU, needs torch): each step's kernels per device and step "
        "(CUPTI through torch's profiler), by category and the top kernels, in profile.md",
    )
    p.add_argument(
        "--hlo",
        action="store_true",
        help="with --out: each compiled program's HLO text (DIR/hlo/*.hlo.gz) and a count of "
        "its collectives, kernels and the collectives XLA scheduled to overlap compute",
    )
    return p.parse_args(argv)


def hlo_summary(text: str) -> dict:
    """What to compare between two compiled SPMD programs: collectives by kind, how many are
    asynchronous and overlap compute (purejit's static reading of the schedule), fusions
    and custom calls."""
    from purejit.backend.hlo_collectives import collectives

    cs = collectives(text)
    kinds: dict = {}
    for c in cs:
        k = kinds.setdefault(c.kind, {"count": 0, "async": 0, "overlapping": 0})
        k["count"] += 1
        k["async"] += int(c.asynchronous)
        k["overlapping"] += int(c.ops_between > 0)
    return {
        "collectives": kinds,
        "fusions": text.count(" fusion("),
        "custom_calls": text.count(" custom-call("),
        "lines": text.count("\n"),
    }


def attention_notes(compiled) -> list[str]:
    """purejit's record of each attention it fused or refused in `compiled` (explain's
    entries, one line each); [] for JAX."""
    lowered = getattr(compiled, "lowered", None)
    return [
        " ".join(f"{k}={e[k]}" for k in ("where", "fused", "op", "batch_axes", "reason") if k in e)
        for e in getattr(lowered, "attention", None) or []
    ]


def compile_once(lib, f, args):
    """The compiled program of the jitted `f` at `args`, which the calls of `f` then reuse.

    JAX's `f.lower(*args).compile()` fills the cache that `f(*args)` reads; purejit's does
    not (its calls would compile the program again), so purejit compiles through the
    jitted function's own cache."""
    if lib.__name__ == "purejit":
        return f.compile_signature(f.signature(tuple(args), {}))
    return f.lower(*args).compile()


def add_size_args(p):
    """The model-size options (each default: the `SIZES` row) and --dtype."""
    for name in ("layers", "batch", "seq", "dmodel", "heads", "dff"):
        p.add_argument(f"--{name}", type=int, default=None)
    p.add_argument("--dtype", default=None, help="float32 or bfloat16 (default: bf16 on GPU)")


def sizes_from(args, small: bool):
    """(layers, batch, sequence, width, heads, MLP width): the `SIZES` row ("quick" when
    `small`, else "full") with the options of `add_size_args` that were given."""
    L, B, S, D, H, F = SIZES["quick" if small else "full"]
    L, B, S = args.layers or L, args.batch or B, args.seq or S
    return L, B, S, args.dmodel or D, args.heads or H, args.dff or F


class Runner:
    """Calls a donating step again and again on the parameters it returned."""

    def __init__(self, step, state, x, y):
        self.step, self.state, self.x, self.y = step, state, x, y

    def __call__(self):
        self.state, loss = self.step(self.state, self.x, self.y)
        return loss


def time_all(runs: dict, iters: int, repeats: int) -> dict:
    """Median seconds per step of each runner, the runners interleaved in every round, and
    the median host seconds per call (the dispatch loop before the final synchronisation:
    a step whose host time nears its step time is bound by the host, not the devices)."""
    for run in runs.values():
        run().block_until_ready()
    samples = {k: [] for k in runs}
    host = {k: [] for k in runs}
    for _ in range(repeats):
        for k, run in runs.items():
            t0 = time.perf_counter()
            for _ in range(iters):
                out = run()
            host[k].append((time.perf_counter() - t0) / iters)
            out.block_until_ready()
            samples[k].append((time.perf_counter() - t0) / iters)
    return {k: (sorted(v)[len(v) // 2], sorted(host[k])[len(v) // 2]) for k, v in samples.items()}


def write_profiles(runners: dict, iters: int, n: int, out: str) -> None:
    """profile.md: for each runner, kernel µs per step and device, by category, per device,
    and its 20 largest kernels (summed over devices); profile_kernels.json: every kernel's calls
    and µs per step and device, to compare two programs' fusions with their HLO (`--hlo`)."""
    from bench.tools.step_profile import category_table, kernel_profile

    lines = ["# Kernels per step (CUPTI via torch.profiler; µs per step, mean over devices)", ""]
    every = {}
    for key, run in runners.items():
        kernels, total, per_dev, _ = kernel_profile(run, iters, lambda o: o.block_until_ready())
        k = 1 if key.endswith("single") or key.endswith("single_local") else n
        every[key] = {name: [calls / k, us / k] for name, (calls, us) in kernels.items()}
        devs = ", ".join(f"{d}: {us:.0f}" for d, us in sorted(per_dev.items()))
        lines += [f"## {key}: {total / k / 1e3:.3f} ms of kernels per device (per device: {devs})"]
        lines += ["", *category_table(kernels, k), ""]
        lines += ["| kernel | calls | µs |", "|---|---:|---:|"]
        for name, (calls, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:20]:
            lines.append(f"| `{name[:90]}` | {calls / k:.0f} | {us / k:.0f} |")
        lines.append("")
    with open(os.path.join(out, "profile.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "profile_kernels.json"), "w") as f:
        json.dump(every, f, indent=1)


def _max_diff(a, b, tree_leaves) -> float:
    return max(
        float(np.abs(np.asarray(u, np.float32) - np.asarray(v, np.float32)).max())
        for u, v in zip(tree_leaves(a), tree_leaves(b))
    )


def main(argv=None):
    args = _parse(argv)
    n_cpu = args.cpu_devices or (8 if args.quick else None)
    if n_cpu:  # before jax starts; a GPU host keeps its GPUs unless --cpu-devices is given
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={n_cpu}"
        )
        if args.cpu_devices:
            os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    import purejit

    devs = purejit.devices()
    platform = devs[0].platform
    n = args.devices or len(devs)
    if n < 2:
        sys.exit("tp_train needs at least 2 devices (on CPU: --quick or --cpu-devices 8)")
    on_gpu = platform != "cpu"
    L, B, S, D, H, F = sizes_from(args, args.quick or not on_gpu)
    dtype_name = args.dtype or ("bfloat16" if on_gpu else "float32")
    dtype = np.dtype(purejit.numpy.bfloat16 if dtype_name == "bfloat16" else dtype_name)
    iters = args.iters or (20 if on_gpu else 3)
    if B % n or H % n or F % n:
        sys.exit(f"batch {B}, heads {H} and MLP width {F} must divide by the {n} devices")
    # each step once, in the order given (a name given twice still makes one row)
    kinds = list(dict.fromkeys(k for k in args.steps.split(",") if k))
    unknown = set(kinds) - set(KINDS)
    if unknown:
        sys.exit(f"unknown steps {sorted(unknown)}; the steps are {', '.join(KINDS)}")
    if D % n:
        sys.exit(f"width {D} must divide by the {n} devices (fsdp splits every parameter)")

    state, x, y = make_inputs(L, B, S, D, F, dtype)

    variants = args.variants.split(",") if args.variants else list(VARIANTS if on_gpu else ["jax"])
    unknown = set(variants) - set(VARIANTS)
    if unknown or not any(v.startswith("jax") for v in variants):
        sys.exit(f"--variants takes {', '.join(VARIANTS)}, at least one JAX row; got {variants}")
    baseline = next(v for v in variants if v.startswith("jax"))

    def cudnn(q, k, v, scale):
        return jax.nn.dot_product_attention(
            q, k, v, scale=scale, is_causal=True, implementation="cudnn"
        )

    libs = {}
    for name in ["purejit", *variants]:
        lib = purejit if name.startswith("purejit") else jax
        ndevs = np.array(lib.devices()[:n])
        meshes = {a: lib.sharding.Mesh(ndevs, (a,)) for a in ("dp", "tp", "fsdp")}
        options = VARIANT_OPTIONS.get(name)
        jit_options = {"compiler_options": options} if options else {}
        attention = cudnn if name == "jax_cudnn" else None
        steps = make_steps(lib, meshes, H, L, attention, jit_options)
        libs[name] = (lib, meshes, steps, jit_options)

    def placed(lib, meshes, kind):
        specs = state_specs(lib.sharding.PartitionSpec, kind, L)
        if specs is None:
            dev = lib.devices()[0]
            return [lib.tree_util.tree_map(lambda v: lib.device_put(v, dev), a) for a in
                    (state, x, y)]  # fmt: skip
        sh = shardings(lib, meshes[kind.removesuffix("_jit")], specs)
        return [lib.tree_util.tree_map(lib.device_put, a, s) for a, s in zip((state, x, y), sh)]

    results, runners, first, hlo, fused = {}, {}, {}, {}, {}
    for name, (lib, meshes, steps, jit_options) in libs.items():
        for kind in kinds:
            if kind == "fsdp_jit":
                f = steps[kind]
            else:
                f = lib.jit(steps[kind], donate_argnums=0, **jit_options)
            a = placed(lib, meshes, kind)
            compiled = compile_once(lib, f, a)
            mem = compiled.memory_analysis()
            text = compiled.as_text()
            fused[(name, kind)] = "__cudnn$fmha" in text
            if args.hlo and args.out:
                import gzip

                os.makedirs(os.path.join(args.out, "hlo"), exist_ok=True)
                with gzip.open(os.path.join(args.out, "hlo", f"{name}_{kind}.hlo.gz"), "wt") as fh:
                    fh.write(text)
                hlo[f"{name}_{kind}"] = hlo_summary(text)
            st = a[0]
            for _ in range(args.check_steps):  # the same Adam steps for both libraries
                st, loss = f(st, *a[1:])
            first[(name, kind)] = (lib.tree_util.tree_leaves(st[0]), float(loss))
            notes = attention_notes(compiled)
            if notes and not fused[(name, kind)]:
                print(f"{name} {kind}: no cuDNN attention; explain: {notes}", file=sys.stderr)
            results[f"{name}_{kind}"] = {
                "cudnn_attention": fused[(name, kind)],
                "attention_notes": notes,
                "temp_bytes": int(mem.temp_size_in_bytes),
                "argument_bytes": int(mem.argument_size_in_bytes),
            }
            runners[f"{name}_{kind}"] = Runner(f, *placed(lib, meshes, kind))
        if set(kinds) & {"dp", "fsdp", "fsdp_jit"}:
            # weak scaling's T1: one device with one device's share of the batch
            f = lib.jit(steps["single"], donate_argnums=0, **jit_options)
            st, xs, ys = placed(lib, meshes, "single")
            runners[f"{name}_single_local"] = Runner(f, st, xs[: B // n], ys[: B // n])
            results[f"{name}_single_local"] = {}
    for key, (t, h) in time_all(runners, iters, args.repeats).items():
        results[key]["step_s"], results[key]["host_s"] = t, h
    weak = []
    for name in libs:
        for kind in ("dp", "fsdp", "fsdp_jit"):
            if kind in kinds:
                r = results[f"{name}_{kind}"]
                r["weak_scaling"] = results[f"{name}_single_local"]["step_s"] / r["step_s"]
                weak.append(f"{kind} {name} {r['weak_scaling']:.2f}")
    bases = {kind: kind_baseline(kind, baseline, fused, libs) for kind in kinds}
    for kind in kinds:
        theirs = first[(bases[kind], kind)]
        for name in libs:
            ours, r = first[(name, kind)], results[f"{name}_{kind}"]
            r["loss"] = ours[1]
            r["baseline"] = bases[kind]
            r["vs_jax"] = r["step_s"] / results[f"{bases[kind]}_{kind}"]["step_s"]
            r["max_param_diff_vs_jax"] = _max_diff(ours[0], theirs[0], lambda t: t)
            if "single" in kinds and kind != "single":
                r["max_param_diff_vs_single"] = _max_diff(
                    ours[0], first[(name, "single")][0], lambda t: t
                )

    head = (
        f"tp_train on {n} x {devs[0].device_kind} ({platform}): {L} layers, batch {B}, "
        f"sequence {S}, width {D}, {H} heads, MLP {F}, {dtype.name}; {iters} steps x "
        f"{args.repeats} rounds, medians; Adam, parameters compared after {args.check_steps} "
        f"steps; 'vs JAX' and the parameter difference are against {baseline} (jax_cudnn: "
        "jax.nn.dot_product_attention(implementation='cudnn'); purejit_unfused: "
        "compiler_options={'fused_attention': False}; purejit_remat_off: {'remat': False}), "
        "except where purejit's program has "
        "no cuDNN attention call and the `jax` row was run: there JAX's hand-written "
        "attention is the baseline (column 'baseline')"
    )
    lines = [
        head,
        "",
        "| step | library | step (ms) | host (ms) | vs JAX | baseline | cuDNN attention "
        "| temp MB / device | arguments MB / device | loss | max param diff vs JAX |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in kinds:
        for name in libs:
            r = results[f"{name}_{kind}"]
            lines.append(
                f"| {kind} | {name} | {r['step_s'] * 1e3:.2f} | {r['host_s'] * 1e3:.2f} | "
                f"{r.get('vs_jax', 1.0):.2f} | {r['baseline']} | "
                f"{'yes' if r['cudnn_attention'] else 'no'} | {r['temp_bytes'] / 2**20:.1f} | "
                f"{r['argument_bytes'] / 2**20:.1f} | {r['loss']:.5f} | "
                f"{r.get('max_param_diff_vs_jax', 0.0):.1e} |"
            )
    if weak:
        lines += [
            "",
            f"weak scaling T1 / T{n} (T1: one device, batch {B // n}; goal >= 0.90 at n = 4): "
            + ", ".join(weak),
        ]
    for key, h in hlo.items():
        kinds = ", ".join(
            f"{k} {v['count']} ({v['async']} async, {v['overlapping']} overlapping)"
            for k, v in sorted(h["collectives"].items())
        )
        lines.append(
            f"- HLO {key}: {h['fusions']} fusions, {h['custom_calls']} custom calls; {kinds}"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    summary = {
        "devices": n,
        "device_kind": devs[0].device_kind,
        "platform": platform,
        "sizes": {"layers": L, "batch": B, "seq": S, "width": D, "heads": H, "mlp": F},
        "dtype": dtype.name,
        "check_steps": args.check_steps,
        "baseline": baseline,
        "results": results,
        "hlo": hlo,
    }
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        stem = os.path.join(args.out, f"tp_train_{platform}{'_quick' if args.quick else ''}")
        with open(stem + ".md", "w") as fh:
            fh.write(text)
        with open(stem + ".json", "w") as fh:
            json.dump(summary, fh, indent=2)
    if args.profile and args.out:
        # after the table is written, so a failed profile costs no timings
        write_profiles(runners, iters, n, args.out)
    return summary


def kind_baseline(kind: str, baseline: str, fused: dict, libs) -> str:
    """The JAX row a step is compared with: `baseline`, but where that is JAX with cuDNN
    attention and purejit's program of this step has no cuDNN call (a partitioned `jit` fuses
    only attention proved to follow a batch split), JAX's hand-written attention when that
    row was run (the issue's protocol: the baseline uses cuDNN wherever purejit fuses)."""
    if baseline == "jax_cudnn" and "jax" in libs and not fused.get(("purejit", kind), True):
        return "jax"
    return baseline


if __name__ == "__main__":
    main()
