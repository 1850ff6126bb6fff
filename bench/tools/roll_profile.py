"""Where the roll bench's training step spends its time on a GPU: kernels and device time per
step (CUPTI, through torch's profiler, as `bench.tools.step_profile`), wall time per step
and the compiled HLO's kernel counts, for purejit unrolled, purejit rolled (saved values
packed, and with one stacked output per saved value), `jax.jit` unrolled and `jax.jit` with
`lax.scan`, all in one process, on the model of `bench.cold_start --roll-sweep --train`
(the bench.models transformer, d=128, 4 heads, batch 2 x seq 64; a Python loop over a
jitted layer; value_and_grad + SGD on donated parameters).

    python -m bench.tools.roll_profile --out DIR [--layers 12] [--steps 10]

Wall minus device time is what launching and the host add; a rolled loop's trips show as
the same kernels `layers - 1` times per step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections import defaultdict

import numpy as np

FORMS = ("purejit unrolled", "purejit rolled packed", "purejit rolled unpacked", "jax.jit")
FORMS += ("jax.jit scan",)


def make_form(
    name: str, layers: int, d: int, heads: int, batch: int, seq: int, dtype: str = "float32"
):
    """(step, [parameters, x, None]) of one form: `step(params, x, _)` returns the updated
    parameters and the loss; the first call (the compile) has run."""
    import ml_dtypes  # noqa: F401  (names bfloat16 for numpy)

    from bench.cold_start_roll import packing
    from bench.models import transformer, transformer_params

    dt = np.dtype(dtype)
    params = transformer_params(layers, d, np.random.default_rng(0), dtype=dt)
    x = np.random.default_rng(1).standard_normal((batch, seq, d)).astype(dt)
    if name.startswith("purejit"):
        import purejit
        import purejit.numpy as xp

        block = purejit.jit(lambda h, p: transformer(xp, [p], h, heads))
        vg, tmap = purejit.value_and_grad, purejit.tree_util.tree_map
        options = {"roll_layers": name != "purejit unrolled"}

        def jit(f):
            return purejit.jit(f, donate_argnums=0, compiler_options=options)

        state = [tmap(lambda a: xp.asarray(a) + 0, params), x, None]
    else:
        import jax
        import jax.numpy as xp

        def block(h, p):
            return transformer(xp, [p], h, heads)

        vg, tmap = jax.value_and_grad, jax.tree_util.tree_map

        def jit(f):
            return jax.jit(f, donate_argnums=0)

        if name == "jax.jit scan":
            params = tmap(lambda *a: np.stack(a), *params)
        state = [tmap(jax.device_put, params), x, None]

    def model(ps, h):
        if name == "jax.jit scan":
            return jax.lax.scan(lambda c, p: (block(c, p), None), h, ps)[0]
        for p in ps:
            h = block(h, p)
        return h

    def loss(ps, h):
        return xp.mean(model(ps, h) ** 2)

    def step(ps, h):
        value, grads = vg(loss)(ps, h)
        return tmap(lambda p, g: p - 1e-3 * g, ps, grads), value

    f = jit(step)
    rolled = name.startswith("purejit rolled")
    with packing(name.endswith(" packed")) if rolled else contextlib.nullcontext():
        state[0], value = f(state[0], x)
        float(np.asarray(value))
    return f, state


def hlo_text(name: str, f, state) -> str:
    if name.startswith("purejit"):
        return next(iter(f.cache.values())).as_text()
    return f.lower(state[0], state[1]).compile().as_text()


def wall_per_step(fn, state, steps: int) -> float:
    """Seconds per step over `steps` steps run back to back, synchronised at the end."""
    from bench.train import _block

    t0 = time.perf_counter()
    for _ in range(steps):
        state[0], loss = fn(*state)
    _block((state[0], loss))
    return (time.perf_counter() - t0) / steps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--dtype", default="float32", help="the model's dtype (bfloat16 as bench.train)")
    p.add_argument("--forms", default=",".join(FORMS))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    from bench.cold_start_hlo import kernel_counts
    from bench.tools.step_profile import _category, profile_form, write_report

    report, lines = {}, []
    lines.append(
        f"# roll profile: {a.layers} layers, d={a.d}, {a.heads} heads, batch {a.batch} x seq "
        f"{a.seq}, {a.dtype}, training step (donated), {a.steps} steps"
    )
    head = "| form | kernels/step | device ms/step | wall ms/step | HLO kernels: entry + loop "
    lines += ["", head + "bodies | top categories (µs/step) |", "|---|---:|---:|---:|---|---|"]
    for name in [s.strip() for s in a.forms.split(",")]:
        f, state = make_form(name, a.layers, a.d, a.heads, a.batch, a.seq, a.dtype)

        def fn(ps, x, _unused, f=f):
            return f(ps, x)

        kernels, total, _ = profile_form(fn, state, a.steps)
        wall = min(wall_per_step(fn, state, a.steps) for _ in range(3))
        text = hlo_text(name, f, state)
        counts = kernel_counts(text)
        cats: dict = defaultdict(float)
        for k, (_, us) in kernels.items():
            cats[_category(k)] += us
        top = ", ".join(f"{c} {us:.0f}" for c, us in sorted(cats.items(), key=lambda t: -t[1]))
        calls = sum(c for c, _ in kernels.values())
        hlo = " + ".join(str(n) for n in [counts["entry"], *counts["loop_bodies"]])
        lines.append(
            f"| {name} | {calls:.0f} | {total / 1e3:.3f} | {wall * 1e3:.3f} | {hlo} | {top} |"
        )
        report[name] = {"kernels_per_step": calls, "device_us": total, "wall_s": wall}
        report[name].update(hlo_kernels=counts, kernels=kernels)
        safe = "".join(ch if ch.isalnum() else "_" for ch in name)
        with open(os.path.join(a.out, f"hlo_{safe}.txt"), "w") as fh:
            fh.write(text)
        print(lines[-1], flush=True)
        del f, state
    write_report(a.out, "roll_profile", report, lines)


if __name__ == "__main__":
    main()
