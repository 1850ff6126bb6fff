"""Measure what the collective-matmul cost model needs, on the devices at hand.

Timed StableHLO programs, each a `while` loop of `steps` repetitions so that one dispatch
is spread over many steps:

- a ring transfer (`collective_permute` to the next device) of two sizes over every device:
  the time per step of the small one is a collective's fixed cost (transfer set-up and
  kernel launch), the slope between the two sizes is one link's bandwidth;
- a square matmul on one device: its matmul rate;
- an all-gather of the large size: the plain collective's rate (over a switch it uses every
  link at once, where a ring step uses one);
- the large ring transfer and the matmul in one step: how much of one hides behind the other
  (a ring step's transfer and multiply only save time where they run at once);
- an all-gather ring as `collective_matmul` emits it (zeroed output, n - 1 steps of
  transfer + multiply + dynamic_update_slice, the last multiply): what it costs beyond what
  the figures above predict is each ring step's fixed cost (launches, the update, the loop),
  which decides the small shapes.

The programs are per-device (replicas, no partitioner), so they need no inputs: the buffers
are made inside the program before the loop. With several processes every process must run
`measure` (the ring crosses process boundaries); each gets its own figures.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

# elements (f32) per device moved by the small and the large ring transfer, matmul side;
# "ring": the shard (rows x k) and matrix (k x f) of the ring and plain matmul programs. On
# GPUs a ring step moves and multiplies what one of the T=16384, D=2048, F=8192 MLP does on
# 2 devices (32 MB, 137 GFLOP), where the decision at n = 2 is close, and its matmul is the
# rate program's own, so XLA autotunes it once for both
_CPU = {"small": 256, "large": 1 << 18, "dot": 256, "steps": 8, "dot_steps": 4,
        "ring": (64, 256, 256), "ring_steps": 2}  # fmt: skip
_GPU = {"small": 256, "large": 1 << 23, "dot": 4096, "steps": 20, "dot_steps": 20,
        "ring": (4096, 4096, 4096), "ring_steps": 10}  # fmt: skip


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
    # each fill is offset by 0 * replica_id: a value XLA cannot fold, so it keeps a carry
    # that never changes (a matmul's other operand) as a buffer instead of sinking a constant
    # broadcast into the loop, which would add a fill kernel to every step
    init = [
        "%rid0 = stablehlo.replica_id : tensor<ui32>",
        "%ridf = stablehlo.convert %rid0 : (tensor<ui32>) -> tensor<f32>",
        "%zf = stablehlo.constant dense<0.0> : tensor<f32>",
        "%off = stablehlo.multiply %ridf, %zf : tensor<f32>",
    ]
    types = []
    for k, (var, fill, elt, ty) in enumerate(carries):
        init += [
            f"%f{k} = stablehlo.constant dense<{fill}> : tensor<{elt}>",
            f"%v{k} = stablehlo.convert %off : (tensor<f32>) -> tensor<{elt}>",
            f"%g{k} = stablehlo.add %f{k}, %v{k} : tensor<{elt}>",
            f"%i{k} = stablehlo.broadcast_in_dim %g{k}, dims = [] : (tensor<{elt}>) -> {ty}",
        ]
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


def _matmul_ring_module(n: int, rows: int, k: int, f: int, steps: int, dtype: str) -> str:
    """The all-gather ring that `collective_matmul` emits, `steps` times. Each repetition
    zeroes an output of n blocks, runs n - 1 steps in an inner loop (pass the held shard on
    with collective_permute, multiply it, dynamic_update_slice the product into block
    (p - step) mod n) and multiplies and places the last shard after the loop. What this
    costs beyond its transfers and multiplies (the zeroing, launches, the loop, the updates)
    is what a real ring pays on top of bandwidth and matmul rate; with n = 2 the ring is a
    single step, as in the pass. The programs are replicas, so `replica_id` stands for the
    pass's position in the replica group."""
    x, w = f"tensor<{rows}x{k}x{dtype}>", f"tensor<{k}x{f}x{dtype}>"
    part, out, s32 = f"tensor<{rows}x{f}x{dtype}>", f"tensor<{n * rows}x{f}x{dtype}>", "tensor<i32>"
    dot = f"contracting_dims = [1] x [0] : ({x}, {w}) -> {part}"
    dus = f"({out}, {part}, {s32}, {s32}) -> {out}"
    inner = [s32, x, out, w, s32]
    body = f"""
%zo = stablehlo.constant dense<0.0> : tensor<{dtype}>
%zout = stablehlo.broadcast_in_dim %zo, dims = [] : (tensor<{dtype}>) -> {out}
%qrid = stablehlo.replica_id : tensor<ui32>
%pos = stablehlo.convert %qrid : (tensor<ui32>) -> {s32}
%c0 = stablehlo.constant dense<0> : {s32}
%q:5 = stablehlo.while(%qk = %c0, %qx = %b, %qo = %zout, %qw = %w, %qp = %pos) : {", ".join(inner)}
  cond {{
    %ql = stablehlo.constant dense<{n - 1}> : {s32}
    %qc = stablehlo.compare LT, %qk, %ql : ({s32}, {s32}) -> tensor<i1>
    stablehlo.return %qc : tensor<i1>
  }} do {{
    %q1 = stablehlo.constant dense<1> : {s32}
    %qj = stablehlo.add %qk, %q1 : {s32}
    {_permute(n, "qx", x, "qn")}
    %qd = stablehlo.dot_general %qx, %qw, {dot}
    %qn2 = stablehlo.constant dense<{n}> : {s32}
    %qr = stablehlo.constant dense<{rows}> : {s32}
    %qz = stablehlo.constant dense<0> : {s32}
    %qs = stablehlo.subtract %qn2, %qk : {s32}
    %qa = stablehlo.add %qp, %qs : {s32}
    %qm = stablehlo.remainder %qa, %qn2 : {s32}
    %qb = stablehlo.multiply %qm, %qr : {s32}
    %qo2 = "stablehlo.dynamic_update_slice"(%qo, %qd, %qb, %qz) : {dus}
    stablehlo.return %qj, %qn, %qo2, %qw, %qp : {", ".join(inner)}
  }}
%ld = stablehlo.dot_general %q#1, %w, {dot}
%ln = stablehlo.constant dense<{n}> : {s32}
%lr = stablehlo.constant dense<{rows}> : {s32}
%l1 = stablehlo.constant dense<1> : {s32}
%la = stablehlo.add %pos, %l1 : {s32}
%lm = stablehlo.remainder %la, %ln : {s32}
%lb = stablehlo.multiply %lm, %lr : {s32}
%ring = "stablehlo.dynamic_update_slice"(%q#2, %ld, %lb, %c0) : {dus}
"""
    carries = [("b", 1.0, dtype, x), ("w", 1.0 / k, dtype, w), ("acc", 0.0, dtype, out)]
    return _loop_module("matmul_ring", n, steps, carries, body, ["q#1", "w", "ring"], [0, 2])


