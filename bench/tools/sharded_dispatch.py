"""Host µs per call of the sharded training steps of `bench.tp_train` (data, fully sharded and
tensor parallel, `shard_map` inside a donating `jit`) at tiny widths on forced CPU devices:
the steps keep the full model's pytree (12 layers of 8 parameters, Adam's state: 289 arrays
in, 290 out) with arrays a few elements wide; a loop of calls is timed until the last call
returns, before the final synchronisation. On forced CPU devices the launching call itself
waits for much of each device's share of the program (jaxlib's CPU client; hundreds of small
kernels per device), so those rows' host time includes execution, and the programs of the
two libraries differ. The `trivial` row runs dp's tree through a step that only adds 1 to
each array: its host time is dispatch, nearly all.

purejit and `jax.jit` run in one process, interleaved, median of `--repeats` rounds of
`--iters` calls each; "step" is the same loop timed until its last result is ready. The
figures are noisy on a busy machine: compare the two libraries of one run, not runs.
purejit's pacing of calls on CPU devices is lifted to the loop's length, as JAX does not
pace. The last column times the Python that purejit's C++ path adds to a donating call
(`cpp_dispatch.entry`). With `--profile`, cProfile's top entries of purejit's loop follow
each step (per-call times then include the profiler's overhead).

    python -m bench.tools.sharded_dispatch [--devices 4] [--steps dp,fsdp,tp,trivial] [--profile]

It forces `--cpu-devices` CPU devices (default 8) before JAX starts: run it in its own
process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

# layers, batch, sequence, width, heads, MLP width: the full model's tree, tiny arrays
TINY = (12, 8, 8, 16, 8, 32)


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpu-devices", type=int, default=8)
    p.add_argument("--devices", type=int, default=4, help="mesh size")
    p.add_argument(
        "--steps",
        default="dp,fsdp,tp,trivial",
        help="of dp, fsdp, tp and trivial (see trivial_step)",
    )
    p.add_argument("--layers", type=int, default=TINY[0])
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--profile", action="store_true", help="cProfile purejit's loop")
    return p.parse_args(argv)


class _Loop:
    """A donating step called again and again on the state it returned."""

    def __init__(self, step, state, x, y):
        self.step, self.state, self.x, self.y = step, state, x, y

    def __call__(self, iters: int):
        step, x, y = self.step, self.x, self.y
        state = self.state
        t0 = time.perf_counter()
        for _ in range(iters):
            state, loss = step(state, x, y)
        host = time.perf_counter() - t0
        loss.block_until_ready()
        self.state = state
        return host / iters, (time.perf_counter() - t0) / iters


def trivial_step(lib, mesh, layers: int):
    """dp's state, batch and specs around a step whose execution is next to nothing (each
    array + 1, the batch's psum): what dispatch alone costs, execution aside."""
    from bench.tp_train import state_specs

    P = lib.sharding.PartitionSpec
    specs = state_specs(P, "dp", layers)

    def body(state, x, y):
        return lib.tree_util.tree_map(lambda a: a + 1, state), lib.lax.psum(x.sum(), "dp")

    return lib.shard_map(body, mesh=mesh, in_specs=specs, out_specs=(specs[0], P()))


def loops(n: int, kinds: list[str], layers: int) -> dict:
    """{(library, kind): _Loop}, each step compiled and run once."""
    import jax

    import purejit
    from bench.tp_train import make_inputs, make_steps, shardings, state_specs

    _, B, S, D, H, F = TINY
    state, x, y = make_inputs(layers, B, S, D, F, np.float32)
    out = {}
    for lib in (purejit, jax):
        devs = np.array(lib.devices()[:n])
        axis = {k: "dp" if k == "trivial" else k for k in kinds}
        meshes = {k: lib.sharding.Mesh(devs, (axis[k],)) for k in kinds}
        steps = make_steps(lib, {axis[k]: meshes[k] for k in kinds if k != "trivial"}, H, layers)
        if "trivial" in kinds:
            steps["trivial"] = trivial_step(lib, meshes["trivial"], layers)
        for kind in kinds:
            specs = state_specs(lib.sharding.PartitionSpec, axis[kind], layers)
            sh = shardings(lib, meshes[kind], specs)
            args = [lib.tree_util.tree_map(lib.device_put, a, s) for a, s in zip((state, x, y), sh)]
            loop = _Loop(lib.jit(steps[kind], donate_argnums=0), *args)
            loop(2)
            out[(lib.__name__, kind)] = loop
    return out


