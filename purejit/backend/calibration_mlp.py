"""The tensor-parallel MLP as a user's shard_map program runs it, for the "anchor" calibration.

`python -m bench.tp_mlp` measured the MLP's rings 0.09 ms faster than the plain program at
T=16384, D=2048, F=8192 on 2 H200s, while the calibration's replica programs of the same
bytes and flops (session 12's, each MLP a repetition of an outer `while` loop) had the rings
0.10-0.13 ms slower in every process (`docs/benchmarks/multigpu_s12.md`). The programs here
are what purejit compiles for such a layer instead: an SPMD module (`num_partitions` = n, the
body in a Shardy `sdy.manual_computation`, `partition_id` for the ring position, collectives
with channel handles and global device ids), the layer `x -> all_gather -> @ w1 -> tanh ->
@ w2 -> reduce_scatter` written out `reps` times at the top level (each repetition's result is
the next one's shard: no outer loop around the rings), and the rings as `collective_matmul`
emits them (the all-gather ring's loop of n - 1 steps into a zeroed output, the last shard's
product after it; the reduce-scatter ring's first block, then its loop of n - 1 steps).
"""

from __future__ import annotations


def _permute(n: int, src: str, t: str, out: str, channel: int) -> str:
    pairs = ", ".join(f"[{k}, {(k + 1) % n}]" for k in range(n))
    return (
        f'%{out} = "stablehlo.collective_permute"(%{src}) {{channel_handle = '
        f"#stablehlo.channel_handle<handle = {channel}, type = 1>, "
        f"source_target_pairs = dense<[{pairs}]> : tensor<{n}x2xi64>}} : ({t}) -> {t}"
    )


def _start(tag: str, pos: str, k: str, base: int, n: int, rows: int) -> list[str]:
    """%{tag} = ((pos + base - k) mod n) * rows, the pass's block start."""
    s = "tensor<i32>"
    return [
        f"%{tag}b = stablehlo.constant dense<{base}> : {s}",
        f"%{tag}n = stablehlo.constant dense<{n}> : {s}",
        f"%{tag}r = stablehlo.constant dense<{rows}> : {s}",
        f"%{tag}s = stablehlo.subtract %{tag}b, %{k} : {s}",
        f"%{tag}a = stablehlo.add %{pos}, %{tag}s : {s}",
        f"%{tag}m = stablehlo.remainder %{tag}a, %{tag}n : {s}",
        f"%{tag} = stablehlo.multiply %{tag}m, %{tag}r : {s}",
    ]


class _Text:
    """Lines of one program, with fresh channel handles."""

    def __init__(self):
        self.lines: list[str] = []
        self.channel = 0

    def next_channel(self) -> int:
        self.channel += 1
        return self.channel