def _matmul_plain_module(n: int, rows: int, k: int, f: int, steps: int, dtype: str) -> str:
    """What the ring replaces, `steps` times: all-gather the `rows x k` shards, multiply the
    gathered operand by the `k x f` matrix. The next shard is the gathered operand's first
    block, so no step can be hoisted out of the loop."""
    x, g = f"tensor<{rows}x{k}x{dtype}>", f"tensor<{n * rows}x{k}x{dtype}>"
    w, y = f"tensor<{k}x{f}x{dtype}>", f"tensor<{n * rows}x{f}x{dtype}>"
    groups = ", ".join(str(i) for i in range(n))
    body = (
        f'%a = "stablehlo.all_gather"(%b) {{all_gather_dim = 0 : i64, '
        f"replica_groups = dense<[[{groups}]]> : tensor<1x{n}xi64>}} : ({x}) -> {g}\n"
        f"%y2 = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : ({g}, {w}) -> {y}\n"
        f"%h = stablehlo.slice %a [0:{rows}, 0:{k}] : ({g}) -> {x}"
    )
    carries = [("b", 1.0, dtype, x), ("w", 1.0 / k, dtype, w), ("y", 0.0, dtype, y)]
    return _loop_module("matmul_plain", n, steps, carries, body, ["h", "w", "y2"], [0, 2])


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


def _programs(devices: list, size: dict, gpu: bool) -> dict:
    """name -> (StableHLO text, devices, steps per run) of every timed program, in the
    order they run (the same in every process: all but "dot" are collectives)."""
    n, steps, dsteps = len(devices), size["steps"], size["dot_steps"]
    dtype = "bf16" if gpu else "f32"
    local = [d for d in devices if d.process_index == devices[0].client.process_index()]
    progs = {"dot": (_dot_module(size["dot"], dsteps, dtype), local[:1], dsteps)}
    if n < 2:
        return progs
    rows, k, f = size["ring"]
    return {
        "small": (_ring_module(n, size["small"], steps), devices, steps),
        "large": (_ring_module(n, size["large"], steps), devices, steps),
        **progs,
        "gather": (_gather_module(n, size["large"], steps), devices, steps),
        "overlap": (_both_module(n, size["large"], size["dot"], dsteps, dtype), devices, dsteps),
        "ring": (_matmul_ring_module(n, rows, k, f, size["ring_steps"], dtype), devices,
                 size["ring_steps"]),
        "plain": (_matmul_plain_module(n, rows, k, f, size["ring_steps"], dtype), devices,
                  size["ring_steps"]),
    }  # fmt: skip


