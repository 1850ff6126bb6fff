"""Exhaustive accuracy of purejit's float32 sin, cos and tan: every one of the 2^32 inputs.

    python -m bench.ulp_sweep                 # all 2^32 bit patterns, chunks of 2^24
    python -m bench.ulp_sweep --chunks 4      # the first 4 chunks only (a quick look)

Each chunk of consecutive bit patterns runs through one compiled purejit program (the
lowering of the default backend: on CPU, the vectorisable `_fast_math` one) and is compared
with NumPy's float64 function of the same inputs. The error is in float32 ulps of the exact
value: |got - ref| / ulp(ref), ulp(ref) = 2^(exponent(ref) - 23), at least 2^-149.
Non-finite inputs must give the same class of result as NumPy (NaN for inf and NaN).
Prints the worst error per function with its input, and writes them to --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

import purejit
import purejit.numpy as pnp

FUNCS = {"sin": (pnp.sin, np.sin), "cos": (pnp.cos, np.cos), "tan": (pnp.tan, np.tan)}


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in float32 ulps of ref (float64 values; ref is the exact result)."""
    _, exp = np.frexp(np.abs(ref))  # |ref| = m 2^exp, m in [0.5, 1)
    ulp = np.ldexp(1.0, np.maximum(exp - 24, -149))
    return np.abs(got.astype(np.float64) - ref) / ulp


def _ordered(x: np.ndarray) -> np.ndarray:
    """float32 bits as int64 in the order of the values (-0.0 and 0.0 both 0)."""
    i = x.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def worst_error(got: np.ndarray, ref: np.ndarray) -> tuple[float, int]:
    """(max ulp error, its index) of float32 `got` against float64 `ref`; the exact error
    is computed only where `got` differs from `ref` rounded to float32."""
    with np.errstate(invalid="ignore", over="ignore"):
        off = np.flatnonzero(_ordered(got) != _ordered(ref.astype(np.float32)))
    if not off.size:  # every result is ref correctly rounded: at most 1/2 ulp
        err = ulp_error(got[:1], ref[:1]) if got.size else np.zeros(1)
        return float(err[0]), 0
    err = ulp_error(got[off], ref[off])
    i = int(err.argmax())
    return float(err[i]), int(off[i])


def sweep(chunk_bits: int = 24, chunks: int | None = None, log=print) -> dict:
    """The worst ulp error of each function over the chunks of bit patterns swept."""
    size = 1 << chunk_bits
    total = (1 << 32) // size if chunks is None else chunks
    fn = purejit.jit(lambda x: tuple(f(x) for f, _ in FUNCS.values()))
    worst = {name: (0.0, 0.0) for name in FUNCS}
    t0 = time.perf_counter()
    for c in range(total):
        bits = np.arange(c * size, (c + 1) * size, dtype=np.uint64).astype(np.uint32)
        x = bits.view(np.float32)
        outs = [np.asarray(o) for o in fn(x)]
        fin = np.isfinite(x)
        xd = x.astype(np.float64)
        for (name, (_, ref_fn)), got in zip(FUNCS.items(), outs):
            if not np.isnan(got[~fin]).all():
                raise AssertionError(f"{name}: a non-finite input gave a non-NaN result")
            with np.errstate(invalid="ignore"):
                err, i = worst_error(got[fin], ref_fn(xd[fin]))
            if err > worst[name][0]:
                worst[name] = (err, float(x[fin][i]))
        if c % 16 == 15 or c == total - 1:
            done = (c + 1) / total
            log(
                f"{c + 1}/{total} chunks, {time.perf_counter() - t0:.0f} s, "
                + ", ".join(f"{k} {v[0]:.3f} ulp" for k, v in worst.items())
                + f" ({done:.0%})"
            )
    return {k: {"max_ulp": v[0], "at": v[1]} for k, v in worst.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--chunk-bits", type=int, default=24, help="log2 of the chunk size")
    ap.add_argument("--chunks", type=int, default=None, help="sweep only the first N chunks")
    ap.add_argument("--out", default=None, help="a folder for ulp_sweep.json")
    args = ap.parse_args(argv)
    result = sweep(args.chunk_bits, args.chunks)
    result["backend"] = purejit.devices()[0].platform
    result["inputs"] = (1 << args.chunk_bits) * (args.chunks or (1 << (32 - args.chunk_bits)))
    print(json.dumps(result, indent=1))
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "ulp_sweep.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
