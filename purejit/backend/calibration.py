"""Measure what the collective-matmul cost model needs, on the devices at hand.

Three timed StableHLO programs, each a `while` loop of `steps` repetitions so that one
dispatch is spread over many steps:

- a ring transfer (`collective_permute` to the next device) of two sizes over every device:
  the time per step of the small one is the fixed cost of one ring step (transfer set-up and
  kernel launch), the slope between the two sizes is one link's bandwidth;
- a square matmul on one device: its matmul rate;
- an all-gather of the large size: the plain collective's rate (over a switch it uses every
  link at once, where a ring step uses one);
- the large ring transfer and the matmul in one step: how much of one hides behind the other
  (a ring step's transfer and multiply only save time where they run at once);

The programs are per-device (replicas, no partitioner), so they need no inputs: the buffers
are made inside the program before the loop. With several processes every process must run
`measure` (the ring crosses process boundaries); each gets its own figures.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

# elements (f32) per device moved by the small and the large ring transfer, matmul side
_CPU = {"small": 256, "large": 1 << 18, "dot": 256, "steps": 8, "dot_steps": 4}
_GPU = {"small": 256, "large": 1 << 23, "dot": 4096, "steps": 20, "dot_steps": 20}


def _loop_module(name: str, n: int, steps: int, carries, body: str, nexts, read) -> str:
    """A program of `n` replicas running `body` `steps` times in a while loop.

    Args:
        carries: (name, fill, element type, tensor type) per loop value, each starting as
            a broadcast of the scalar `fill`.
        body: StableHLO lines computing the next values from `%<name>` of the carries.
        nexts: the names of the next values, one per carry.
        read: the carries whose first element the program returns (summed as f32): what it
            reads XLA keeps, so each chain a measurement times must be read.
    """
    init, types = [], []
    for k, (var, fill, elt, ty) in enumerate(carries):
        init.append(f"%f{k} = stablehlo.constant dense<{fill}> : tensor<{elt}>")
        init.append(
            f"%i{k} = stablehlo.broadcast_in_dim %f{k}, dims = [] : (tensor<{elt}>) -> {ty}"
        )
        types.append(ty)
    args = ", ".join(f"%{c[0]} = %i{k}" for k, c in enumerate(carries))
    out = ["%acc0 = stablehlo.constant dense<0.0> : tensor<f32>"]
    for m, k in enumerate(read):
        _, _, elt, ty = carries[k]
        rank = ty.count("x")
        ones = "x".join(["1"] * rank)
        window = ", ".join(["0:1"] * rank)
        out += [
            f"%z{m} = stablehlo.slice %r#{k + 1} [{window}] : ({ty}) -> tensor<{ones}x{elt}>",
            f"%e{m} = stablehlo.reshape %z{m} : (tensor<{ones}x{elt}>) -> tensor<{elt}>",
            f"%c{m} = stablehlo.convert %e{m} : (tensor<{elt}>) -> tensor<f32>",
            f"%acc{m + 1} = stablehlo.add %acc{m}, %c{m} : tensor<f32>",
        ]
    lines = "\n    ".join(init + [
        "%k0 = stablehlo.constant dense<0> : tensor<i32>",
        f"%r:{len(carries) + 1} = stablehlo.while(%i = %k0, {args}) : tensor<i32>, "
        + ", ".join(types),
        "  cond {",
        f"    %lim = stablehlo.constant dense<{steps}> : tensor<i32>",
        "    %c = stablehlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>",
        "    stablehlo.return %c : tensor<i1>",
        "  } do {",
        "    %s = stablehlo.constant dense<1> : tensor<i32>",
        "    %j = stablehlo.add %i, %s : tensor<i32>",
        *("    " + line for line in body.strip().splitlines()),
        f"    stablehlo.return %j, {', '.join('%' + v for v in nexts)} : tensor<i32>, "
        + ", ".join(types),
        "  }",
        *out,
        f"return %acc{len(read)} : tensor<f32>",
    ])  # fmt: skip
    return f"""
module @purejit_calibrate_{name} attributes {{mhlo.num_replicas = {n} : i32}} {{
  func.func public @main() -> tensor<f32> {{
    {lines}
  }}
}}
"""


def _permute(n: int, src: str, t: str, out: str) -> str:
    pairs = ", ".join(f"[{k}, {(k + 1) % n}]" for k in range(n))
    return (
        f'%{out} = "stablehlo.collective_permute"(%{src}) '
        f"{{source_target_pairs = dense<[{pairs}]> : tensor<{n}x2xi64>}} : ({t}) -> {t}"
    )


def _ring_module(n: int, elems: int, steps: int) -> str:
    t = f"tensor<{elems}xf32>"
    return _loop_module("ring", n, steps, [("b", 1.0, "f32", t)], _permute(n, "b", t, "m"),
                        ["m"], [0])  # fmt: skip


def _dot_line(a: str, b: str, m: str, out: str) -> str:
    dims = "contracting_dims = [1] x [0]"
    return f"%{out} = stablehlo.dot_general %{a}, %{b}, {dims} : ({m}, {m}) -> {m}"


def _dot_module(d: int, steps: int, dtype: str) -> str:
    m = f"tensor<{d}x{d}x{dtype}>"
    carries = [("b", 1.0, dtype, m), ("v", 1.0 / d, dtype, m)]
    return _loop_module("dot", 1, steps, carries, _dot_line("b", "v", m, "q"), ["q", "v"], [0])


def _gather_module(n: int, elems: int, steps: int) -> str:
    """An all-gather of `elems` per device over all `n` devices per step: the plain
    collective's own rate (NCCL drives every link of a switch at once, a ring step one)."""
    t, g = f"tensor<{elems}xf32>", f"tensor<{n * elems}xf32>"
    groups = ", ".join(str(k) for k in range(n))
    body = (
        f'%a = "stablehlo.all_gather"(%b) {{all_gather_dim = 0 : i64, '
        f"replica_groups = dense<[[{groups}]]> : tensor<1x{n}xi64>}} : ({t}) -> {g}\n"
        f"%h = stablehlo.slice %a [0:{elems}] : ({g}) -> {t}"
    )
    return _loop_module("gather", n, steps, [("b", 1.0, "f32", t)], body, ["h"], [0])