def _ring_layer(p: _Text, r: int, x: str, n: int, rows: int, k: int, f: int, dtype: str) -> str:
    """One layer as the pass's two rings; returns the name of the next shard."""
    tx, tp = f"tensor<{rows}x{k}x{dtype}>", f"tensor<{rows}x{f}x{dtype}>"
    ty, s = f"tensor<{n * rows}x{f}x{dtype}>", "tensor<i32>"
    dot1 = f"contracting_dims = [1] x [0] : ({tx}, tensor<{k}x{f}x{dtype}>) -> {tp}"
    dot2 = f"contracting_dims = [1] x [0] : ({tp}, tensor<{f}x{k}x{dtype}>) -> {tx}"
    dus = f"({ty}, {tp}, {s}, {s}) -> {ty}"
    dsl = f"{{slice_sizes = array<i64: {rows}, {f}>}} : ({ty}, {s}, {s}) -> {tp}"
    q = f"r{r}"
    gather_types, scatter_types = f"{tx}, {ty}, {s}", f"{tx}, {s}"
    p.lines += [
        f"%{q}zy = stablehlo.broadcast_in_dim %zo, dims = [] : (tensor<{dtype}>) -> {ty}",
        f"%{q}g:3 = stablehlo.while(%{q}gx = %{x}, %{q}go = %{q}zy, %{q}gk = %cz) : "
        + gather_types,
        "  cond {",
        f"    %{q}gl = stablehlo.constant dense<{n - 1}> : {s}",
        f"    %{q}gc = stablehlo.compare LT, %{q}gk, %{q}gl : ({s}, {s}) -> tensor<i1>",
        f"    stablehlo.return %{q}gc : tensor<i1>",
        "  } do {",
        "    " + _permute(n, f"{q}gx", tx, f"{q}gn", p.next_channel()),
        f"    %{q}gd = stablehlo.dot_general %{q}gx, %w1, {dot1}",
        *("    " + line for line in _start(f"{q}gi", "pos", f"{q}gk", n, n, rows)),
        f'    %{q}go2 = "stablehlo.dynamic_update_slice"(%{q}go, %{q}gd, %{q}gi, %cz) : {dus}',
        f"    %{q}gj = stablehlo.add %{q}gk, %cu : {s}",
        f"    stablehlo.return %{q}gn, %{q}go2, %{q}gj : " + gather_types,
        "  }",
        f"%{q}ld = stablehlo.dot_general %{q}g#0, %w1, {dot1}",
        f"%{q}lk = stablehlo.constant dense<{n - 1}> : {s}",
        *_start(f"{q}li", "pos", f"{q}lk", n, n, rows),
        f'%{q}y = "stablehlo.dynamic_update_slice"(%{q}g#1, %{q}ld, %{q}li, %cz) : {dus}',
        f"%{q}h = stablehlo.tanh %{q}y : {ty}",
        *_start(f"{q}fi", "pos", "cz", 2 * n - 1, n, rows),
        f'%{q}fp = "stablehlo.dynamic_slice"(%{q}h, %{q}fi, %cz) {dsl}',
        f"%{q}fa = stablehlo.dot_general %{q}fp, %w2, {dot2}",
        f"%{q}s:2 = stablehlo.while(%{q}sa = %{q}fa, %{q}sk = %cu) : " + scatter_types,
        "  cond {",
        f"    %{q}sl = stablehlo.constant dense<{n}> : {s}",
        f"    %{q}sc = stablehlo.compare LT, %{q}sk, %{q}sl : ({s}, {s}) -> tensor<i1>",
        f"    stablehlo.return %{q}sc : tensor<i1>",
        "  } do {",
        "    " + _permute(n, f"{q}sa", tx, f"{q}sm", p.next_channel()),
        *("    " + line for line in _start(f"{q}si", "pos", f"{q}sk", 2 * n - 1, n, rows)),
        f'    %{q}spc = "stablehlo.dynamic_slice"(%{q}h, %{q}si, %cz) {dsl}',
        f"    %{q}sd = stablehlo.dot_general %{q}spc, %w2, {dot2}",
        f"    %{q}sa2 = stablehlo.add %{q}sm, %{q}sd : {tx}",
        f"    %{q}sj = stablehlo.add %{q}sk, %cu : {s}",
        f"    stablehlo.return %{q}sa2, %{q}sj : " + scatter_types,
        "  }",
    ]
    return f"{q}s#0"


def _plain_layer(p: _Text, r: int, x: str, n: int, rows: int, k: int, f: int, dtype: str) -> str:
    """One layer as written: all-gather, matmul, tanh, matmul, reduce-scatter."""
    tx, tg = f"tensor<{rows}x{k}x{dtype}>", f"tensor<{n * rows}x{k}x{dtype}>"
    ty, e = f"tensor<{n * rows}x{f}x{dtype}>", f"tensor<{dtype}>"
    groups = f"replica_groups = dense<[[{', '.join(map(str, range(n)))}]]> : tensor<1x{n}xi64>"
    q = f"r{r}"
    p.lines += [
        f'%{q}a = "stablehlo.all_gather"(%{x}) {{all_gather_dim = 0 : i64, channel_handle = '
        f"#stablehlo.channel_handle<handle = {p.next_channel()}, type = 1>, {groups}, "
        f"use_global_device_ids}} : ({tx}) -> {tg}",
        f"%{q}d = stablehlo.dot_general %{q}a, %w1, contracting_dims = [1] x [0] : "
        f"({tg}, tensor<{k}x{f}x{dtype}>) -> {ty}",
        f"%{q}h = stablehlo.tanh %{q}d : {ty}",
        f"%{q}o = stablehlo.dot_general %{q}h, %w2, contracting_dims = [1] x [0] : "
        f"({ty}, tensor<{f}x{k}x{dtype}>) -> {tg}",
        f'%{q}z = "stablehlo.reduce_scatter"(%{q}o) ({{',
        f"  ^bb0(%{q}ra: {e}, %{q}rb: {e}):",
        f"    %{q}rs = stablehlo.add %{q}ra, %{q}rb : {e}",
        f"    stablehlo.return %{q}rs : {e}",
        f"}}) {{channel_handle = #stablehlo.channel_handle<handle = {p.next_channel()}, "
        f"type = 1>, {groups}, scatter_dimension = 0 : i64, use_global_device_ids}} : "
        f"({tg}) -> {tx}",
    ]
    return f"{q}z"