def _compile_all(progs: dict) -> dict:
    """Every program compiled. The ones without a matmul compile on a helper thread while
    this one compiles the matmul programs one at a time: compiling releases the GIL, and
    XLA autotunes a GPU matmul by running candidates on the device, which two matmul
    compiles at once would disturb."""
    plain = [name for name, (text, _, _) in progs.items() if "dot_general" not in text]
    with ThreadPoolExecutor(1) as pool:
        later = {name: pool.submit(_compile, *progs[name][:2]) for name in plain}
        exes = {
            name: _compile(t, devs) for name, (t, devs, _) in progs.items() if name not in later
        }
        exes.update({name: fut.result() for name, fut in later.items()})
    return exes


def measure(devices: Sequence) -> dict:
    """Time the rings and the matmul on `devices` (every process of a job must call this).

    Returns:
        `{"link_bytes_per_s", "flops_per_s", "collective_bytes_per_s", "overlap",
        "step_latency_s", "plain_latency_s", "transfer_latency_s", "ring_s", "plain_s",
        "seconds"}`: `collective_bytes_per_s` is the rate at which a plain all-gather moves a
        device's (n - 1) / n share of the result; `overlap` (0 to 1) is the share of the
        shorter of a large ring transfer and a matmul that hides behind the longer when one
        step runs both; `ring_s` and `plain_s` are the times of an all-gather ring as the
        pass emits it and of the all-gather + matmul it replaces, and `step_latency_s` and
        `plain_latency_s` what they cost beyond the cost model's terms of bytes and flops
        (`ring_step_latency`, `plain_latency`); `transfer_latency_s` is one small ring
        transfer's time; `seconds` is how long the measurement took, compiles included.
    """
    t_start = time.perf_counter()
    devices = list(devices)
    n = len(devices)
    gpu = devices[0].platform != "cpu"
    size = _GPU if gpu else _CPU
    progs = _programs(devices, size, gpu)
    exes = _compile_all(progs)
    t = {name: _best_seconds(exes[name], 3) / progs[name][2] for name in progs}
    d = size["dot"]
    flops = 2 * d**3 / t["dot"]
    out = {"link_bytes_per_s": float("inf"), "flops_per_s": flops, "collective_bytes_per_s":
           float("inf"), "overlap": 1.0, "step_latency_s": 0.0, "plain_latency_s": 0.0,
           "transfer_latency_s": 0.0, "ring_s": 0.0, "plain_s": 0.0}  # fmt: skip
    if n > 1:  # one device: no link to measure; a ring never forms on one device anyway
        latency = t["small"]
        link = 4 * (size["large"] - size["small"]) / max(t["large"] - t["small"], 1e-9)
        collective = 4 * size["large"] * (n - 1) / max(t["gather"] - latency, 1e-9)
        hidden = t["large"] + t["dot"] - t["overlap"]
        overlap = min(max(hidden / min(t["large"], t["dot"]), 0.0), 1.0)
        shape = (n, *size["ring"], 2 if gpu else 4)
        out.update(
            link_bytes_per_s=link,
            collective_bytes_per_s=collective,
            overlap=overlap,
            step_latency_s=max(ring_step_latency(t["ring"], *shape, link, flops, overlap), 0.0),
            plain_latency_s=max(plain_latency(t["plain"], *shape, collective, flops), 0.0),
            transfer_latency_s=latency,
            ring_s=t["ring"],
            plain_s=t["plain"],
        )
    out = {key: float(v) for key, v in out.items()}
    out["seconds"] = time.perf_counter() - t_start
    return out


def ring_step_latency(ring_s, n, rows, k, f, itemsize, link, flops, overlap) -> float:
    """The fixed cost per step that makes the cost model's ring estimate equal `ring_s`, the
    measured time of an all-gather ring of `rows x k` shards times a `k x f` matrix on `n`
    devices. The model prices that ring as one shard's multiply and n - 1 steps of
    `max(a, b) + (1 - overlap) * min(a, b) + step_latency` (a: a shard's transfer at the
    link rate, b: its multiply at the matmul rate)."""
    a = itemsize * rows * k / link
    b = 2 * rows * k * f / flops
    return (ring_s - b) / (n - 1) - (max(a, b) + (1.0 - overlap) * min(a, b))


def plain_latency(plain_s, n, rows, k, f, itemsize, collective, flops) -> float:
    """The fixed cost that makes the cost model's plain estimate equal `plain_s`, the
    measured time of an all-gather of `rows x k` shards then the matmul by a `k x f` matrix:
    the model prices it as the gathered bytes at the collective's rate plus the matmul."""
    return plain_s - itemsize * rows * k * (n - 1) / collective - 2 * n * rows * k * f / flops


def device_key(devices: Sequence) -> tuple[str, int]:
    """(device kind, device count): what a calibration is kept under."""
    return str(devices[0].device_kind), len(devices)
