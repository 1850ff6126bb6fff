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
- a tensor-parallel MLP's two rings as `collective_matmul` emits them (the all-gather ring
  into a zeroed output, the reduce-scatter ring from it: n - 1 steps of transfer + multiply
  + dynamic_update_slice or add each) and the all-gather, matmuls and reduce-scatter they
  replace: what each costs beyond what the figures above predict is the fixed cost of a
  ring step (launches, the updates, the loops) and of the plain program, which decide the
  small shapes.

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
# "ring": the shard (rows x k) and matrices (k x f, f x k) of the MLP programs. On GPUs a ring
# step moves and multiplies what one of the T=16384, D=2048, F=8192 MLP does on 2 devices
# (32 MB, 137 GFLOP), where the decision at n = 2 is close, and every ring matmul is the rate
# program's own, so XLA autotunes it once for all
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


def _index(pos: str, k: str, base: int, n: int, rows: int, tag: str) -> list[str]:
    """Lines computing %{tag} = ((pos + base - k) mod n) * rows, as the pass does."""
    s32 = "tensor<i32>"
    return [
        f"%{tag}b = stablehlo.constant dense<{base}> : {s32}",
        f"%{tag}n = stablehlo.constant dense<{n}> : {s32}",
        f"%{tag}r = stablehlo.constant dense<{rows}> : {s32}",
        f"%{tag}s = stablehlo.subtract %{tag}b, %{k} : {s32}",
        f"%{tag}a = stablehlo.add %{pos}, %{tag}s : {s32}",
        f"%{tag}m = stablehlo.remainder %{tag}a, %{tag}n : {s32}",
        f"%{tag} = stablehlo.multiply %{tag}m, %{tag}r : {s32}",
    ]


