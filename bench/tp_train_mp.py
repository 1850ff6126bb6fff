"""The data-parallel and fully sharded training steps of `bench.tp_train` as N processes of one
device each (`purejit.distributed.initialize`), against one process driving the same N devices.

    python -m bench.tp_train_mp --processes 2,4 --out DIR                 # N GPUs of the host
    python -m bench.tp_train_mp --cpu --quick --processes 2 --out DIR     # CPU, gloo

For each N of `--processes` this parent (which never starts a backend itself) runs
`bench.tp_train_mp_worker` twice over the same N devices, one run after the other:

- the reference: one process whose mesh is its N devices (`CUDA_VISIBLE_DEVICES=0..N-1`; on
  CPU, N forced host devices);
- the job: N processes, process i seeing one device (`CUDA_VISIBLE_DEVICES=i`; on CPU, one
  forced host device and gloo collectives), joined through a coordinator on 127.0.0.1 at a
  free port; the mesh spans the N devices of all processes.

Both run the steps `dp` and `fsdp` jitted with the state donated, from the same start, for
`--check-steps` Adam steps, then time `--iters` steps x `--repeats` rounds (medians, the
steps interleaved). The parent assembles the job's parameters from the shards each process
wrote and compares them and the losses with the reference's: the same SPMD program on the
same devices, so equal bit for bit is expected; the largest absolute difference is reported
either way, with the compiled HLO of both compared (a difference there names the cause). On
GPUs the runs share XLA's per-fusion autotuning cache (the reference fills it), so that both
compile the same kernels; `--no-share-autotune` lets each autotune on its own.

Every child keeps NVLink multicast off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1) and XLA_PYTHON_CLIENT_PREALLOCATE=false. A child that fails or outruns
`--timeout` is recorded with its output's tail (the rest of its group is stopped) and the
other N go on. Results: `DIR/tp_train_mp_<platform>[_quick].md` and `.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench import tp_train
from bench.tp_train_mp_compare import compare_kind, psum_probe_note
from bench.tp_train_mp_worker import psum_probe_values

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = "bench.tp_train_mp_worker"
# NVLink multicast can take a shared host's GPUs out of service: off in every child
NVLS_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
TAIL_LINES = 25


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--processes", default="2,4", help="comma-separated process counts N")
    p.add_argument("--out", default=None, help="write the table and JSON into this folder")
    p.add_argument("--cpu", action="store_true", help="CPU devices and gloo instead of GPUs")
    p.add_argument("--quick", action="store_true", help="bench.tp_train's small sizes")
    tp_train.add_size_args(p)
    p.add_argument("--steps", default="dp,fsdp", help="dp and/or fsdp")
    p.add_argument("--check-steps", type=int, default=10, help="Adam steps before comparing")
    p.add_argument("--iters", type=int, default=None, help="steps per timed round")
    p.add_argument("--repeats", type=int, default=None, help="timed rounds (median)")
    p.add_argument("--timeout", type=float, default=150.0, help="seconds per run of N or 1")
    p.add_argument("--work", default=None, help="folder for shards and logs (default: temp)")
    p.add_argument("--keep-work", action="store_true", help="keep the work folder")
    p.add_argument("--no-share-autotune", action="store_true", help="GPU: autotune apart")
    return p.parse_args(argv)


def _free_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _gpu_ids() -> list[str] | None:
    """The GPUs this parent may hand out (CUDA_VISIBLE_DEVICES or nvidia-smi's list), or None
    when neither tells."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given:
        return [g for g in given.split(",") if g]
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    n = sum(line.startswith("GPU ") for line in out.stdout.splitlines())
    return [str(i) for i in range(n)] if out.returncode == 0 and n else None


def _topology() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def child_env(devices: list[str] | None, cpu_devices: int | None, xla_flags: list[str]) -> dict:
    """The environment of one worker: its GPUs (`devices`) or `cpu_devices` forced host
    devices, NVLink multicast off, no preallocation, the repository importable."""
    env = dict(os.environ, **NVLS_OFF)
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    if cpu_devices is not None:
        env["JAX_PLATFORMS"] = "cpu"
        flags.append(f"--xla_force_host_platform_device_count={cpu_devices}")
    else:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
    env["XLA_FLAGS"] = " ".join(flags + xla_flags)
    return env


def launch(runs: list[tuple[list[str], dict]], log_dir: str, timeout: float, grace=10.0) -> list:
    """Start every (argv, env) of `runs` at once and wait for all of them: a child that
    fails gives the others `grace` seconds (a job's processes wait on each other forever),
    then they are killed, as all are at `timeout`. One outcome per child: return code,
    whether it was killed, whether it printed "WORKER OK <k>", its output's tail."""
    os.makedirs(log_dir, exist_ok=True)
    procs, logs = [], []
    for k, (argv, env) in enumerate(runs):
        log = open(os.path.join(log_dir, f"process{k}.log"), "w")
        cmd = [sys.executable, "-m", WORKER, *argv]
        procs.append(subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
        logs.append(log)
    t0 = time.monotonic()
    deadline, killed, why = t0 + timeout, set(), f"killed at the {timeout:.0f} s timeout"
    while any(p.poll() is None for p in procs):
        now = time.monotonic()
        if any(p.poll() not in (None, 0) for p in procs) and now + grace < deadline:
            deadline, why = now + grace, f"killed {grace:.0f} s after another process failed"
        if now > deadline:
            for k, p in enumerate(procs):
                if p.poll() is None:
                    p.kill()
                    killed.add(k)
            for p in procs:
                p.wait()
            break
        time.sleep(0.1)
    wall = time.monotonic() - t0
    outcomes = []
    for k, (p, log) in enumerate(zip(procs, logs)):
        log.close()
        with open(log.name, errors="replace") as fh:
            text = fh.read()
        outcomes.append(
            {
                "returncode": p.returncode,
                "killed": why if k in killed else None,
                "ok": p.returncode == 0 and f"WORKER OK {k}" in text,
                "tail": "\n".join(text.strip().splitlines()[-TAIL_LINES:]),
            }
        )
    return outcomes, wall


def _failure(what: str, outcomes: list) -> str | None:
    """What went wrong with each failed child of a run, with its output's tail (None when
    all succeeded)."""
    bad = []
    for k, o in enumerate(outcomes):
        if o["ok"]:
            continue
        why = o["killed"] or f"exit status {o['returncode']}"
        bad.append(f"{what} process {k}: {why}\n{o['tail']}")
    return "\n\n".join(bad) or None


def run_n(n: int, args, sizes: list[str], work: str, gpus, xla_flags: list[str]) -> dict:
    """The reference and the job for N processes; their records and the comparison."""
    res = {"processes": n, "failures": []}
    base = [*sizes, "--steps", args.steps, "--check-steps", str(args.check_steps)]
    base += ["--iters", str(args.iters), "--repeats", str(args.repeats), "--devices", str(n)]
    cpu = 1 if args.cpu else None
    if not args.cpu and gpus is not None and len(gpus) < n:
        res["failures"].append(f"skipped: {n} processes need {n} GPUs, {len(gpus)} visible")
        return res
    dirs = {w: os.path.join(work, f"n{n}", w) for w in ("single", "multi")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    ref_gpus = None if args.cpu else (gpus or [str(i) for i in range(n)])[:n]

    ref_env = child_env(ref_gpus, n if args.cpu else None, xla_flags)
    outs, res["single_wall_s"] = launch(
        [([*base, "--out", dirs["single"]], ref_env)], dirs["single"], args.timeout
    )
    res["single_ok"] = outs[0]["ok"]
    if not outs[0]["ok"]:
        res["failures"].append(_failure("one-process reference", outs))

    address = _free_address()
    runs = []
    for k in range(n):
        argv = [*base, "--out", dirs["multi"], "--address", address]
        argv += ["--num-processes", str(n), "--process-id", str(k)]
        env = child_env(None if args.cpu else [ref_gpus[k]], cpu, xla_flags)
        runs.append((argv, env))
    outs, res["multi_wall_s"] = launch(runs, dirs["multi"], args.timeout)
    res["multi_ok"] = all(o["ok"] for o in outs)
    if not res["multi_ok"]:
        res["failures"].append(_failure(f"{n}-process job", outs))

    single = _load_json(dirs["single"], [0]) if res["single_ok"] else None
    multi = _load_json(dirs["multi"], range(n)) if res["multi_ok"] else None
    res["single"], res["multi"] = single, multi
    if single and multi:
        values = psum_probe_values(n * (cpu or 1))
        note = psum_probe_note(values, single[0]["psum_probe"], [m["psum_probe"] for m in multi])
        res["psum_probe_equal"] = note is None
        res["notes"] = [note] if note else []
        res["steps"] = {
            kind: compare_kind(kind, dirs["single"], dirs["multi"], single[0], multi)
            for kind in args.steps.split(",")
        }
    return res


def _load_json(folder: str, pids) -> list[dict]:
    out = []
    for k in pids:
        with open(os.path.join(folder, f"process{k}.json")) as fh:
            out.append(json.load(fh))
    return out


def _table(results: list[dict], head: str) -> str:
    lines = [
        head,
        "",
        "| N | step | params equal (bits) | max abs param diff | losses equal | last loss "
        "| 1 process (ms) | N processes (ms) | N / 1 | compile s (1 / N) | same HLO |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        n = r["processes"]
        if not r.get("steps"):
            timing = ""
            for who in ("single", "multi"):
                for kind, s in ((r.get(who) or [{}])[0].get("steps") or {}).items():
                    timing += f" {who} {kind} {s['step_s'] * 1e3:.2f} ms;"
            lines.append(f"| {n} | - | failed (below) |{timing} | | | | | | | |")
            continue
        for kind, c in r["steps"].items():
            lines.append(
                f"| {n} | {kind} | {'yes' if c['params_bit_equal'] else 'NO'} | "
                f"{c['max_abs_param_diff']:.3g} | {'yes' if c['losses_equal'] else 'NO'} | "
                f"{c['last_loss']:.6f} | {c['single_step_s'] * 1e3:.2f} | "
                f"{c['multi_step_s'] * 1e3:.2f} | {c['multi_vs_single']:.3f} | "
                f"{c['single_compile_s']:.1f} / {c['multi_compile_s']:.1f} | "
                f"{'yes' if c['same_hlo'] else 'no'} |"
            )
    notes = []
    for r in results:
        for note in r.get("notes", []):
            notes.append(f"- N = {r['processes']}: {note}")
        for kind, c in (r.get("steps") or {}).items():
            for note in c["notes"]:
                notes.append(f"- N = {r['processes']}, {kind}: {note}")
        for f in r["failures"]:
            notes.append(f"- N = {r['processes']}: failed:\n\n```\n{f}\n```")
    if notes:
        lines += ["", "Notes:", "", *notes]
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = _parse(argv)
    counts = [int(n) for n in args.processes.split(",") if n]
    if any(n < 2 for n in counts):
        sys.exit(f"--processes takes counts of 2 or more, got {args.processes}")
    kinds = [k for k in args.steps.split(",") if k]
    if not kinds or set(kinds) - {"dp", "fsdp"}:
        sys.exit(f"--steps takes dp and/or fsdp, got {args.steps}")
    L, B, S, D, H, F = tp_train.sizes_from(args, args.quick or args.cpu)
    dtype = args.dtype or ("float32" if args.cpu else "bfloat16")
    args.iters = args.iters or (3 if args.cpu else 20)
    args.repeats = args.repeats or (3 if args.cpu else 5)
    for n in counts:
        if B % n or D % n or F % n:
            sys.exit(f"batch {B}, width {D} and MLP width {F} must divide by {n} devices")
    sizes = ["--layers", str(L), "--batch", str(B), "--seq", str(S), "--dmodel", str(D)]
    sizes += ["--heads", str(H), "--dff", str(F), "--dtype", dtype]

    work = args.work or tempfile.mkdtemp(prefix="tp_train_mp_")
    gpus = None if args.cpu else _gpu_ids()
    xla_flags = []
    if not args.cpu and not args.no_share_autotune:
        xla_flags.append(f"--xla_gpu_per_fusion_autotune_cache_dir={work}/autotune")
    t0 = time.monotonic()
    results = []
    try:
        for n in counts:
            r = run_n(n, args, sizes, work, gpus, xla_flags)
            if xla_flags and not r["single_ok"] and "nknown flag" in "".join(r["failures"]):
                xla_flags = []  # this XLA lacks the flag: autotune apart, say so
                r = run_n(n, args, sizes, work, gpus, xla_flags)
                r["failures"].append("XLA refused the autotune-cache flag: each run autotunes")
            results.append(r)
            print(f"N = {n}: {'ok' if r.get('steps') else 'failed'}", flush=True)
    finally:
        if not args.keep_work and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    recs = [x for r in results for x in (r.get("single") or r.get("multi") or [])]
    platform = recs[0]["platform"] if recs else ("cpu" if args.cpu else "gpu")
    device_kind = recs[0]["device_kind"] if recs else "?"
    head = (
        f"tp_train_mp on {device_kind} ({platform}): {L} layers, batch {B}, sequence {S}, "
        f"width {D}, {H} heads, MLP {F}, {dtype}; each step as N processes of one device "
        "(purejit.distributed.initialize) against one process driving the same N devices, "
        f"the parameters and losses compared after {args.check_steps} Adam steps from the same "
        f"start; {args.iters} steps x {args.repeats} rounds, medians (N processes: the slowest "
        "process's); autotuning "
        + ("shared through XLA's per-fusion cache" if xla_flags else "apart (not shared)")
        + (" (CPU: times mean little)" if platform == "cpu" else "")
    )
    text = _table(results, head)
    topo = None if args.cpu else _topology()
    if topo:
        text += f"\n`nvidia-smi topo -m`:\n\n```\n{topo}\n```\n"
    text += f"\nwall time of the whole run: {time.monotonic() - t0:.0f} s\n"
    print(text)
    summary = {
        "platform": platform,
        "device_kind": device_kind,
        "sizes": {"layers": L, "batch": B, "seq": S, "width": D, "heads": H, "mlp": F},
        "dtype": dtype,
        "check_steps": args.check_steps,
        "iters": args.iters,
        "repeats": args.repeats,
        "autotune_shared": bool(xla_flags),
        "wall_s": time.monotonic() - t0,
        "results": results,
    }
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        stem = os.path.join(args.out, f"tp_train_mp_{platform}{'_quick' if args.quick else ''}")
        with open(stem + ".md", "w") as fh:
            fh.write(text)
        with open(stem + ".json", "w") as fh:
            json.dump(summary, fh, indent=2, default=_plain)
    return summary


def _plain(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"{type(x).__name__} is not JSON")


if __name__ == "__main__":
    main()
