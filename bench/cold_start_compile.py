"""XLA's compile of a rolled program against JAX's `lax.scan` one, alone and interleaved.

    python -m bench.cold_start_compile --layers 12 --train [--repeats 3] [--out DIR]

Lowers the `bench.cold_start --roll-sweep` model (a Python loop over a jitted layer,
`roll_layers` on; `--train`: value_and_grad plus SGD on the donated parameters) with
purejit and the same model with `jax.lax.scan` over stacked parameters with JAX, then
compiles both StableHLO modules with the same PJRT client and default options, `--repeats`
times each, interleaved, and prints the best wall and process-CPU time of each compile
(process CPU time counts XLA's threads and moves less than wall time on a shared machine),
with the kernels of each compiled HLO. `--out DIR` keeps both modules (`purejit.mlir`,
`jax_scan.mlir`) for a closer look.

    python -m bench.cold_start_compile --rows 12      # or 48

What reading the rows of stacks costs XLA's compile: the SGD update of `--rows` layers of
the bench transformer's 8 parameters, each layer's gradient a row of a stack, read with a
`slice` at a constant offset (one kernel per row to XLA) against a `dynamic_slice` at an
index from a two-trip loop (`purejit/passes/_row_index.py`: one kernel per row shape),
and against gradients passed as separate arrays (the unrolled program's case).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bench.cold_start_hlo import kernel_counts


def _modules(args) -> dict[str, str]:
    import jax
    import jax.numpy as jnp

    import purejit
    import purejit.numpy as pnp
    from bench.models import transformer, transformer_params

    params = transformer_params(args.layers, args.d, np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((args.batch, args.seq, args.d))
    x = x.astype(np.float32)

    def programs(xp, vg, tmap, model):
        def loss(ps, x):
            return xp.mean(model(ps, x) ** 2)

        def step(ps, x):
            value, grads = vg(loss)(ps, x)
            return tmap(lambda p, g: p - 1e-3 * g, ps, grads), value

        return step if args.train else model

    block = purejit.jit(lambda x, p: transformer(pnp, [p], x, args.heads))

    def looped(ps, x):
        for p in ps:
            x = block(x, p)
        return x

    def scanned(ps, x):
        def body(h, p):
            return transformer(jnp, [p], h, args.heads), None

        return jax.lax.scan(body, x, ps)[0]

    kw = {"donate_argnums": 0} if args.train else {}
    ours = purejit.jit(
        programs(pnp, purejit.value_and_grad, purejit.tree_util.tree_map, looped),
        compiler_options={"roll_layers": True},
        **kw,
    )
    stacked = jax.tree_util.tree_map(lambda *a: np.stack(a), *params)
    theirs = jax.jit(programs(jnp, jax.value_and_grad, jax.tree_util.tree_map, scanned), **kw)
    return {
        "purejit rolled": ours.lower(params, x).module,
        "jax.jit scan": theirs.lower(stacked, x).as_text(),
    }


_SHAPES = [(512, 128), (128,), (128,), (128,), (128,), (128, 128), (128, 384), (128, 512)]


def _rows_module(n: int, how: str) -> str:
    """StableHLO text: `p - 0.001 * g` for n layers of `_SHAPES`, g read `how`: "slice",
    "index" (dynamic_slice at loop indices) or "arrays" (one argument per layer)."""
    i32 = "tensor<i32>"
    args, body, outs = [], [], []
    if how == "index":  # the loop of `_row_index.py`, written out
        carry = ", ".join([i32] * (n + 1))
        body.append(f'%c0 = "stablehlo.constant"() {{value = dense<0> : {i32}}} : () -> {i32}')
        body += [
            f'%k{k} = "stablehlo.constant"() {{value = dense<{k}> : {i32}}} : () -> {i32}'
            for k in range(n)
        ]
        params = ", ".join(f"%a{k}: {i32}" for k in range(n + 1))
        sel = [
            f'%s{k} = "stablehlo.select"(%lt, %a0, %a{k + 1}) : (tensor<i1>, {i32}, {i32}) -> {i32}'
            for k in range(n)
        ]
        body += [
            f'%w:{n + 1} = "stablehlo.while"(%c0, {", ".join(f"%k{k}" for k in range(n))}) ({{',
            f"^bb0({params}):",
            f'%two = "stablehlo.constant"() {{value = dense<2> : {i32}}} : () -> {i32}',
            f'%c = "stablehlo.compare"(%a0, %two) {{comparison_direction = '
            f"#stablehlo<comparison_direction LT>}} : ({i32}, {i32}) -> tensor<i1>",
            '"stablehlo.return"(%c) : (tensor<i1>) -> ()',
            "}, {",
            f"^bb0({params}):",
            f'%z = "stablehlo.constant"() {{value = dense<0> : {i32}}} : () -> {i32}',
            f'%lt = "stablehlo.compare"(%a0, %z) {{comparison_direction = '
            f"#stablehlo<comparison_direction LT>}} : ({i32}, {i32}) -> tensor<i1>",
            *sel,
            f'%one = "stablehlo.constant"() {{value = dense<1> : {i32}}} : () -> {i32}',
            f"%next = stablehlo.add %a0, %one : {i32}",
            f'"stablehlo.return"(%next, {", ".join(f"%s{k}" for k in range(n))}) : ({carry}) -> ()',
            f"}}) : ({carry}) -> ({carry})",
        ]
    for s, shape in enumerate(_SHAPES):
        dims = "x".join(map(str, shape))
        t, row = f"tensor<{dims}xf32>", f"tensor<1x{dims}xf32>"
        stack = f"tensor<{n}x{dims}xf32>"
        if how != "arrays":
            args.append(f"%g{s}: {stack}")
        for k in range(n):
            v = f"{s}_{k}"
            args.append(f"%p{v}: {t}")
            if how == "arrays":
                args.append(f"%g{v}: {t}")
                g = f"%g{v}"
            else:
                if how == "slice":
                    ints = ", ".join
                    attrs = (
                        f"start_indices = array<i64: {ints(map(str, [k] + [0] * len(shape)))}>, "
                        f"limit_indices = array<i64: {ints(map(str, [k + 1, *shape]))}>, "
                        f"strides = array<i64: {ints(['1'] * (len(shape) + 1))}>"
                    )
                    body.append(
                        f'%r{v} = "stablehlo.slice"(%g{s}) {{{attrs}}} : ({stack}) -> {row}'
                    )
                else:
                    idx = ", ".join([f"%w#{k + 1}"] + ["%c0"] * len(shape))
                    sizes = ", ".join(map(str, [1, *shape]))
                    types = ", ".join([stack] + [i32] * (len(shape) + 1))
                    body.append(
                        f'%r{v} = "stablehlo.dynamic_slice"(%g{s}, {idx}) '
                        f"{{slice_sizes = array<i64: {sizes}>}} : ({types}) -> {row}"
                    )
                body.append(f'%x{v} = "stablehlo.reshape"(%r{v}) : ({row}) -> {t}')
                g = f"%x{v}"
            body.append(
                f'%lr{v} = "stablehlo.constant"() {{value = dense<0.001> : {t}}} : () -> {t}'
            )
            body.append(f"%m{v} = stablehlo.multiply {g}, %lr{v} : {t}")
            body.append(f"%u{v} = stablehlo.subtract %p{v}, %m{v} : {t}")
            outs.append((f"%u{v}", t))
    results = ", ".join(t for _, t in outs)
    ret = f'"func.return"({", ".join(v for v, _ in outs)}) : ({results}) -> ()'
    head = f"func.func public @main({', '.join(args)}) -> ({results}) {{"
    return "module @rows {\n" + "\n".join([head, *body, ret, "}"]) + "\n}\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--train", action="store_true", help="the training step, not the forward")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="a folder for the two modules")
    ap.add_argument("--rows", type=int, default=0, help="the rows experiment, N layers")
    args = ap.parse_args(argv)
    import jax
    from jaxlib import xla_client

    if args.rows:
        hows = {"slice": "slice at constant offsets", "index": "dynamic_slice at loop indices"}
        hows["arrays"] = "separate arrays"
        modules = {f"{args.rows} rows, {v}": _rows_module(args.rows, k) for k, v in hows.items()}
    else:
        modules = _modules(args)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name, text in modules.items():
            fname = "purejit.mlir" if name.startswith("purejit") else "jax_scan.mlir"
            fname = fname if not args.rows else name.split(", ")[1].replace(" ", "_") + ".mlir"
            with open(os.path.join(args.out, fname), "w") as f:
                f.write(text)
    dev = jax.devices()[0]
    best = {name: [float("inf"), float("inf"), None] for name in modules}
    for _ in range(args.repeats):
        for name, text in modules.items():
            t0, c0 = time.perf_counter(), time.process_time()
            exe = dev.client.compile_and_load(
                text, xla_client.DeviceList((dev,)), xla_client.CompileOptions()
            )
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            b = best[name]
            b[0], b[1] = min(b[0], wall), min(b[1], cpu)
            b[2] = kernel_counts(exe.hlo_modules()[0].to_string())
    what = "training step" if args.train else "forward"
    if args.rows:
        what, args.layers = "SGD update of rows of stacked gradients", args.rows
    print(f"\n{args.layers}-layer {what}, d={args.d}, best of {args.repeats} ({dev.device_kind})\n")
    print("| program | XLA compile wall (s) | XLA compile CPU (s) | kernels: entry + loop bodies |")
    print("|---|---:|---:|---|")
    for name, (wall, cpu, k) in best.items():
        kernels = " + ".join(str(n) for n in [k["entry"], *k["loop_bodies"]])
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {kernels} |")


if __name__ == "__main__":
    main()
