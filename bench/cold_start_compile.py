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
    args = ap.parse_args(argv)
    import jax
    from jaxlib import xla_client

    modules = _modules(args)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name, text in modules.items():
            fname = "purejit.mlir" if name.startswith("purejit") else "jax_scan.mlir"
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
    print(f"\n{args.layers}-layer {what}, d={args.d}, best of {args.repeats} ({dev.device_kind})\n")
    print("| program | XLA compile wall (s) | XLA compile CPU (s) | kernels: entry + loop bodies |")
    print("|---|---:|---:|---|")
    for name, (wall, cpu, k) in best.items():
        kernels = " + ".join(str(n) for n in [k["entry"], *k["loop_bodies"]])
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {kernels} |")


if __name__ == "__main__":
    main()
