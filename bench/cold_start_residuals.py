"""What a training step saves for its backward pass per layer: the same layers written inline,
as a jitted layer called in a loop, and rolled into scans.

    python -m bench.cold_start_residuals [--layers 4] [--d 128] [--heads 4] [--seq 64] [--batch 2]

For `jit(value_and_grad(loss))` of the bench.models transformer, prints the residual records
of each differentiation (values and bytes saved, values recomputed; a called layer's own
plan is an inner record, its saved values are what its forward call returns), the residual
results of each forward call, and, rolled (`compiler_options={"roll_layers": True}`), the
stacked outputs (ys) of each scan per layer. The gradients of every form are compared with
the inline program's.
"""

from __future__ import annotations

import argparse

import numpy as np


def _scans(fn) -> list[tuple]:
    out = []
    for op in fn.ops:
        if op.name == "scan":
            ys = op.results[op.attrs["num_carry"] :]
            n = op.attrs["length"]
            nbytes = sum(v.type.nbytes for v in ys)
            out.append((n, op.attrs["reverse"], len(ys), nbytes / n))
    return out


def main(argv=None):
    import purejit
    import purejit.numpy as xp
    from bench.models import transformer, transformer_params

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("layers", 4), ("d", 128), ("heads", 4), ("seq", 64), ("batch", 2)):
        ap.add_argument(f"--{name}", type=int, default=default)
    args = ap.parse_args(argv)
    params = transformer_params(args.layers, args.d, np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((args.batch, args.seq, args.d)).astype(np.float32)

    def block(x, p):
        return transformer(xp, [p], x, args.heads)

    def grad_of(layer):
        def loss(ps, x):
            for p in ps:
                x = layer(x, p)
            return xp.mean(x**2)

        return purejit.value_and_grad(loss)

    jitted = purejit.jit(block)
    forms = (
        ("inline", block, False),
        ("jitted layer", jitted, False),
        ("rolled, jitted layer", jitted, True),
        ("rolled, flat loop", block, True),
    )
    grads = {}
    for name, layer, roll in forms:
        f = purejit.jit(grad_of(layer), compiler_options={"roll_layers": roll})
        lowered = f.lower(params, x)
        print(f"{name}:")
        for r in lowered.residuals:
            kept = [s for s in r.saved if not s.free]
            print(
                f"  {r.where:<12} saved {len(kept):>3} values, {r.saved_bytes / 1e6:6.3f} MB; "
                f"recomputed {len(r.recomputed)}{' (inner)' if r.inner else ''}"
            )
        calls = [
            op
            for op in lowered.traced.ops
            if op.name == "call" and str(op.attrs.get("callee", "")).endswith("_fwd")
        ]
        if calls:
            counts = [len(op.results) - 1 for op in calls]  # the layer has one output
            print(f"  forward calls' residual results: {counts}")
        for n, rev, k, per in _scans(lowered.fn) if roll else []:
            kind = "backward" if rev else "forward"
            print(f"  {kind} scan of {n} blocks: {k} ys, {per / 1e6:.3f} MB per block")
        grads[name] = [np.asarray(g) for g in purejit.tree_util.tree_leaves(f(params, x)[1])]
    for name, g in grads.items():
        err = max(float(np.abs(a - b).max()) for a, b in zip(g, grads["inline"]))
        print(f"{name}: max |gradient - inline's| = {err:.2e}")


if __name__ == "__main__":
    main()
