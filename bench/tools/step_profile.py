"""Where a training step's device time goes: the GPU kernels of `bench.train`'s transformer
step, per form (purejit default, purejit remat off, `jax.jit` with cuDNN attention, ...),
summed by kernel name over a few steps and compared side by side.

The kernels are read with torch's profiler (CUPTI traces every kernel the process launches,
XLA's included), so it needs torch with CUDA. It also writes each form's optimised HLO.

    python -m bench.tools.step_profile --out DIR [--steps 5] [--forms purejit,jax cudnn attention]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import time
from collections import defaultdict

DEFAULT_FORMS = (
    "purejit,purejit split off,purejit remat off,purejit remat off split off,jax cudnn attention"
)


def _category(name: str) -> str:
    """A coarse class of a kernel name, for the summary."""
    n = name.lower()
    if "fmha" in n or "sdpa" in n or "flash" in n or "cudnn" in n:
        return "attention (cuDNN)"
    if "gemm" in n or "xmma" in n or "cutlass" in n or "matmul" in n or "sm90" in n:
        return "matmul"
    if "nccl" in n:
        return "collective"
    if "memcpy" in n or "memset" in n or "copy" in n:
        return "copy/memset"
    if "reduce" in n or "reduction" in n:
        return "reduction fusion"
    if "transpose" in n:
        return "transpose fusion"
    return "other fusion"


def cuda_events(run, steps: int, sync) -> list:
    """The GPU kernels (torch profiler events) of `steps` calls of `run()`, then
    `sync(last result)`."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = None
        for _ in range(steps):
            out = run()
        sync(out)
        torch.cuda.synchronize()
    return [ev for ev in prof.events() if ev.device_type.name == "CUDA"]


def kernel_profile(run, steps: int, sync) -> tuple[dict, float, dict, dict]:
    """Profile `steps` calls of `run()` (then `sync(result)`): {kernel name: (calls per step,
    µs per step summed over devices)}, the total µs per step, {device: µs per step} and
    {device: its idle time (`_gaps`)}."""
    kernels: dict = defaultdict(lambda: [0.0, 0.0])
    devices: dict = defaultdict(float)
    spans: dict = defaultdict(list)
    for ev in cuda_events(run, steps, sync):
        spans[ev.device_index].append((ev.time_range.start, ev.time_range.end))
        us = (ev.device_time if hasattr(ev, "device_time") else ev.cuda_time) / steps
        k = kernels[ev.name]
        k[0] += 1 / steps
        k[1] += us
        devices[ev.device_index] += us
    total = sum(v[1] for v in kernels.values())
    gaps = {d: _gaps(s, steps) for d, s in spans.items()}
    return {k: tuple(v) for k, v in kernels.items()}, total, dict(devices), gaps


def _gaps(spans: list, steps: int) -> dict:
    """Per step: the span from the first kernel's start to the last one's end, the time no
    kernel runs inside it, and that idle time split at 10 µs (launch gaps vs stalls)."""
    if not spans:
        return {}
    spans.sort()
    idle = small = 0.0
    end = spans[0][1]
    for a, b in spans[1:]:
        if a > end:
            idle += a - end
            small += a - end if a - end < 10 else 0
        end = max(end, b)
    return {"span_us": (end - spans[0][0]) / steps, "idle_us": idle / steps,
            "idle_small_us": small / steps, "kernels": len(spans) / steps}  # fmt: skip


def profile_form(fn, state, steps: int) -> tuple[dict, float, dict]:
    """{kernel name: (calls per step, µs per step)}, the total µs per step and the idle time
    per device (`_gaps`) of a `bench.train` step form."""
    from bench.train import _block

    def run():
        state[0], loss = fn(state[0], state[1], state[2])
        return (state[0], loss)

    kernels, total, _, gaps = kernel_profile(run, steps, _block)
    return kernels, total, gaps


