"""`python -m bench.tools.stack_routes [--layers 48] [--d 128]`: what building one stack of a
rolled model's per-layer parameters costs in `stacked_dispatch` (the `bench.models`
transformer's parameters as device arrays, one group of one dtype), by each route:

- `host`: every leaf read to the host, laid out in one NumPy array, transferred once;
- `device`: one small cached in-place update executable per leaf shape, once per leaf (the
  first build compiles them);
- `views`: making the row views of a built stack (what dispatch gave a caller's leaves
  before lazy rows);
- `rows`: the lazy rows of a built stack (`Array.row`: what dispatch gives a caller's leaves
  and a stacked program's outputs now), then each read once (`.buffer`: a view made).

Each printed line is one build, in order (the first of each route includes its warm-up)."""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    import purejit
    from purejit.runtime.array import Array
    from bench.models import transformer_params
    from purejit.backend import pjrt, row_views
    from purejit.compiler import stacked_dispatch as sd
    from purejit.compiler.stacked_params import Group
    from purejit.ir import TensorType
    from purejit.tree_util import tree_leaves

    params = transformer_params(args.layers, args.d, np.random.default_rng(0))
    leaves = [purejit.device_put(a) for a in tree_leaves(params)]
    offsets, total = [], 0
    for a in leaves:
        offsets.append(total)
        total += a.size
    stack_type = TensorType((total,), np.dtype(np.float32))
    g = Group(tuple(range(len(leaves))), tuple(offsets), tuple(a.shape for a in leaves),
              stack_type, False)  # fmt: skip
    dev = pjrt.default_device()
    print(f"{dev.platform}: {len(leaves)} leaves, {stack_type.nbytes / 2**20:.1f} MiB stack, "
          f"{len(set(g.shapes))} leaf shapes")  # fmt: skip
    for route in ("host", "device"):
        build = sd.build_on_host if route == "host" else sd.build_on_device
        for k in range(args.repeats):
            t0 = time.perf_counter()
            stack = build(g, leaves, dev)
            stack.block_until_ready()
            print(f"{route} build {k}: {(time.perf_counter() - t0) * 1e3:.1f} ms", flush=True)
            if k < args.repeats - 1:
                del stack  # as after a call: the next host build may reuse its array
    for k in range(args.repeats):
        t0 = time.perf_counter()
        views, viewed = row_views.views(stack, g.pieces)
        made = time.perf_counter() - t0
        del views
        print(f"views {k}: {made * 1e3:.1f} ms for {sum(viewed)} views", flush=True)
    avals = [a.aval for a in leaves]
    for k in range(args.repeats):
        t0 = time.perf_counter()
        rows = [Array.row(stack, off, aval) for off, aval in zip(g.offsets, avals)]
        made = time.perf_counter() - t0
        t0 = time.perf_counter()
        for r in rows:
            r.buffer
        read = time.perf_counter() - t0
        del rows
        print(f"rows {k}: {made * 1e3:.2f} ms for {len(avals)} lazy rows; reading each "
              f"(a view made): {read * 1e3:.1f} ms", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
