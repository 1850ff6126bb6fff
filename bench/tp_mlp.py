"""Tensor-parallel MLP layer: purejit shard_map with and without the collective-matmul pass,
against the same program in JAX's shard_map.

    python -m bench.tp_mlp                      # every GPU (or CPU device) of the host
    python -m bench.tp_mlp --cpu-devices 8 --size small      # 8 forced CPU devices
    python -m bench.tp_mlp --size large --dtype bfloat16 --json out.json

The layer is the sequence-parallel Megatron MLP over one mesh axis of n devices:

    x [T/n, D] --all_gather--> [T, D] @ W1 [D, F/n] -> gelu-ish (tanh) -> @ W2 [F/n, D]
      --reduce_scatter--> [T/n, D]

Variants: purejit with the pass off, on (rings of collective_permute as while loops), on with
the rings unrolled, chunked2 / chunked4 (the chunked-collectives form forced: each all-gather
and reduce-scatter cut with its matmul into 2 or 4 pieces whose collectives run one after the
other, `passes/_chunked.py`), pipelined4 (the whole layer cut into 4 row pieces,
`passes/_chunked_layer.py`; `--forms` picks the forced forms, `chunked4_free` has independent
pieces), auto (at its first compile the pass times each timing unit, a candidate with its
elementwise neighbourhood and the two candidates of the MLP as one joint unit, as written
against each form of its `auto_forms` applied to every member, and keeps the fastest;
`--auto-decide model`: its cost model decides, from figures measured on the devices; the
rows' "chose" says which form each candidate took), jax.jit(jax.shard_map(...)), and JAX's
auto-partitioned jax.jit with shardings (on GPUs with XLA's windowed einsum switched on for
that compile: `jax_jit_windowed`, whose compiled HLO is checked for the windowed loop).
Each is warmed up, then `--iters` calls are timed between two synchronisations, `--repeats`
rounds with the variants interleaved; the median step time is reported with the ratios
purejit/JAX and on/off, XLA's temp_size_in_bytes per device, and the largest difference from
JAX's result. Absolute times are only meaningful on GPUs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

SIZES = {  # tokens T, model width D, hidden width F
    "small": (512, 256, 1024),
    "medium": (4096, 2048, 8192),
    "large": (8192, 8192, 32768),
}


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--size",
        choices=sorted(SIZES),
        default=None,
        help="problem size (default: large on GPU, small on CPU)",
    )
    p.add_argument("--tokens", type=int)
    p.add_argument("--dmodel", type=int)
    p.add_argument("--dff", type=int)
    p.add_argument("--dtype", default=None, help="float32 or bfloat16 (default: bf16 on GPU)")
    p.add_argument("--devices", type=int, default=None, help="mesh size (default: all)")
    p.add_argument(
        "--cpu-devices",
        type=int,
        default=None,
        help="force this many host CPU devices (sets XLA_FLAGS before jax starts)",
    )
    p.add_argument("--iters", type=int, default=None)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", default=None, help="also write the results to this file")
    p.add_argument(
        "--auto-alone",
        action="store_true",
        help="also auto with each candidate timed alone (no elementwise neighbourhood, no "
        "joint unit: how auto decided before timing units), in the same process",
    )
    p.add_argument(
        "--forms",
        default="chunked2,chunked4,pipelined4",
        help="the pass's forms forced as their own variants besides the ring (chunkedK, "
        "pipelinedK, either with _free), comma separated; '' for none",
    )
    p.add_argument(
        "--profile",
        default=None,
        help="GPU (needs torch): a folder for each variant's kernel trace per device (how much "
        "of its collective time runs beside compute) and its compiled HLO",
    )
    p.add_argument(
        "--auto-decide",
        choices=("timed", "model"),
        default="timed",
        help="how auto decides: time the candidates (default) or the cost model",
    )
    return p.parse_args(argv)


@contextlib.contextmanager
def _lone_candidates(on: bool):
    """While on: `auto` times each candidate alone, as before timing units (a unit's chain
    may hold no op, so no candidate takes its neighbourhood or a partner), deciding afresh."""
    if not on:
        yield
        return
    from purejit.compiler import candidate_timing
    from purejit.passes import _timing_units

    saved = _timing_units.MAX_CHAIN
    candidate_timing.forget()
    _timing_units.MAX_CHAIN = 0
    try:
        yield
    finally:
        _timing_units.MAX_CHAIN = saved


def _profile(out: str, calls: dict, texts: dict, jax_compiled: dict, results: dict) -> None:
    """Each variant's kernels traced per device (`bench.tools.overlap_profile`: collective
    time, compute time, both at once) into results and OUT/overlap.md, and every compiled
    program's HLO into OUT/hlo/."""
    import gzip

    from bench.tools import overlap_profile

    os.makedirs(os.path.join(out, "hlo"), exist_ok=True)
    texts = {f"purejit_{m}": t for m, t in texts.items()}
    texts.update({k: c.as_text() for k, c in jax_compiled.items()})
    for k, t in texts.items():
        with gzip.open(os.path.join(out, "hlo", f"{k}.hlo.gz"), "wt") as fh:
            fh.write(t)
    rows = {}
    for k, fn in calls.items():
        rows[k] = overlap_profile.trace(fn, 20, lambda o: o.block_until_ready())
        results[k]["overlap"] = {str(d): s for d, s in rows[k].items()}
    with open(os.path.join(out, "overlap.md"), "w") as fh:
        fh.write("\n".join(overlap_profile.table(rows)) + "\n")
    print("\n".join(overlap_profile.table(rows)))