def measure(loops: dict, iters: int, repeats: int) -> dict:
    """{(library, kind): (median host seconds per call, median seconds per call until the
    last result is ready)}, the loops interleaved in every round."""
    samples: dict = {k: [] for k in loops}
    for _ in range(repeats):
        for k, loop in loops.items():
            samples[k].append(loop(iters))
    mid = repeats // 2
    return {
        k: (sorted(h for h, _ in v)[mid], sorted(t for _, t in v)[mid]) for k, v in samples.items()
    }


def python_work(loop, reps: int = 200) -> float | None:
    """Seconds of Python that purejit's C++ dispatch of a donating SPMD step adds to each
    call (`cpp_dispatch.entry`: the check that no buffer comes twice, then the marking of
    the donated Arrays), timed on the loop's live arguments; None where this purejit has no
    such path."""
    from purejit.compiler import cpp_dispatch

    shares = getattr(cpp_dispatch, "_shares_a_buffer", None)
    if shares is None:
        return None
    from purejit.backend import cpp_jit

    args = (loop.state, loop.x, loop.y)
    mark = cpp_dispatch.mark_donated_leaves
    t0 = time.perf_counter()
    for _ in range(reps):
        per = [cpp_jit.array_leaves(a) for a in args]
        shares(per)
        mark(per[0], 0, "step")
    return (time.perf_counter() - t0) / reps


def profile(loop, iters: int, top: int = 25) -> str:
    import cProfile
    import io
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    loop(iters)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def main(argv=None):
    args = _parse(argv)
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + f" --xla_force_host_platform_device_count={args.cpu_devices}"
    )
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    n = args.devices
    if len(jax.devices()) < n:
        sys.exit(f"{n} devices wanted, {len(jax.devices())} present")
    kinds = [k for k in args.steps.split(",") if k]
    # purejit paces SPMD calls on CPU devices (at most 4 in flight: jaxlib's CPU client can
    # deadlock with 32 per device), so its loop would wait for execution where JAX's runs
    # ahead: lifted to the loop's length here, well under 32, so both measure dispatch
    from purejit.backend import spmd as backend_spmd

    backend_spmd.CPU_MAX_IN_FLIGHT = max(backend_spmd.CPU_MAX_IN_FLIGHT, args.iters + 2)
    ls = loops(n, kinds, args.layers)
    res = measure(ls, args.iters, args.repeats)
    print(
        f"sharded_dispatch: {n} of {len(jax.devices())} CPU devices, {args.layers} layers, "
        f"tiny widths {TINY[1:]}; host µs per call, median of {args.repeats} x {args.iters}"
    )
    print(
        "| step | purejit host µs | jax.jit host µs | purejit / jax | purejit step µs "
        "| jax step µs | purejit's Python in host µs |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in kinds:
        (p, ps), (j, js) = res[("purejit", kind)], res[("jax", kind)]
        py = python_work(ls[("purejit", kind)])
        print(
            f"| {kind} | {p * 1e6:.0f} | {j * 1e6:.0f} | {p / j:.2f} | {ps * 1e6:.0f} | "
            f"{js * 1e6:.0f} | {'-' if py is None else f'{py * 1e6:.0f}'} |"
        )
    if args.profile:
        for kind in kinds:
            print(f"\n## cProfile of purejit's {kind} loop ({args.iters} calls)\n")
            print(profile(ls[("purejit", kind)], args.iters))
    return res


if __name__ == "__main__":
    main()