def category_table(kernels: dict, per: float = 1.0) -> list[str]:
    """Markdown rows: µs per step by kernel category (divided by `per`, e.g. the devices)."""
    cats: dict = defaultdict(lambda: [0.0, 0.0])
    for k, (calls, us) in kernels.items():
        c = cats[_category(k)]
        c[0] += calls / per
        c[1] += us / per
    rows = ["| category | kernels/step | µs/step |", "|---|---:|---:|"]
    for c, (calls, us) in sorted(cats.items(), key=lambda kv: -kv[1][1]):
        rows.append(f"| {c} | {calls:.0f} | {us:.0f} |")
    return rows


def _compiled(name, forms, params, x, y):
    """(fn, state, optimised HLO) of one form, compiled and warm. "<form> split off" is the
    form compiled with `attention_split_projections` off (read when the program compiles)."""
    from bench.train import _block, _put

    import purejit

    from purejit.passes import _remat_cost, remat

    base, xla = _xla_options(name)
    base, patch = _remat_patch(base)
    off = base.endswith(" split off")
    base = base.removesuffix(" split off")
    make, kind = forms[base]
    fn = make()
    state = [_put(kind, params), _put(kind, x), _put(kind, y)]
    if off:
        purejit.config.update("attention_split_projections", False)
    # each name is set where it is read: the cost model's in passes/_remat_cost.py
    # (passes/remat.py reads them through it), the cut's in passes/remat.py
    holder = {k: _remat_cost if hasattr(_remat_cost, k) else remat for k in patch}
    old = {k: getattr(holder[k], k) for k in patch}
    for k, v in patch.items():
        setattr(holder[k], k, v)
    try:  # the step compiles (and plans its remat) at its first call
        with xla_env(xla):
            for _ in range(3):
                state[0], loss = fn(state[0], state[1], state[2])
            _block((state[0], loss))
    finally:
        if off:
            purejit.config.update("attention_split_projections", True)
        for k, v in old.items():
            setattr(holder[k], k, v)
    if kind == "purejit":
        compiled = list(fn.cache.values())[-1]
    else:
        compiled = fn.lower(*[_put(kind, t) for t in (params, x, y)]).compile()
    return fn, state, compiled.as_text(), compiled.memory_analysis().temp_size_in_bytes


@contextlib.contextmanager
def xla_env(xla: str):
    """`PUREJIT_XLA_OPTIONS` set to `xla` (when not empty) inside the block, restored after.
    purejit reads the variable once per process (`pjrt.xla_option_overrides` is cached), so
    the cache is cleared on the way in and out: without that a form compiled after another
    purejit compile would silently get the first compile's options."""
    from purejit.backend import pjrt

    env = os.environ.get("PUREJIT_XLA_OPTIONS")
    if xla:
        os.environ["PUREJIT_XLA_OPTIONS"] = xla
    pjrt.xla_option_overrides.cache_clear()
    try:
        yield
    finally:
        if xla:
            os.environ.pop("PUREJIT_XLA_OPTIONS")
            if env is not None:
                os.environ["PUREJIT_XLA_OPTIONS"] = env
        pjrt.xla_option_overrides.cache_clear()


def _xla_options(name: str) -> tuple[str, str]:
    """A form's name without its `{xla_option=value;...}` suffix, and the XLA options the
    suffix sets for purejit's compile of the form (`PUREJIT_XLA_OPTIONS`; JAX's forms in the
    same process keep XLA's defaults): `purejit {xla_gpu_enable_triton_gemm=false}`."""
    if not name.endswith("}") or "{" not in name:
        return name, ""
    base, _, spec = name[:-1].partition("{")
    return base.strip(), ",".join(item.strip() for item in spec.split(";"))


def _remat_patch(name: str) -> tuple[str, dict]:
    """A form's name without its `[NAME=VALUE;...]` suffix, and the module globals of
    `passes.remat` (and `passes._remat_cost`, where the cost model reads them) the suffix sets
    while the form compiles (a diagnostic of the remat cost model's constants:
    `purejit [TRAFFIC_WEIGHT=16.0]`)."""
    if not name.endswith("]") or "[" not in name:
        return name, {}
    base, _, spec = name[:-1].partition("[")
    patch = {}
    for item in spec.split(";"):
        k, _, v = item.partition("=")
        patch[k.strip()] = json.loads(v.strip())
    return base.strip(), patch


