"""The collective-matmul pass's `auto` over issue #31's shapes: `bench.tp_mlp` once per shape
and mesh size, each in a fresh process, gathered into one table.

    python -m bench.tp_mlp_sweep --out DIR                       # n = 2 and 4 GPUs
    python -m bench.tp_mlp_sweep --out DIR --devices 2 --shapes 2048x2048
    python -m bench.tp_mlp_sweep --out DIR --cpu-devices 8 --devices 2,4 --shapes 512x256
    # the rows that decide, n = 2 and 4, in about 4 minutes on H100s/H200s (rows took 12-17 s
    # at D = 2048 and about 32 s at 8192 x 8192 before auto timed its candidates, 2-3 s more)
    python -m bench.tp_mlp_sweep --out DIR --devices 2,4 --iters 50 --repeats 5 --timeout 60 \
        --shapes 2048x2048,4096x2048,8192x2048,16384x2048,8192x8192
    # the same rows with auto's old decision beside the new one (each candidate timed alone)
    python -m bench.tp_mlp_sweep --out DIR --devices 2 --iters 50 --repeats 5 --timeout 120 \
        --shapes 16384x2048,4096x2048,8192x8192 --auto-alone

Every row also forces the chunked-collectives forms (`--forms`, default chunked2, chunked4 and
pipelined4, the whole layer in 4 row pieces); `auto` times chunked2 and chunked4 beside the
ring (each with both of the MLP's candidates in that form); "chose" lists each candidate's
form.

Shapes are T x D with F = 4D: T in {2048, 8192, 16384} x D in {2048, 8192}, plus the medium
shape T=4096, D=2048, F=8192. A fresh process per row means every `auto` row decides again,
as a user's first compile does: it times each timing unit's plain program against each of
its forms on the devices (`--auto-decide model`: the cost model over a calibration measured
once per device kind and count). The table shows what auto timed per timing unit
(`AG+RS[tanh] 1139/1084*/1120/1150`: the all-gather and the reduce-scatter candidate timed
together with the tanh between them, plain / both rings / both chunked2 / both chunked4 in
µs, `*` on the form taken) and the seconds deciding took inside the first compile, with
where they went (`passes`: building the timing programs, `compile`,
`inputs`: making their inputs on the devices, `runs`: warm-up and timed rounds).
Per row: the step time of each variant (median of `--repeats` interleaved rounds), and the
three goals of issue #31: `auto` within 1.02x of the better of pass on and off; purejit's
default (`auto`) within 1.0x of the better JAX variant (`shard_map`, and `jit` with XLA's
windowed einsum on GPUs); and the communication-heavy shape (T=16384, D=2048) at least 1.10x
faster than JAX's `shard_map`. Writes DIR/tp_mlp_sweep_<platform>.md and .json; a row whose
process fails records the tail of its output. `python -m bench.tools.tp_mlp_fit DIR` sets
what auto timed against the measured on - off per row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SHAPES = [(t, d, 4 * d) for t in (2048, 8192, 16384) for d in (2048, 8192)] + [(4096, 2048, 8192)]
COMM_HEAVY = (16384, 2048, 8192)


def _shape(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.lower().split("x")]
    if len(parts) == 2:
        return parts[0], parts[1], 4 * parts[1]
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    raise argparse.ArgumentTypeError(f"shape {text!r}: write TxD or TxDxF")


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for the table, JSON and per-row logs")
    p.add_argument("--devices", default="2,4", help="mesh sizes, comma separated")
    p.add_argument("--shapes", default=None, help="TxD[xF],... (default: issue #31's seven)")
    p.add_argument("--cpu-devices", type=int, default=None, help="force host CPU devices")
    p.add_argument("--iters", type=int, default=None)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per row")
    p.add_argument(
        "--auto-alone",
        action="store_true",
        help="each row also runs auto with every candidate timed alone (as before timing "
        "units), listed under the table",
    )
    p.add_argument(
        "--forms",
        default="chunked2,chunked4,pipelined4",
        help="the pass's forms forced per row besides the ring ('' for none)",
    )
    p.add_argument(
        "--auto-decide",
        choices=("timed", "model"),
        default="timed",
        help="how auto decides: time the candidates (default) or the cost model",
    )
    return p.parse_args(argv)


def _run_row(args, n: int, shape, path: str) -> dict:
    t, d, f = shape
    cmd = [sys.executable, "-m", "bench.tp_mlp", "--devices", str(n), "--tokens", str(t)]
    cmd += ["--dmodel", str(d), "--dff", str(f), "--repeats", str(args.repeats), "--json", path]
    cmd += ["--auto-decide", args.auto_decide, "--forms", args.forms]
    cmd += ["--auto-alone"] if args.auto_alone else []
    if args.iters:
        cmd += ["--iters", str(args.iters)]
    if args.cpu_devices:
        cmd += ["--cpu-devices", str(args.cpu_devices)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        log, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        log = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        log, rc = log + f"\ntimed out after {args.timeout:.0f} s", -1
    wall = time.perf_counter() - start
    with open(path.replace(".json", ".log"), "w") as fh:
        fh.write(" ".join(cmd) + "\n\n" + log)
    if rc != 0 or not os.path.exists(path):
        return {"devices": n, "T": t, "D": d, "F": f, "error": log[-1500:], "wall_s": wall}
    with open(path) as fh:
        row = json.load(fh)
    row["wall_s"] = wall
    return row


def _goals(row: dict) -> dict:
    r = row["results"]
    ms = {k: v["step_s"] * 1e3 for k, v in r.items()}
    best_onoff = min(ms["purejit_on"], ms["purejit_off"])
    jax_names = [k for k in ms if k.startswith("jax")]
    best_jax = min(ms[k] for k in jax_names)
    forced = [k for k in ms if k.startswith("purejit_") and not k.startswith("purejit_auto")]
    best_forced = min(forced, key=ms.get)
    out = {
        "ms": ms,
        "auto_over_best_onoff": ms["purejit_auto"] / best_onoff,
        "best_forced": best_forced[len("purejit_") :],
        "auto_over_best_forced": ms["purejit_auto"] / ms[best_forced],
        "auto_over_best_jax": ms["purejit_auto"] / best_jax,
        "auto_chose": _chose(r),
        "better": "on" if ms["purejit_on"] < ms["purejit_off"] else "off",
        "windowed_loop": next(
            (r[k].get("windowed_loop") for k in jax_names if "windowed_loop" in r[k]), None
        ),
    }
    if "purejit_auto_alone" in ms:
        out["auto_alone_over_best_onoff"] = ms["purejit_auto_alone"] / best_onoff
    if (row["T"], row["D"], row["F"]) == COMM_HEAVY:
        out["jax_shard_map_over_auto"] = ms["jax"] / ms["purejit_auto"]
        out["jax_shard_map_over_best_forced"] = ms["jax"] / ms[best_forced]
    return out


def _chose(r: dict, auto: str = "purejit_auto") -> str:
    """ "on" (every candidate a ring), "off" (none), "k of m rings", or each candidate's form
    ("chunked4+chunked4") where a chunked form was taken; ", same HLO as V" where auto
    compiled the very program of forced variant V (a step time apart from V's is the run's
    noise)."""
    rings = r[auto]["rings"]
    total = r["purejit_on"]["rings"]
    forms = r[auto].get("forms") or []
    if any(f not in (None, "ring") for f in forms):
        chose = "+".join(f or "plain" for f in forms)
    else:
        chose = "off" if rings == 0 else "on" if rings == total else f"{rings} of {total} rings"
    same = r[auto].get("same_program_as")
    return chose + (f", same HLO as {same}" if same else "")


def timed_units(auto: dict) -> list[dict]:
    """auto's timed decisions, one per timing unit (the members of a joint unit carry the
    same figures: listed once)."""
    out, seen = [], set()
    for c in auto.get("timed", []):
        key = (c.get("timed_with") or c["kind"], c["plain_s"], c["ring_s"])
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _unit_name(c: dict) -> str:
    """A timing unit in short: AG (all-gather -> matmul), RS (matmul -> reduce-scatter),
    AG+RS a joint unit, [ops] its elementwise chain; "" for rows timed before units."""
    text = c.get("timed_with")
    if not text:
        return ""
    text = text.replace("all_gather->dot", "AG").replace("dot->reduce_scatter", "RS")
    text = text.replace(" + ", "+").replace(" alone", "")
    head, _, ops = text.partition(" with ")
    return f"{head}[{ops.replace(', ', ',')}] " if ops else f"{head} "


def _timed(auto: dict) -> str:
    """What auto timed: per timing unit its name, plain / ring (/ chunked2 / chunked4 ...)
    µs, `*` on the form it took; the seconds deciding took in the first compile and where
    they went (building the timing programs, compiling them, making their inputs, running
    them)."""

    def one(c: dict) -> str:
        forms = c.get("forms") or {"ring": {"ring_s": c["ring_s"]}}
        alts = [
            f"{d['ring_s'] * 1e6:.0f}{'*' if c['rewritten'] and c.get('form', 'ring') == f else ''}"
            for f, d in forms.items()
        ]
        return _unit_name(c) + "/".join([f"{c['plain_s'] * 1e6:.0f}", *alts])

    units = timed_units(auto)
    parts = [one(c) for c in units]
    secs = auto.get("calibration_s")
    if secs is None:
        return " ".join(parts)
    if not any("compile_s" in c for c in units):  # rows timed before compiles were recorded
        return " ".join(parts) + f" ({secs:.1f} s)"
    spent = {
        what: sum(c.get(f"{what}_s", 0.0) for c in units)
        for what in ("passes", "compile", "inputs", "runs")
    }
    where = ", ".join(f"{what} {v:.1f}" for what, v in spent.items())
    return " ".join(parts) + f" ({secs:.1f} s: {where})"


def _table(rows: list[dict]) -> str:
    first = next((r for r in rows if "results" in r), None)
    kind = f"{first['device_kind']} ({first['platform']}), {first['dtype']}" if first else "?"
    # the other forms forced in any row, in the order the rows have them
    chunked = list(
        dict.fromkeys(
            k[len("purejit_") :]
            for r in rows
            if "goals" in r
            for k in r["goals"]["ms"]
            if k.startswith(("purejit_chunked", "purejit_pipelined"))
        )
    )
    lines = [
        f"# Collective-matmul auto: issue #31's shapes on {kind}",
        "",
        "`python -m bench.tp_mlp_sweep --out DIR` (each row `python -m bench.tp_mlp` in a fresh "
        "process; median of interleaved rounds). Step times in ms. Goals: auto ≤ 1.02x the "
        "better of on/off; auto ≤ 1.0x the better JAX variant; T=16384 D=2048 ≥ 1.10x faster "
        "than JAX's shard_map.",
        "",
        f"| n | T | D | F | off | on | {' | '.join(chunked)}{' | ' if chunked else ''}"
        "auto (chose) | jax shard_map | jax jit | auto / best on-off | auto / best forced | "
        "auto / best JAX | windowed loop | auto timed plain/ring/chunked µs |",
        "|---:|---:|---:|---:|---:|---:|" + "---:|" * len(chunked) + "---:|" * 6 + "---|---|",
    ]
    for row in rows:
        head = f"| {row['devices']} | {row['T']} | {row['D']} | {row['F']} |"
        if "error" in row:
            err = row["error"].strip().splitlines()[-1:] or ["?"]
            lines.append(f"{head} failed: {err[0][:120]} |" + " |" * (10 + len(chunked)))
            continue
        g, ms = row["goals"], row["goals"]["ms"]
        jit = next((v for k, v in ms.items() if k.startswith("jax_jit")), float("nan"))
        cells = "".join(
            f"{ms['purejit_' + k]:.3f} | " if "purejit_" + k in ms else "- | " for k in chunked
        )
        lines.append(
            f"{head} {ms['purejit_off']:.3f} | {ms['purejit_on']:.3f} | {cells}"
            f"{ms['purejit_auto']:.3f} ({g['auto_chose']}) | {ms['jax']:.3f} | {jit:.3f} | "
            f"{g['auto_over_best_onoff']:.3f} | {g['auto_over_best_forced']:.3f} "
            f"({g['best_forced']}) | {g['auto_over_best_jax']:.3f} | "
            f"{g['windowed_loop']} | {_timed(row['results']['purejit_auto'])} |"
        )
    alone = [r for r in rows if "goals" in r and "purejit_auto_alone" in r["results"]]
    if alone:
        lines += ["", "auto with each candidate timed alone (as before timing units), same rows:"]
    for r in alone:
        g, a = r["goals"], r["results"]["purejit_auto_alone"]
        lines.append(
            f"- n={r['devices']} {r['T']}x{r['D']}x{r['F']}: {g['ms']['purejit_auto_alone']:.3f}"
            f" ms ({_chose(r['results'], 'purejit_auto_alone')}), / best on-off "
            f"{g['auto_alone_over_best_onoff']:.3f}; timed {_timed(a)}"
        )
    heavy = [r for r in rows if "goals" in r and "jax_shard_map_over_auto" in r["goals"]]
    if heavy:
        lines.append("")
        for r in heavy:
            lines.append(
                f"- n={r['devices']}, T=16384 D=2048: JAX shard_map / purejit auto = "
                f"{r['goals']['jax_shard_map_over_auto']:.3f}x (goal ≥ 1.10x); / the best "
                f"forced purejit variant ({r['goals']['best_forced']}) = "
                f"{r['goals']['jax_shard_map_over_best_forced']:.3f}x"
            )
    return "\n".join(lines) + "\n"


def _write(out: str, rows: list[dict]) -> str:
    """The table and JSON of the rows so far (written after every row, so a sweep cut short
    by a timeout keeps what it measured); returns the table."""
    first = next((r for r in rows if "results" in r), {"platform": "unknown"})
    base = os.path.join(out, f"tp_mlp_sweep_{first['platform']}")
    with open(base + ".json", "w") as fh:
        json.dump(rows, fh, indent=2)
    table = _table(rows)
    with open(base + ".md", "w") as fh:
        fh.write(table)
    return table


def main(argv=None):
    args = _parse(argv)
    os.makedirs(args.out, exist_ok=True)
    shapes = [_shape(s) for s in args.shapes.split(",")] if args.shapes else SHAPES
    rows = []
    for n in (int(x) for x in args.devices.split(",")):
        for shape in shapes:
            path = os.path.join(args.out, f"tp_mlp_n{n}_{'x'.join(map(str, shape))}.json")
            row = _run_row(args, n, shape, path)
            if "results" in row:
                row["goals"] = _goals(row)
            rows.append(row)
            _write(args.out, rows)
            print(f"n={n} shape={shape}: {'failed' if 'error' in row else 'ok'} "
                  f"({row['wall_s']:.0f} s)", flush=True)  # fmt: skip
    print(_write(args.out, rows))
    return rows


if __name__ == "__main__":
    main()