def _mlp_ring_module(n: int, rows: int, k: int, f: int, steps: int, dtype: str) -> str:
    """The two rings `collective_matmul` makes of a tensor-parallel MLP, `steps` times.

    The all-gather ring: zero an output of n blocks, run n - 1 steps in a loop (pass the held
    `rows x k` shard on with collective_permute, multiply it by the `k x f` matrix,
    dynamic_update_slice the product into block (p - step) mod n), multiply and place the
    last shard after the loop. The reduce-scatter ring on that output: multiply one block by
    the `f x k` matrix, then n - 1 steps of collective_permute of the partial sum plus the
    next block's product. Its result is the next repetition's shard. What this costs beyond
    its transfers and multiplies (launches, the loops, the updates, the zeroing) is what
    real rings pay on top of bandwidth and matmul rate; with n = 2 each ring is one step, as
    in the pass. `replica_id` stands for the pass's position in the replica group."""
    x, w1, w2 = (f"tensor<{r}x{c}x{dtype}>" for r, c in ((rows, k), (k, f), (f, k)))
    part, y, s32 = f"tensor<{rows}x{f}x{dtype}>", f"tensor<{n * rows}x{f}x{dtype}>", "tensor<i32>"
    dot1 = f"contracting_dims = [1] x [0] : ({x}, {w1}) -> {part}"
    dot2 = f"contracting_dims = [1] x [0] : ({part}, {w2}) -> {x}"
    dus = f"({y}, {part}, {s32}, {s32}) -> {y}"
    dsl = f"{{slice_sizes = array<i64: {rows}, {f}>}} : ({y}, {s32}, {s32}) -> {part}"
    gather_carry, scatter_carry = [s32, x, y, w1, s32], [s32, x, y, w2, s32]
    lines = [
        f"%zo = stablehlo.constant dense<0.0> : tensor<{dtype}>",
        f"%zy = stablehlo.broadcast_in_dim %zo, dims = [] : (tensor<{dtype}>) -> {y}",
        "%rid = stablehlo.replica_id : tensor<ui32>",
        f"%pos = stablehlo.convert %rid : (tensor<ui32>) -> {s32}",
        f"%cz = stablehlo.constant dense<0> : {s32}",
        f"%cu = stablehlo.constant dense<1> : {s32}",
        "%gr:5 = stablehlo.while(%gk = %cz, %gx = %b, %go = %zy, %gw = %w1, %gp = %pos) : "
        + ", ".join(gather_carry),
        "  cond {",
        f"    %gl = stablehlo.constant dense<{n - 1}> : {s32}",
        f"    %gc = stablehlo.compare LT, %gk, %gl : ({s32}, {s32}) -> tensor<i1>",
        "    stablehlo.return %gc : tensor<i1>",
        "  } do {",
        f"    %gj = stablehlo.add %gk, %cu : {s32}",
        "    " + _permute(n, "gx", x, "gn"),
        f"    %gd = stablehlo.dot_general %gx, %gw, {dot1}",
        *("    " + line for line in _index("gp", "gk", n, n, rows, "gi")),
        f'    %go2 = "stablehlo.dynamic_update_slice"(%go, %gd, %gi, %cz) : {dus}',
        "    stablehlo.return %gj, %gn, %go2, %gw, %gp : " + ", ".join(gather_carry),
        "  }",
        f"%ld = stablehlo.dot_general %gr#1, %w1, {dot1}",
        f"%lk = stablehlo.constant dense<{n - 1}> : {s32}",
        *_index("pos", "lk", n, n, rows, "li"),
        f'%y = "stablehlo.dynamic_update_slice"(%gr#2, %ld, %li, %cz) : {dus}',
        *_index("pos", "cz", 2 * n - 1, n, rows, "fi"),
        f'%fp = "stablehlo.dynamic_slice"(%y, %fi, %cz) {dsl}',
        f"%fa = stablehlo.dot_general %fp, %w2, {dot2}",
        "%sr:5 = stablehlo.while(%sk = %cu, %sa = %fa, %sy = %y, %sw = %w2, %sp = %pos) : "
        + ", ".join(scatter_carry),
        "  cond {",
        f"    %sl = stablehlo.constant dense<{n}> : {s32}",
        f"    %sc = stablehlo.compare LT, %sk, %sl : ({s32}, {s32}) -> tensor<i1>",
        "    stablehlo.return %sc : tensor<i1>",
        "  } do {",
        f"    %sj = stablehlo.add %sk, %cu : {s32}",
        "    " + _permute(n, "sa", x, "sm"),
        *("    " + line for line in _index("sp", "sk", 2 * n - 1, n, rows, "si")),
        f'    %spc = "stablehlo.dynamic_slice"(%sy, %si, %cz) {dsl}',
        f"    %sd = stablehlo.dot_general %spc, %sw, {dot2}",
        f"    %sa2 = stablehlo.add %sm, %sd : {x}",
        "    stablehlo.return %sj, %sa2, %sy, %sw, %sp : " + ", ".join(scatter_carry),
        "  }",
    ]
    carries = [("b", 1.0, dtype, x), ("w1", 1.0 / k, dtype, w1), ("w2", 1.0 / (f * n), dtype, w2)]
    return _loop_module("mlp_ring", n, steps, carries, "\n".join(lines), ["sr#1", "w1", "w2"], [0])


def _mlp_plain_module(n: int, rows: int, k: int, f: int, steps: int, dtype: str) -> str:
    """What the rings replace, `steps` times: all-gather the `rows x k` shards, multiply by
    the `k x f` matrix, multiply by the `f x k` matrix, reduce-scatter the sum; its result is
    the next repetition's shard."""
    x, w1, w2 = (f"tensor<{r}x{c}x{dtype}>" for r, c in ((rows, k), (k, f), (f, k)))
    g, y = f"tensor<{n * rows}x{k}x{dtype}>", f"tensor<{n * rows}x{f}x{dtype}>"
    groups = f"replica_groups = dense<[[{', '.join(map(str, range(n)))}]]> : tensor<1x{n}xi64>"
    e = f"tensor<{dtype}>"
    body = f"""
%a = "stablehlo.all_gather"(%b) {{all_gather_dim = 0 : i64, {groups}}} : ({x}) -> {g}
%h = stablehlo.dot_general %a, %w1, contracting_dims = [1] x [0] : ({g}, {w1}) -> {y}
%o = stablehlo.dot_general %h, %w2, contracting_dims = [1] x [0] : ({y}, {w2}) -> {g}
%z = "stablehlo.reduce_scatter"(%o) ({{
  ^bb0(%ra: {e}, %rb: {e}):
    %rs = stablehlo.add %ra, %rb : {e}
    stablehlo.return %rs : {e}
}}) {{scatter_dimension = 0 : i64, {groups}}} : ({g}) -> {x}
"""
    carries = [("b", 1.0, dtype, x), ("w1", 1.0 / k, dtype, w1), ("w2", 1.0 / (f * n), dtype, w2)]
    return _loop_module("mlp_plain", n, steps, carries, body, ["z", "w1", "w2"], [0])


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
        "ring": (_mlp_ring_module(n, rows, k, f, size["ring_steps"], dtype), devices,
                 size["ring_steps"]),
        "plain": (_mlp_plain_module(n, rows, k, f, size["ring_steps"], dtype), devices,
                  size["ring_steps"]),
    }  # fmt: skip