def _both_module(n: int, elems: int, d: int, steps: int, dtype: str) -> str:
    """A ring transfer and a matmul in each step, independent of each other: how much of
    the shorter one hides behind the longer is what a ring step can overlap. The result
    reads both chains, so XLA cannot drop the matmul as a loop value nothing reads (with
    the ring's chain alone returned, 4 H200s measured an overlap of 1.0 while the real
    rings hid about a third)."""
    t, m = f"tensor<{elems}xf32>", f"tensor<{d}x{d}x{dtype}>"
    carries = [("b", 1.0, "f32", t), ("u", 1.0, dtype, m), ("v", 1.0 / d, dtype, m)]
    body = _permute(n, "b", t, "p") + "\n" + _dot_line("u", "v", m, "q")
    return _loop_module("overlap", n, steps, carries, body, ["p", "q", "v"], [0, 1])


def _compile(text: str, devices: Sequence):
    from jaxlib import xla_client

    opts = xla_client.CompileOptions()
    opts.num_replicas = len(devices)
    opts.num_partitions = 1
    opts.device_assignment = xla_client.DeviceAssignment.create(
        np.array([[d.id] for d in devices], dtype=np.int64)
    )
    client = devices[0].client
    return client.compile_and_load(text, xla_client.DeviceList(tuple(devices)), opts)


def _best_seconds(exe, repeats: int) -> float:
    """The fastest of `repeats` runs (after one warm-up run)."""
    best = float("inf")
    for k in range(repeats + 1):
        t0 = time.perf_counter()
        outs = exe.execute_sharded([])
        for a in outs.disassemble_into_single_device_arrays():
            for b in a:
                b.block_until_ready()
        if k:
            best = min(best, time.perf_counter() - t0)
    return best


def measure(devices: Sequence) -> dict:
    """Time the ring and the matmul on `devices` (every process of a job must call this).

    Returns:
        `{"link_bytes_per_s", "flops_per_s", "step_latency_s", "overlap",
        "collective_bytes_per_s", "seconds"}`: `collective_bytes_per_s` is the rate at which
        a plain all-gather moves a device's (n - 1) / n share of the result;
        `overlap` (0 to 1) is the share of the shorter of a large ring transfer and a matmul
        that hides behind the longer when one step runs both; `seconds` is how long the
        measurement took, compiles included.
    """
    t_start = time.perf_counter()
    devices = list(devices)
    gpu = devices[0].platform != "cpu"
    size = _GPU if gpu else _CPU
    steps = size["steps"]
    per_step = {}
    if len(devices) > 1:
        for name in ("small", "large"):
            exe = _compile(_ring_module(len(devices), size[name], steps), devices)
            per_step[name] = _best_seconds(exe, 3) / steps
        moved = 4 * (size["large"] - size["small"])
        slope = max(per_step["large"] - per_step["small"], 1e-9)
        link = moved / slope
        latency = per_step["small"]
    else:  # one device: no link to measure; a ring never forms on one device anyway
        link, latency = float("inf"), 0.0
    local = [d for d in devices if d.process_index == devices[0].client.process_index()]
    d, dsteps = size["dot"], size["dot_steps"]
    dtype = "bf16" if gpu else "f32"
    exe = _compile(_dot_module(d, dsteps, dtype), local[:1])
    t_dot = _best_seconds(exe, 3) / dsteps
    overlap, collective = 1.0, float("inf")
    if len(devices) > 1:
        n = len(devices)
        exe = _compile(_gather_module(n, size["large"], steps), devices)
        t_gather = _best_seconds(exe, 3) / steps
        collective = 4 * size["large"] * (n - 1) / max(t_gather - latency, 1e-9)
        exe = _compile(_both_module(len(devices), size["large"], d, dsteps, dtype), devices)
        t_both = _best_seconds(exe, 3) / dsteps
        t_ring = per_step["large"]
        hidden = t_ring + t_dot - t_both
        overlap = min(max(hidden / min(t_ring, t_dot), 0.0), 1.0)
    return {
        "link_bytes_per_s": float(link),
        "flops_per_s": float(2 * d**3 / t_dot),
        "step_latency_s": float(latency),
        "overlap": float(overlap),
        "collective_bytes_per_s": float(collective),
        "seconds": time.perf_counter() - t_start,
    }


def device_key(devices: Sequence) -> tuple[str, int]:
    """(device kind, device count): what a calibration is kept under."""
    return str(devices[0].device_kind), len(devices)
