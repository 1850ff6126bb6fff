"""How much of a program's collective time runs beside its compute, per GPU, from a kernel
trace (CUPTI through torch's profiler, as `bench.tools.step_profile`): for each device, the
time its NCCL kernels run, the time its other kernels run, the time both run at once, and
the time nothing runs. `bench.tp_mlp --profile DIR` writes it for every variant.

Only the intervals' arithmetic (`device_summary`) is tested without a GPU
(`tests/test_bench.py`); the trace needs CUDA.
"""

from __future__ import annotations

from collections import defaultdict


def is_collective(name: str) -> bool:
    """Whether a kernel name is NCCL's (collectives, send/recv of a collective-permute)."""
    return "nccl" in name.lower()


def _union(spans: list) -> list:
    """The disjoint intervals covering `spans` ((start, end) pairs), in order."""
    out: list = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _length(spans: list) -> float:
    return sum(b - a for a, b in spans)


def _intersection(xs: list, ys: list) -> float:
    """The total length of two disjoint, sorted interval lists' intersection."""
    i = j = 0
    total = 0.0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if b > a:
            total += b - a
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


def device_summary(kernels: list, calls: int) -> dict:
    """Per call, from one device's kernels as (name, start µs, end µs): the span from the
    first start to the last end, the time collectives run, the time other kernels run, the
    time both run at once (`overlap_us`), the time nothing runs, and the share of the
    collective time that runs beside compute."""
    comm = _union([(a, b) for n, a, b in kernels if is_collective(n)])
    compute = _union([(a, b) for n, a, b in kernels if not is_collective(n)])
    busy = _union([(a, b) for _, a, b in kernels])
    span = (busy[-1][1] - busy[0][0]) if busy else 0.0
    comm_us, overlap = _length(comm), _intersection(comm, compute)
    return {
        "span_us": span / calls,
        "collective_us": comm_us / calls,
        "compute_us": _length(compute) / calls,
        "overlap_us": overlap / calls,
        "idle_us": (span - _length(busy)) / calls,
        "collective_hidden": overlap / comm_us if comm_us else 0.0,
        "kernels": len(kernels) / calls,
    }


def trace(run, calls: int, sync) -> dict:
    """{device index: `device_summary`} of `calls` calls of `run()`, then `sync(last result)`,
    traced on the GPUs."""
    from bench.tools.step_profile import cuda_events

    per_device: dict = defaultdict(list)
    for ev in cuda_events(run, calls, sync):
        per_device[ev.device_index].append((ev.name, ev.time_range.start, ev.time_range.end))
    return {d: device_summary(k, calls) for d, k in sorted(per_device.items())}


def table(rows: dict) -> list[str]:
    """Markdown lines: one row per (variant, device), times in µs per call."""
    lines = [
        "| variant | device | span | collectives | compute | both at once | idle | collective time hidden | kernels |",  # noqa: E501
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, devices in rows.items():
        for d, s in devices.items():
            lines.append(
                f"| {name} | {d} | {s['span_us']:.0f} | {s['collective_us']:.0f} | "
                f"{s['compute_us']:.0f} | {s['overlap_us']:.0f} | {s['idle_us']:.0f} | "
                f"{s['collective_hidden']:.0%} | {s['kernels']:.0f} |"
            )
    return lines