def _compile_all(progs: dict) -> dict:
    """Every program compiled, on helper threads (compiling releases the GIL). The matmul
    rate program compiles first, before the other matmul programs start: XLA autotunes a
    GPU matmul by running candidates on the device, and the rings' matmuls have its shape,
    so they reuse its result instead of autotuning at the same time."""
    first = [name for name, (text, _, _) in progs.items() if "dot_general" not in text]
    with ThreadPoolExecutor(len(progs)) as pool:
        futures = {name: pool.submit(_compile, *progs[name][:2]) for name in first}
        exes = {"dot": _compile(*progs["dot"][:2])}
        futures.update(
            {name: pool.submit(_compile, *progs[name][:2]) for name in progs
             if name not in futures and name not in exes}
        )  # fmt: skip
        exes.update({name: fut.result() for name, fut in futures.items()})
    return exes


def measure(devices: Sequence) -> dict:
    """Time the rings and the matmul on `devices` (every process of a job must call this).

    Returns:
        `{"link_bytes_per_s", "flops_per_s", "collective_bytes_per_s", "overlap",
        "step_latency_s", "plain_latency_s", "transfer_latency_s", "ring_s", "plain_s",
        "seconds"}`: `collective_bytes_per_s` is the rate at which a plain all-gather moves a
        device's (n - 1) / n share of the result; `overlap` (0 to 1) is the share of the
        shorter of a large ring transfer and a matmul that hides behind the longer when one
        step runs both; `ring_s` and `plain_s` are the times of an MLP's two rings as the
        pass emits them and of the collectives and matmuls they replace, and
        `step_latency_s` and `plain_latency_s` what these cost beyond the cost model's terms
        of bytes and flops (`ring_step_latency`, `plain_latency`); `transfer_latency_s` is
        one small ring
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
    """The fixed cost per step that makes the cost model's estimate of the MLP's two rings
    equal `ring_s`, their measured time (`rows x k` shards, `k x f` and `f x k` matrices, `n`
    devices). Both rings move a `rows x k` block and multiply `rows x k x f` per step; the
    model prices each as one block's multiply and n - 1 steps of
    `max(a, b) + (1 - overlap) * min(a, b) + step_latency` (a: the block's transfer at the
    link rate, b: its multiply at the matmul rate)."""
    a = itemsize * rows * k / link
    b = 2 * rows * k * f / flops
    return (ring_s / 2 - b) / (n - 1) - (max(a, b) + (1.0 - overlap) * min(a, b))


def plain_latency(plain_s, n, rows, k, f, itemsize, collective, flops) -> float:
    """The fixed cost per collective + matmul that makes the cost model's estimate of the
    plain MLP (all-gather, two matmuls, reduce-scatter) equal `plain_s`, its measured time:
    the model prices each collective's `(n - 1) rows x k` received or sent block at the
    collective's rate and each matmul at the matmul rate."""
    t_coll = itemsize * rows * k * (n - 1) / collective
    return plain_s / 2 - t_coll - 2 * n * rows * k * f / flops


def device_key(devices: Sequence) -> tuple[str, int]:
    """(device kind, device count): what a calibration is kept under."""
    return str(devices[0].device_kind), len(devices)