def _time_all(fns: dict, iters: int, repeats: int) -> dict:
    """Median seconds per call of each function: `iters` calls between two synchronisations,
    `repeats` rounds, the variants interleaved in every round so that a busy host slows them
    alike."""
    for fn in fns.values():
        fn().block_until_ready()
        fn().block_until_ready()
    samples = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(iters):
                out = fn()
            out.block_until_ready()
            samples[k].append((time.perf_counter() - t0) / iters)
    return {k: sorted(v)[len(v) // 2] for k, v in samples.items()}


def main(argv=None):
    args = _parse(argv)
    if args.cpu_devices:
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "")
            + f" --xla_force_host_platform_device_count={args.cpu_devices}"
        )
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import numpy as np

    import purejit
    import purejit.numpy as pnp
    from purejit import lax
    from purejit.passes import Pipeline
    from purejit.passes.collective_matmul import CollectiveMatmul
    from purejit.passes.pipeline import default_passes
    from purejit.sharding import Mesh, NamedSharding
    from purejit.sharding import PartitionSpec as P

    devs = purejit.devices()
    platform = devs[0].platform
    n = args.devices or len(devs)
    if n < 2:
        sys.exit("tp_mlp needs at least 2 devices (on CPU pass --cpu-devices 8)")
    on_gpu = platform != "cpu"
    size = args.size or ("large" if on_gpu else "small")
    T, D, F = SIZES[size]
    T, D, F = args.tokens or T, args.dmodel or D, args.dff or F
    dtype_name = args.dtype or ("bfloat16" if on_gpu else "float32")
    dtype = np.dtype(purejit.numpy.bfloat16 if dtype_name == "bfloat16" else dtype_name)
    iters = args.iters or (50 if on_gpu else 5)
    if T % n or F % n:
        sys.exit(f"tokens {T} and hidden width {F} must divide by the {n} devices")

    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, D)).astype(np.float32).astype(dtype)
    w1 = (rng.standard_normal((D, F)) / np.sqrt(D)).astype(np.float32).astype(dtype)
    w2 = (rng.standard_normal((F, D)) / np.sqrt(F)).astype(np.float32).astype(dtype)

    # ---- purejit ---------------------------------------------------------------------------
    mesh = Mesh(np.array(devs[:n]), ("tp",))
    specs = (P("tp"), P(None, "tp"), P("tp"))

    def body(x, w1, w2):
        h = pnp.tanh(lax.all_gather(x, "tp", tiled=True) @ w1)
        return lax.psum_scatter(h @ w2, "tp", scatter_dimension=0, tiled=True)

    layer = purejit.shard_map(body, mesh=mesh, in_specs=specs, out_specs=P("tp"))
    args_pj = [purejit.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, w1, w2), specs)]
    results, outputs, calls, texts = {}, {}, {}, {}
    variants = {
        "off": CollectiveMatmul(mode="off"),
        "on": CollectiveMatmul(mode="on"),
        "on_unrolled": CollectiveMatmul(mode="on", unroll=True),
        **{
            f: CollectiveMatmul(mode="on", form=f)
            for f in (v.strip() for v in args.forms.split(",") if v.strip())
        },
        "auto": CollectiveMatmul(mode="auto", decide=args.auto_decide),
    }
    if args.auto_alone:
        variants["auto_alone"] = CollectiveMatmul(mode="auto", decide=args.auto_decide)
    for mode, cm in variants.items():
        f = purejit.jit(layer, passes=Pipeline([cm, *default_passes()]))
        with _lone_candidates(mode == "auto_alone"):
            low = f.lower(*args_pj)
            compiled = low.compile()
        rec = next(r for r in low.records if r.name == "collective_matmul")
        calls[f"purejit_{mode}"] = lambda f=f: f(*args_pj)
        outputs[mode] = np.asarray(f(*args_pj)).astype(np.float32)
        results[f"purejit_{mode}"] = {
            "temp_bytes": compiled.memory_analysis().temp_size_in_bytes,
            "rings": rec.report["rewritten"],  # candidates rewritten (rings or chunked)
            "forms": [c.get("form") for c in rec.report["candidates"]],
        }
        if "calibration" in rec.report:  # auto: the measured inputs and what measuring took
            results[f"purejit_{mode}"]["calibration"] = rec.report["calibration"]
            results[f"purejit_{mode}"]["calibration_s"] = low.timings.get("calibration", 0.0)
        if "timed" in rec.report:  # auto: each candidate's timed programs, what timing took
            # (timed_with: the timing unit, the candidate's neighbourhood and partner; the
            # members of a joint unit carry the unit's figures; *_s: where deciding went)
            keep = ("kind", "plain_s", "ring_s", "rewritten", "timed", "form", "forms",
                    "timed_with", "passes_s", "compile_s", "inputs_s", "runs_s")  # fmt: skip
            results[f"purejit_{mode}"]["timed"] = [
                {k: c[k] for k in keep if k in c} for c in rec.report["candidates"]
                if "forms" in c or "ring_s" in c
            ]  # fmt: skip
            results[f"purejit_{mode}"]["calibration_s"] = low.timings.get("calibration", 0.0)
        texts[mode] = compiled.as_text()

    # whether auto compiled exactly the pass-off or pass-on program: a step time apart from
    # that program's is then the run's noise, not the decision
    for auto in [m for m in texts if m.startswith("auto")]:
        same = [m for m in texts if not m.startswith("auto") and texts[m] == texts[auto]]
        results[f"purejit_{auto}"]["same_program_as"] = same[0] if same else None

    # ---- JAX -------------------------------------------------------------------------------
    from jax.sharding import Mesh as JMesh
    from jax.sharding import NamedSharding as JNamed
    from jax.sharding import PartitionSpec as JP

    jmesh = JMesh(np.array(jax.devices()[:n]), ("tp",))
    jspecs = (JP("tp"), JP(None, "tp"), JP("tp"))

    def jbody(x, w1, w2):
        h = jax.numpy.tanh(jax.lax.all_gather(x, "tp", tiled=True) @ w1)
        return jax.lax.psum_scatter(h @ w2, "tp", scatter_dimension=0, tiled=True)

    jlayer = jax.jit(jax.shard_map(jbody, mesh=jmesh, in_specs=jspecs, out_specs=JP("tp")))
    args_jax = [jax.device_put(a, JNamed(jmesh, s)) for a, s in zip((x, w1, w2), jspecs)]
    jcompiled = jlayer.lower(*args_jax).compile()
    calls["jax"] = lambda: jlayer(*args_jax)
    results["jax"] = {
        "temp_bytes": jcompiled.memory_analysis().temp_size_in_bytes,
        "rings": 0,
    }
    want = np.asarray(jlayer(*args_jax)).astype(np.float32)

    # JAX's auto-partitioned jit of the same layer; on GPUs with XLA's windowed einsum (its
    # own collective matmul), switched on for this compile only
    def jfull(x, w1, w2):
        return jax.numpy.tanh(x @ w1) @ w2

    jsh = [JNamed(jmesh, s) for s in jspecs]
    jit_auto = jax.jit(jfull, in_shardings=jsh, out_shardings=JNamed(jmesh, JP("tp")))
    windowed = {
        "xla_gpu_threshold_for_windowed_einsum_mib": 0,
        "xla_gpu_multi_streamed_windowed_einsum": True,
    }
    jit_compiled = jit_auto.lower(*args_jax).compile(compiler_options=windowed if on_gpu else None)
    name = "jax_jit_windowed" if on_gpu else "jax_jit"
    calls[name] = lambda: jit_compiled(*args_jax)
    hlo = jit_compiled.as_text()
    results[name] = {
        "temp_bytes": jit_compiled.memory_analysis().temp_size_in_bytes,
        "rings": 0,
        # XLA's windowed einsum is a while loop of collective-permutes and partial dots
        "windowed_loop": "while(" in hlo and "collective-permute" in hlo,
    }
    outputs_jax_jit = np.asarray(jit_compiled(*args_jax)).astype(np.float32)
    for name, step in _time_all(calls, iters, args.repeats).items():
        results[name]["step_s"] = step
    if args.profile:
        _profile(args.profile, calls, texts, {"jax": jcompiled, name: jit_compiled}, results)
    for mode, out in outputs.items():
        results[f"purejit_{mode}"]["max_abs_diff_vs_jax"] = float(np.abs(out - want).max())
    results[name]["max_abs_diff_vs_jax"] = float(np.abs(outputs_jax_jit - want).max())

    # ---- report ------------------------------------------------------------------------------
    flops = 2 * 2 * T * D * F / n
    jt = results["jax"]["step_s"]
    print(
        f"tp_mlp on {n} x {devs[0].device_kind} ({platform}), T={T} D={D} F={F} "
        f"{np.dtype(dtype).name}, {iters} iters x {args.repeats}\n"
    )
    print(
        "| variant | step (ms) | vs JAX | TFLOP/s per device | temp MB | rewritten (forms) "
        "| max diff |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        r["vs_jax"] = r["step_s"] / jt
        r["tflops_per_device"] = flops / r["step_s"] / 1e12
        print(
            f"| {name} | {r['step_s'] * 1e3:.3f} | {r['vs_jax']:.2f} | "
            f"{r['tflops_per_device']:.3g} | {r['temp_bytes'] / 2**20:.2f} | {r['rings']}"
            f"{' (' + ', '.join(str(f) for f in r['forms']) + ')' if r.get('forms') else ''} | "
            f"{r.get('max_abs_diff_vs_jax', 0.0):.2e} |"
        )
    on_off = results["purejit_on"]["step_s"] / results["purejit_off"]["step_s"]
    best = min(results["purejit_on"]["step_s"], results["purejit_off"]["step_s"])
    auto_over_best = results["purejit_auto"]["step_s"] / best
    # the best forced program: off, the rings, a chunked or pipelined form
    forced = [f"purejit_{m}" for m in variants if not m.startswith("auto")]
    best_forced = min(forced, key=lambda k: results[k]["step_s"])
    best_jax = min(results["jax"]["step_s"], results[name]["step_s"])
    print(f"\npass on / off step time: {on_off:.2f}")
    print(f"auto / better of on and off: {auto_over_best:.2f} (goal <= 1.02)")
    auto_over_forced = results["purejit_auto"]["step_s"] / results[best_forced]["step_s"]
    print(f"auto / best forced variant ({best_forced}): {auto_over_forced:.2f}")
    print(f"JAX shard_map / best purejit: {jt / results[best_forced]['step_s']:.3f}x")
    print(f"{name} windowed loop in the compiled HLO: {results[name]['windowed_loop']}")
    summary = {
        "devices": n,
        "device_kind": devs[0].device_kind,
        "platform": platform,
        "T": T,
        "D": D,
        "F": F,
        "dtype": np.dtype(dtype).name,
        "results": results,
        "on_over_off": on_off,
        "auto_over_best_of_on_off": auto_over_best,
        "best_forced": best_forced,
        "auto_over_best_forced": auto_over_forced,
        "best_purejit_over_best_jax": min(
            r["step_s"] for k, r in results.items() if k.startswith("purejit")
        )
        / best_jax,
    }
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=2)
    return summary


if __name__ == "__main__":
    main()
