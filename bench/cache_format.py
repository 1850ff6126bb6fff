"""How the pass cache stores optimised IR: the JSON encoding against the IR's text form and
pickle (which the cache no longer uses: it runs code when loaded).

    python -m bench.cache_format [--layers 48] [--d 64] [--out DIR]

Lowers `bench.models.transformer` with purejit, takes its optimised IR function and times
(best of 5) writing and reading it each way, next to the passes' own time: reading an
entry must cost well below running the passes, or the cache is pointless.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time

import numpy as np


def _best(fn, n=5):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3, out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.cache_format", description=__doc__)
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--out", default=None, help="folder for cache_format.md")
    args = ap.parse_args(argv)

    import purejit
    import purejit.numpy as jnp
    from purejit.ir import parse, print_function
    from purejit.ir.encoding import decode_function, encode_function
    from purejit.passes import Pipeline

    from bench.models import transformer, transformer_params

    rng = np.random.default_rng(0)
    p = transformer_params(args.layers, args.d, rng)
    x = rng.standard_normal((2, 16, args.d)).astype(np.float32)
    lowered = purejit.jit(lambda p, x: transformer(jnp, p, x, 4)).lower(p, x)
    t_passes, (fn, _) = _best(lambda: Pipeline().run(lowered.traced), 3)
    t_print, text = _best(lambda: print_function(fn))
    t_parse, _ = _best(lambda: parse(text))
    t_pickle, blob = _best(lambda: pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL))
    t_unpickle, _ = _best(lambda: pickle.loads(blob))
    t_enc, data = _best(lambda: json.dumps(encode_function(fn), separators=(",", ":")).encode())
    t_dec, back = _best(lambda: decode_function(json.loads(data)))
    assert print_function(back) == text
    n_ops = len(text.splitlines())
    rows = [
        ("IR text (print / parse)", len(text), t_print, t_parse),
        ("pickle (dumps / loads)", len(blob), t_pickle, t_unpickle),
        ("JSON encoding (cache)", len(data), t_enc, t_dec),
    ]
    lines = [
        f"Optimised IR of a {args.layers}-layer transformer (d={args.d}): {n_ops} lines; "
        f"the passes took {t_passes:.0f} ms.",
        "",
        "| format | bytes | write ms | read ms | read / passes |",
        "|---|---|---|---|---|",
    ]
    for name, size, w, r in rows:
        lines.append(f"| {name} | {size} | {w:.1f} | {r:.1f} | {r / t_passes:.2f} |")
    report = "\n".join(lines)
    print(report)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "cache_format.md"), "w") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    main()