def mlp_module(ring: bool, n: int, rows: int, k: int, f: int, reps: int, dtype: str) -> str:
    """The SPMD program of `reps` MLP layers over `n` devices, each device holding a
    `rows x k` shard, a `k x f` slice of w1 and an `f x k` slice of w2 (the layer of T =
    n rows tokens, width k and hidden width n f): as the pass's rings (`ring`) or as the
    collectives and matmuls they replace. Returns one element of the last shard per device,
    so XLA keeps the whole chain."""
    p = _Text()
    tx, t1, t2 = (f"tensor<{a}x{b}x{dtype}>" for a, b in ((rows, k), (k, f), (f, k)))
    s = "tensor<i32>"
    p.lines += [
        # the operands are fills offset by 0 * partition_id: values XLA cannot fold, so a
        # matmul's other side stays a buffer (no fill kernel sunk into the rings' loops)
        "%pid = stablehlo.partition_id : tensor<ui32>",
        f"%pos = stablehlo.convert %pid : (tensor<ui32>) -> {s}",
        "%pf = stablehlo.convert %pid : (tensor<ui32>) -> tensor<f32>",
        "%zf = stablehlo.constant dense<0.0> : tensor<f32>",
        "%off0 = stablehlo.multiply %pf, %zf : tensor<f32>",
        "%off1 = stablehlo.add %off0, %seed0 : tensor<f32>",
        f"%off = stablehlo.convert %off1 : (tensor<f32>) -> tensor<{dtype}>",
        f"%zo = stablehlo.constant dense<0.0> : tensor<{dtype}>",
        f"%cz = stablehlo.constant dense<0> : {s}",
        f"%cu = stablehlo.constant dense<1> : {s}",
    ]
    for name, fill, t in (("x0", 1.0, tx), ("w1", 1.0 / k, t1), ("w2", 1.0 / (f * n), t2)):
        p.lines += [
            f"%{name}c = stablehlo.constant dense<{fill}> : tensor<{dtype}>",
            f"%{name}s = stablehlo.add %{name}c, %off : tensor<{dtype}>",
            f"%{name} = stablehlo.broadcast_in_dim %{name}s, dims = [] : (tensor<{dtype}>) -> {t}",
        ]
    x = "x0"
    layer = _ring_layer if ring else _plain_layer
    for r in range(reps):
        x = layer(p, r, x, n, rows, k, f, dtype)
    p.lines += [
        f"%e0 = stablehlo.slice %{x} [0:1, 0:1] : ({tx}) -> tensor<1x1x{dtype}>",
        f"%e1 = stablehlo.reshape %e0 : (tensor<1x1x{dtype}>) -> tensor<1x{dtype}>",
        f"%e2 = stablehlo.convert %e1 : (tensor<1x{dtype}>) -> tensor<1xf32>",
    ]
    body = "\n      ".join(p.lines)
    shard = '<@mesh, [{"i"}]>'
    name = "mlp_ring_spmd" if ring else "mlp_plain_spmd"
    return f"""
module @purejit_calibrate_{name} attributes {{mhlo.num_partitions = {n} : i32, \
mhlo.num_replicas = 1 : i32}} {{
  sdy.mesh @mesh = <["i"={n}]>
  func.func public @main() -> (tensor<{n}xf32> {{sdy.sharding = #sdy.sharding{shard}}}) {{
    %seed = stablehlo.constant dense<0.0> : tensor<{n}xf32>
    %out = sdy.manual_computation(%seed) in_shardings=[{shard}] out_shardings=[{shard}] \
manual_axes={{"i"}} (%seed1: tensor<1xf32>) {{
      %seed0 = stablehlo.reshape %seed1 : (tensor<1xf32>) -> tensor<f32>
      {body}
      sdy.return %e2 : tensor<1xf32>
    }} : (tensor<{n}xf32>) -> tensor<{n}xf32>
    return %out : tensor<{n}xf32>
  }}
}}
"""


def compile_spmd(text: str, devices):
    """Compile an SPMD calibration program for `devices` (partition-id order), as purejit
    compiles a shard_map program (Shardy partitioner, one replica)."""
    from purejit.backend import spmd

    client = devices[0].client
    from jaxlib import xla_client

    opts = spmd.compile_options(devices)
    return client.compile_and_load(text, xla_client.DeviceList(tuple(devices)), opts)