def _time(fn, state, calls: int) -> float:
    from bench.train import _block

    t0 = time.perf_counter()
    for _ in range(calls):
        state[0], loss = fn(state[0], state[1], state[2])
    _block((state[0], loss))
    return (time.perf_counter() - t0) / calls


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--forms", default=DEFAULT_FORMS)
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds")
    p.add_argument("--calls", type=int, default=20, help="steps per timing round")
    p.add_argument("--batch", type=int, default=None, help="the model's batch (default 8)")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    import torch

    torch.cuda.init()
    from bench.train import _forms, _workloads, transformer_workload

    wl = [w for w in _workloads("gpu", False) if w[0].startswith("transformer")][0]
    desc, make_loss, make_layer, params, x, y = wl
    if a.batch is not None:
        desc, make_loss, params, x, y = transformer_workload("gpu", False, batch=a.batch)
    forms = _forms(make_loss, make_layer, params, x, y, ())
    wanted = [f.strip() for f in a.forms.split(",")]
    built, temps = {}, {}
    for name in list(wanted):
        try:
            fn, state, text, temp = _compiled(name, forms, params, x, y)
        except Exception as e:  # a form XLA refuses (an unknown option) is left out, said once
            print(f"form {name!r} left out: {type(e).__name__}: {str(e)[:300]}", flush=True)
            wanted.remove(name)
            continue
        built[name] = (fn, state)
        temps[name] = temp
        safe = re.sub(r"[^a-z0-9]+", "_", name.lower())
        with open(os.path.join(a.out, f"hlo_{safe}.txt"), "w") as f:
            f.write(text)
    times: dict = {n: [] for n in wanted}
    for _ in range(a.rounds):
        for name, (fn, state) in built.items():
            times[name].append(_time(fn, state, a.calls))
    report = {"workload": desc, "forms": {}}
    ref = statistics.median(times[wanted[-1]])
    lines = [f"# step profile: {desc}", "",
             f"Step time: median of {a.rounds} interleaved rounds of {a.calls} steps; ratios "
             f"against `{wanted[-1]}`. Kernel time: the sum of the step's GPU kernels "
             f"(CUPTI, {a.steps} steps).", "",
             "| form | step (ms) | ratio | kernels (ms) | kernels/step | idle in step (ms) "
             "| of it gaps < 10 µs | temporaries (MiB) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    profiles = {}
    for name, (fn, state) in built.items():
        profiles[name] = profile_form(fn, state, a.steps)
    for name in wanted:
        med = statistics.median(times[name])
        g = next(iter(profiles[name][2].values()), {})
        lines.append(f"| {name} | {med * 1e3:.3f} | {med / ref:.3f}x | "
                     f"{profiles[name][1] / 1e3:.3f} | {g.get('kernels', 0):.0f} | "
                     f"{g.get('idle_us', 0) / 1e3:.3f} | {g.get('idle_small_us', 0) / 1e3:.3f} | "
                     f"{temps[name] / 2**20:.0f} |")  # fmt: skip
    lines.append("")
    for name in wanted:
        kernels, total, idle = profiles[name]
        report["forms"][name] = {"total_us": total, "kernels": kernels, "times_s": times[name],
                                 "temp_bytes": temps[name], "idle": idle}  # fmt: skip
        lines.append(f"## {name}: {total / 1e3:.3f} ms of kernels per step")
        lines.append("")
        lines += category_table(kernels)
        lines.append("")
        lines.append("| kernel | calls/step | µs/step |")
        lines.append("|---|---:|---:|")
        for k, (calls, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[: a.top]:
            lines.append(f"| `{k[:90]}` | {calls:.0f} | {us:.0f} |")
        lines.append("")
    write_report(a.out, "step_profile", report, lines)


def write_report(out: str, stem: str, report: dict, lines: list[str]) -> None:
    """`<stem>.json` (the report) and `<stem>.md` (the lines) in `out`, and the lines printed."""
    with open(os.path.join(out, stem + ".json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out, stem + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
