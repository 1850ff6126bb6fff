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


def _ring_module(n: int, elems: int, steps: int) -> str:
    pairs = ", ".join(f"[{k}, {(k + 1) % n}]" for k in range(n))
    t = f"tensor<{elems}xf32>"
    return f"""
module @purejit_calibrate_ring attributes {{mhlo.num_replicas = {n} : i32}} {{
  func.func public @main() -> tensor<f32> {{
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %x = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> {t}
    %k0 = stablehlo.constant dense<0> : tensor<i32>
    %r:2 = stablehlo.while(%i = %k0, %b = %x) : tensor<i32>, {t}
      cond {{
        %lim = stablehlo.constant dense<{steps}> : tensor<i32>
        %c = stablehlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      }} do {{
        %s = stablehlo.constant dense<1> : tensor<i32>
        %j = stablehlo.add %i, %s : tensor<i32>
        %m = "stablehlo.collective_permute"(%b) {{
          source_target_pairs = dense<[{pairs}]> : tensor<{n}x2xi64>
        }} : ({t}) -> {t}
        stablehlo.return %j, %m : tensor<i32>, {t}
      }}
    %z = stablehlo.slice %r#1 [0:1] : ({t}) -> tensor<1xf32>
    %o = stablehlo.reshape %z : (tensor<1xf32>) -> tensor<f32>
    return %o : tensor<f32>
  }}
}}
"""


def _dot_module(d: int, steps: int, dtype: str) -> str:
    t = f"tensor<{d}x{d}x{dtype}>"
    return f"""
module @purejit_calibrate_dot attributes {{mhlo.num_replicas = 1 : i32}} {{
  func.func public @main() -> tensor<{dtype}> {{
    %one = stablehlo.constant dense<1.0> : tensor<{dtype}>
    %x = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<{dtype}>) -> {t}
    %w0 = stablehlo.constant dense<{1.0 / d}> : tensor<{dtype}>
    %w = stablehlo.broadcast_in_dim %w0, dims = [] : (tensor<{dtype}>) -> {t}
    %k0 = stablehlo.constant dense<0> : tensor<i32>
    %r:3 = stablehlo.while(%i = %k0, %b = %x, %v = %w) : tensor<i32>, {t}, {t}
      cond {{
        %lim = stablehlo.constant dense<{steps}> : tensor<i32>
        %c = stablehlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      }} do {{
        %s = stablehlo.constant dense<1> : tensor<i32>
        %j = stablehlo.add %i, %s : tensor<i32>
        %m = stablehlo.dot_general %b, %v, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}
        stablehlo.return %j, %m, %v : tensor<i32>, {t}, {t}
      }}
    %z = stablehlo.slice %r#1 [0:1, 0:1] : ({t}) -> tensor<1x1x{dtype}>
    %o = stablehlo.reshape %z : (tensor<1x1x{dtype}>) -> tensor<{dtype}>
    return %o : tensor<{dtype}>
  }}
}}
"""


def _gather_module(n: int, elems: int, steps: int) -> str:
    """An all-gather of `elems` per device over all `n` devices per step: the plain
    collective's own rate (NCCL drives every link of a switch at once, a ring step one)."""
    t, g = f"tensor<{elems}xf32>", f"tensor<{n * elems}xf32>"
    groups = ", ".join(str(k) for k in range(n))
    return f"""
module @purejit_calibrate_gather attributes {{mhlo.num_replicas = {n} : i32}} {{
  func.func public @main() -> tensor<f32> {{
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %x = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> {t}
    %k0 = stablehlo.constant dense<0> : tensor<i32>
    %r:2 = stablehlo.while(%i = %k0, %b = %x) : tensor<i32>, {t}
      cond {{
        %lim = stablehlo.constant dense<{steps}> : tensor<i32>
        %c = stablehlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      }} do {{
        %s = stablehlo.constant dense<1> : tensor<i32>
        %j = stablehlo.add %i, %s : tensor<i32>
        %a = "stablehlo.all_gather"(%b) {{
          all_gather_dim = 0 : i64, replica_groups = dense<[[{groups}]]> : tensor<1x{n}xi64>
        }} : ({t}) -> {g}
        %h = stablehlo.slice %a [0:{elems}] : ({g}) -> {t}
        stablehlo.return %j, %h : tensor<i32>, {t}
      }}
    %z = stablehlo.slice %r#1 [0:1] : ({t}) -> tensor<1xf32>
    %o = stablehlo.reshape %z : (tensor<1xf32>) -> tensor<f32>
    return %o : tensor<f32>
  }}
}}
"""


def _both_module(n: int, elems: int, d: int, steps: int, dtype: str) -> str:
    """A ring transfer and a matmul in each step, independent of each other: how much of
    the shorter one hides behind the longer is what a ring step can overlap. The result
    reads both chains, so XLA cannot drop the matmul as a loop value nothing reads (with
    the ring's chain alone returned, 4 H200s measured an overlap of 1.0 while the real
    rings hid about a third)."""
    pairs = ", ".join(f"[{k}, {(k + 1) % n}]" for k in range(n))
    t, m = f"tensor<{elems}xf32>", f"tensor<{d}x{d}x{dtype}>"
    return f"""
module @purejit_calibrate_overlap attributes {{mhlo.num_replicas = {n} : i32}} {{
  func.func public @main() -> tensor<f32> {{
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %x = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> {t}
    %one_m = stablehlo.constant dense<1.0> : tensor<{dtype}>
    %a = stablehlo.broadcast_in_dim %one_m, dims = [] : (tensor<{dtype}>) -> {m}
    %w0 = stablehlo.constant dense<{1.0 / d}> : tensor<{dtype}>
    %w = stablehlo.broadcast_in_dim %w0, dims = [] : (tensor<{dtype}>) -> {m}
    %k0 = stablehlo.constant dense<0> : tensor<i32>
    %r:4 = stablehlo.while(%i = %k0, %b = %x, %u = %a, %v = %w) : tensor<i32>, {t}, {m}, {m}
      cond {{
        %lim = stablehlo.constant dense<{steps}> : tensor<i32>
        %c = stablehlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      }} do {{
        %s = stablehlo.constant dense<1> : tensor<i32>
        %j = stablehlo.add %i, %s : tensor<i32>
        %p = "stablehlo.collective_permute"(%b) {{
          source_target_pairs = dense<[{pairs}]> : tensor<{n}x2xi64>
        }} : ({t}) -> {t}
        %q = stablehlo.dot_general %u, %v, contracting_dims = [1] x [0] : ({m}, {m}) -> {m}
        stablehlo.return %j, %p, %q, %v : tensor<i32>, {t}, {m}, {m}
      }}
    %z = stablehlo.slice %r#1 [0:1] : ({t}) -> tensor<1xf32>
    %o = stablehlo.reshape %z : (tensor<1xf32>) -> tensor<f32>
    %zq = stablehlo.slice %r#2 [0:1, 0:1] : ({m}) -> tensor<1x1x{dtype}>
    %oq = stablehlo.reshape %zq : (tensor<1x1x{dtype}>) -> tensor<{dtype}>
    %fq = stablehlo.convert %oq : (tensor<{dtype}>) -> tensor<f32>
    %sum = stablehlo.add %o, %fq : tensor<f32>
    return %sum : tensor<f32>
  }}
}}
"""


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
