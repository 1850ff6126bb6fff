"""linalg speed: purejit.numpy.linalg against jax.numpy.linalg, steady state, same process.

    python -m bench.linalg --out DIR [--quick] [--budget 0.5] [--repeats 3]

Five functions -- solve (b with 16 columns), cholesky, qr, svd, eigh -- on one 1024 x 1024
float32 matrix and on a batch of 128 matrices of 64 x 64 (`--quick`: 256 x 256 and 16 of
32 x 32), each jitted once per framework. The time per call is steady state (warm up, then
many calls between two synchronisations, best of `--repeats` batches taken in turn with
JAX's). Prints a Markdown table and
writes it, with the raw numbers as JSON, to DIR/linalg_<platform>.md / .json. The goal is a
ratio (purejit / jax) of at most 1.05 for every row. Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib

import numpy as np

from bench.run import steady


def _inputs(n: int, batch: tuple[int, ...]):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(batch + (n, n)).astype(np.float32)
    spd = (a @ np.swapaxes(a, -1, -2) / n + np.eye(n, dtype=np.float32)).astype(np.float32)
    b = rng.standard_normal(batch + (n, 16)).astype(np.float32)
    return a, spd, b


def _programs(la):
    """name -> (function, which of the inputs (a, spd, b) it takes): each jitted function
    takes only what it uses, as a user writes `jit(cholesky)(x)` (JAX drops unused
    arguments from the executable, purejit does not yet, so passing all three would time
    dispatch, not linalg)."""
    return {
        "solve": (lambda a, b: la.solve(a, b), (0, 2)),
        "cholesky": (lambda spd: la.cholesky(spd), (1,)),
        "qr": (lambda a: la.qr(a), (0,)),
        "svd": (lambda a: la.svd(a), (0,)),
        "eigh": (lambda spd: la.eigh(spd), (1,)),
    }


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _check(name, got, want):
    """Results agree up to what is not unique (signs of singular/eigen vectors)."""
    got, want = [np.asarray(x) for x in _leaves(got)], [np.asarray(x) for x in _leaves(want)]
    assert [g.shape for g in got] == [w.shape for w in want], name
    for g, w in zip(got, want):
        if name in ("svd", "qr", "eigh"):
            g, w = np.abs(g), np.abs(w)
        scale = max(1.0, float(np.abs(w).max()))
        err = float(np.abs(g - w).max()) / scale
        if err > 5e-2:
            print(f"# warning: {name} differs from jax by {err:.2e} (relative)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="folder for linalg_<platform>.md and .json")
    p.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    p.add_argument("--budget", type=float, default=0.5, help="seconds per timed batch")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)

    import jax
    import jax.numpy as jnp

    import purejit
    import purejit.numpy as pnp

    platform = jax.devices()[0].platform
    shapes = {
        "1024x1024": (256 if a.quick else 1024, ()),
        "128 x 64x64": (32 if a.quick else 64, (16 if a.quick else 128,)),
    }
    rows = []
    for label, (n, batch) in shapes.items():
        host = _inputs(n, batch)
        pj_args = [pnp.asarray(x) + 0 for x in host]
        jx_args = [jax.device_put(x) for x in host]
        pj_progs, jx_progs = _programs(pnp.linalg), _programs(jnp.linalg)
        for name in pj_progs:
            pj_f = purejit.jit(pj_progs[name][0])
            jx_f = jax.jit(jx_progs[name][0])
            take = pj_progs[name][1]
            pj_in, jx_in = [pj_args[i] for i in take], [jx_args[i] for i in take]
            _check(name, pj_f(*pj_in), jx_f(*jx_in))
            # interleaved: one timed batch of each in turn, the best of each kept, so that
            # drift on a loaded machine (LAPACK's threads share its cores) hits both alike
            pj_t = jx_t = float("inf")
            for _ in range(a.repeats):
                pj_t = min(pj_t, steady(pj_f, pj_in, a.budget, 1))
                jx_t = min(jx_t, steady(jx_f, jx_in, a.budget, 1))
            rows.append({"function": name, "shape": label, "purejit_ms": pj_t * 1e3,
                         "jax_ms": jx_t * 1e3, "ratio": pj_t / jx_t})  # fmt: skip
            print(f"# {name} {label}: {pj_t * 1e3:.3f} ms vs {jx_t * 1e3:.3f} ms "
                  f"({pj_t / jx_t:.2f}x)", flush=True)  # fmt: skip

    device = jax.devices()[0].device_kind
    gmean = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    worst = max(r["ratio"] for r in rows)
    lines = [
        f"## linalg on {platform} ({device}){' --quick' if a.quick else ''}",
        "",
        "| function | shape | purejit ms | jax ms | ratio |",
        "|---|---|---:|---:|---:|",
        *(
            f"| {r['function']} | {r['shape']} | {r['purejit_ms']:.3f} | {r['jax_ms']:.3f} "
            f"| {r['ratio']:.2f} |"
            for r in rows
        ),
        "",
        f"geometric mean {gmean:.3f}x, worst {worst:.3f}x (goal: every ratio <= 1.05)",
    ]
    text = "\n".join(lines)
    print("\n" + text)
    if a.out:
        out = pathlib.Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        suffix = "_quick" if a.quick else ""
        (out / f"linalg_{platform}{suffix}.md").write_text(text + "\n")
        meta = {"platform": platform, "device": device, "rows": rows, "geomean": gmean}
        (out / f"linalg_{platform}{suffix}.json").write_text(json.dumps(meta, indent=1))


if __name__ == "__main__":
    main()
