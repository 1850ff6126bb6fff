"""The collective-matmul cost model over issue #31's shapes: `bench.tp_mlp` once per shape and
mesh size, each in a fresh process, gathered into one table.

    python -m bench.tp_mlp_sweep --out DIR                       # n = 2 and 4 GPUs
    python -m bench.tp_mlp_sweep --out DIR --devices 2 --shapes 2048x2048
    python -m bench.tp_mlp_sweep --out DIR --cpu-devices 8 --devices 2,4 --shapes 512x256
    python -m bench.tp_mlp_sweep --out DIR --devices 2,4 --calibrations 5 --shapes none
    python -m bench.tp_mlp_sweep --out DIR --devices 2 --calibrations 5 \
        --calibration-method anchor,remainder        # rows with anchor, both calibrated

Shapes are T x D with F = 4D: T in {2048, 8192, 16384} x D in {2048, 8192}, plus the medium
shape T=4096, D=2048, F=8192. A fresh process per row means every `auto` row measures its
calibration again (at most once per device kind and count), as a user's first compile does.
Per row: the step time of each variant (median of `--repeats` interleaved rounds), and the
three goals of issue #31: `auto` within 1.02x of the better of pass on and off; purejit's
default (`auto`) within 1.0x of the better JAX variant (`shard_map`, and `jit` with XLA's
windowed einsum on GPUs); and the communication-heavy shape (T=16384, D=2048) at least 1.10x
faster than JAX's `shard_map`. Writes DIR/tp_mlp_sweep_<platform>.md and .json; a row whose
process fails records the tail of its output.

`--calibrations K` first measures the calibration alone in K fresh processes per mesh size
(`purejit.backend.calibration.measure`, every figure and program time it takes) and tables
how much its figures vary between processes, and (n - 1) * step latency - plain latency,
what decides a shape with the fixed costs (DIR/tp_mlp_calibrations_<platform>.md and .json).
`--shapes none` runs only that.

`--calibration-method M[,M2...]` sets `PUREJIT_CALIBRATION_METHOD` (how `auto` measures its
figures: "remainder", session 12's default, or "anchor") for every row, which uses the first
method listed, and measures `--calibrations K` processes of each method listed, the methods
taking turns, so their figures and seconds compare within one call. `python -m
bench.tools.tp_mlp_fit DIR --calibrations DIR/tp_mlp_calibrations_<platform>.json` then
decides every row with each process's figures.
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
        "--calibrations",
        type=int,
        default=0,
        help="also measure the calibration alone in this many fresh processes per n",
    )
    p.add_argument(
        "--calibration-method",
        default=None,
        help="PUREJIT_CALIBRATION_METHOD for the rows (the first) and the calibrations (each)",
    )
    p.add_argument("--measure-calibration", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _methods(args) -> list:
    """The calibration methods asked for ([None]: purejit's default)."""
    return args.calibration_method.split(",") if args.calibration_method else [None]


def _env(method) -> dict:
    env = dict(os.environ)
    if method:
        env["PUREJIT_CALIBRATION_METHOD"] = method
    return env


def _measure_child(args) -> None:
    """In a fresh process: the calibration of the first `--measure-calibration` devices,
    written to `--json`."""
    if args.cpu_devices:
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "")
            + f" --xla_force_host_platform_device_count={args.cpu_devices}"
        )
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from purejit.backend import calibration, pjrt

    devices = list(pjrt.devices())[: args.measure_calibration]
    m = calibration.measure(devices)
    m["device_kind"], m["platform"] = str(devices[0].device_kind), devices[0].platform
    with open(args.json, "w") as fh:
        json.dump(m, fh, indent=2)


def _calibrations(args, n: int) -> list[dict]:
    """`args.calibrations` measurements of the calibration on `n` devices per method, each in
    a fresh process (as a user's first `auto` compile measures it), the methods in turn."""
    out = []
    for k in range(args.calibrations):
        for method in _methods(args):
            path = os.path.join(args.out, f"calibration_n{n}_{method or 'default'}_{k}.json")
            cmd = [sys.executable, "-m", "bench.tp_mlp_sweep", "--out", args.out, "--json",
                   path, "--measure-calibration", str(n)]  # fmt: skip
            if args.cpu_devices:
                cmd += ["--cpu-devices", str(args.cpu_devices)]
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=args.timeout, env=_env(method)
                )
                ok = proc.returncode == 0 and os.path.exists(path)
                tail = (proc.stdout + proc.stderr)[-1500:]
            except subprocess.TimeoutExpired:
                ok, tail = False, f"timed out after {args.timeout:.0f} s"
            if ok:
                with open(path) as fh:
                    rec = json.load(fh)
                rec["devices"] = n
                out.append(rec)
            else:
                out.append({"devices": n, "method": method, "error": tail})
            print(f"calibration n={n} {method or 'default'} #{k}: {'ok' if ok else 'failed'}",
                  flush=True)  # fmt: skip
    return out


def _spread(m: dict) -> str:
    """(slowest - fastest) / median of the anchor's ring and plain rounds."""
    got = []
    for key in ("ring_rounds_s", "plain_rounds_s"):
        v = sorted(m.get(key) or [])
        if v:
            got.append((v[-1] - v[0]) / v[len(v) // 2])
    return f"{max(got):.3f}" if got else "-"


CAL_COLUMNS = (  # (title, key or function of the record, scale, format)
    ("method", lambda m: m.get("method", "remainder"), None, ""),
    ("flops TFLOP/s", "flops_per_s", 1e-12, ".3g"),
    ("link GB/s", "link_bytes_per_s", 1e-9, ".3g"),
    ("collective GB/s", "collective_bytes_per_s", 1e-9, ".3g"),
    ("overlap", "overlap", 1.0, ".2f"),
    ("step latency us", "step_latency_s", 1e6, ".1f"),
    ("plain latency us", "plain_latency_s", 1e6, ".1f"),
    ("(n-1) step - plain us",
     lambda m: (m["devices"] - 1) * m["step_latency_s"] - m["plain_latency_s"], 1e6, ".1f"),
    ("ring / plain ms",
     lambda m: f"{m['ring_s'] * 1e3:.3f} / {m['plain_s'] * 1e3:.3f}", None, ""),
    ("ring - plain us", lambda m: m["ring_s"] - m["plain_s"], 1e6, ".1f"),
    ("spread", _spread, None, ""),
    ("seconds (compiles)",
     lambda m: f"{m['seconds']:.2f} ({m.get('compile_seconds', float('nan')):.2f})", None, ""),
)  # fmt: skip


def _cal_table(recs: list[dict]) -> str:
    lines = [
        "# Collective-matmul calibration, measured in fresh processes",
        "",
        "`python -m bench.tp_mlp_sweep --calibrations K`: each row one process's "
        "`purejit.backend.calibration.measure`. ring / plain: one MLP layer's rings and its "
        "plain program (per repetition); spread: the largest (slowest - fastest) / median of "
        "the anchor's ring and plain rounds; seconds include the compiles (budget 2 s).",
        "",
        "| n | " + " | ".join(c[0] for c in CAL_COLUMNS) + " |",
        "|---:|" + "---:|" * len(CAL_COLUMNS),
    ]
    for m in recs:
        if "error" in m:
            lines.append(f"| {m['devices']} | failed: {m['error'].strip()[-120:]!r} |")
            continue
        cells = []
        for _, key, scale, fmt in CAL_COLUMNS:
            v = key(m) if callable(key) else m[key]
            cells.append(v if scale is None else format(v * scale, fmt))
        lines.append(f"| {m['devices']} | " + " | ".join(cells) + " |")
    lines.append("")
    groups = sorted({(m["devices"], m.get("method") or "remainder") for m in recs})
    for n, method in groups:
        got = [m for m in recs if m["devices"] == n and "error" not in m
               and (m.get("method") or "remainder") == method]  # fmt: skip
        if len(got) > 1:
            d = [((n - 1) * m["step_latency_s"] - m["plain_latency_s"]) * 1e6 for m in got]
            rp = [(m["ring_s"] - m["plain_s"]) * 1e6 for m in got]
            secs = [m["seconds"] for m in got]
            lines.append(
                f"- n={n} {method}: (n-1) step - plain latency {min(d):.1f} to {max(d):.1f} us, "
                f"ring - plain {min(rp):.1f} to {max(rp):.1f} us over {len(got)} processes; "
                f"calibration {min(secs):.2f}-{max(secs):.2f} s"
            )
    return "\n".join(lines) + "\n"


def _run_row(args, n: int, shape, path: str) -> dict:
    t, d, f = shape
    cmd = [sys.executable, "-m", "bench.tp_mlp", "--devices", str(n), "--tokens", str(t)]
    cmd += ["--dmodel", str(d), "--dff", str(f), "--repeats", str(args.repeats), "--json", path]
    if args.iters:
        cmd += ["--iters", str(args.iters)]
    if args.cpu_devices:
        cmd += ["--cpu-devices", str(args.cpu_devices)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=args.timeout, env=_env(_methods(args)[0])
        )
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
    row["calibration_method"] = _methods(args)[0] or "default"
    return row


def _goals(row: dict) -> dict:
    r = row["results"]
    ms = {k: v["step_s"] * 1e3 for k, v in r.items()}
    best_onoff = min(ms["purejit_on"], ms["purejit_off"])
    jax_names = [k for k in ms if k.startswith("jax")]
    best_jax = min(ms[k] for k in jax_names)
    out = {
        "ms": ms,
        "auto_over_best_onoff": ms["purejit_auto"] / best_onoff,
        "auto_over_best_jax": ms["purejit_auto"] / best_jax,
        "auto_chose": "on" if r["purejit_auto"]["rings"] else "off",
        "better": "on" if ms["purejit_on"] < ms["purejit_off"] else "off",
        "windowed_loop": next(
            (r[k].get("windowed_loop") for k in jax_names if "windowed_loop" in r[k]), None
        ),
    }
    if (row["T"], row["D"], row["F"]) == COMM_HEAVY:
        out["jax_shard_map_over_auto"] = ms["jax"] / ms["purejit_auto"]
    return out


def _table(rows: list[dict]) -> str:
    first = next((r for r in rows if "results" in r), None)
    kind = f"{first['device_kind']} ({first['platform']}), {first['dtype']}" if first else "?"
    lines = [
        f"# Collective-matmul cost model: issue #31's shapes on {kind}",
        "",
        "`python -m bench.tp_mlp_sweep --out DIR` (each row `python -m bench.tp_mlp` in a fresh "
        "process; median of interleaved rounds). Step times in ms. Goals: auto ≤ 1.02x the "
        "better of on/off; auto ≤ 1.0x the better JAX variant; T=16384 D=2048 ≥ 1.10x faster "
        "than JAX's shard_map.",
        "",
        f"auto's calibration method: {(first or {}).get('calibration_method', 'default')}",
        "",
        "| n | T | D | F | off | on | auto (chose) | jax shard_map | jax jit | "
        "auto / best on-off | auto / best JAX | windowed loop |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        head = f"| {row['devices']} | {row['T']} | {row['D']} | {row['F']} |"
        if "error" in row:
            err = row["error"].strip().splitlines()[-1:] or ["?"]
            lines.append(f"{head} failed: {err[0][:120]} |" + " |" * 8)
            continue
        g, ms = row["goals"], row["goals"]["ms"]
        jit = next((v for k, v in ms.items() if k.startswith("jax_jit")), float("nan"))
        lines.append(
            f"{head} {ms['purejit_off']:.3f} | {ms['purejit_on']:.3f} | "
            f"{ms['purejit_auto']:.3f} ({g['auto_chose']}) | {ms['jax']:.3f} | {jit:.3f} | "
            f"{g['auto_over_best_onoff']:.3f} | {g['auto_over_best_jax']:.3f} | "
            f"{g['windowed_loop']} |"
        )
    heavy = [r for r in rows if "goals" in r and "jax_shard_map_over_auto" in r["goals"]]
    if heavy:
        lines.append("")
        for r in heavy:
            lines.append(
                f"- n={r['devices']}, T=16384 D=2048: JAX shard_map / purejit auto = "
                f"{r['goals']['jax_shard_map_over_auto']:.3f}x (goal ≥ 1.10x)"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = _parse(argv)
    if args.measure_calibration:
        return _measure_child(args)
    os.makedirs(args.out, exist_ok=True)
    if args.calibrations:
        recs = [
            m for n in (int(x) for x in args.devices.split(",")) for m in _calibrations(args, n)
        ]
        plat = next((m["platform"] for m in recs if "platform" in m), "unknown")
        base = os.path.join(args.out, f"tp_mlp_calibrations_{plat}")
        with open(base + ".json", "w") as fh:
            json.dump(recs, fh, indent=2)
        table = _cal_table(recs)
        with open(base + ".md", "w") as fh:
            fh.write(table)
        print(table, flush=True)
    if args.shapes == "none":
        return []
    shapes = [_shape(s) for s in args.shapes.split(",")] if args.shapes else SHAPES
    rows = []
    for n in (int(x) for x in args.devices.split(",")):
        for shape in shapes:
            path = os.path.join(args.out, f"tp_mlp_n{n}_{'x'.join(map(str, shape))}.json")
            row = _run_row(args, n, shape, path)
            if "results" in row:
                row["goals"] = _goals(row)
            rows.append(row)
            print(f"n={n} shape={shape}: {'failed' if 'error' in row else 'ok'} "
                  f"({row['wall_s']:.0f} s)", flush=True)  # fmt: skip
    first = next((r for r in rows if "results" in r), {"platform": "unknown"})
    base = os.path.join(args.out, f"tp_mlp_sweep_{first['platform']}")
    with open(base + ".json", "w") as fh:
        json.dump(rows, fh, indent=2)
    table = _table(rows)
    with open(base + ".md", "w") as fh:
        fh.write(table)
    print(table)
    return rows


if __name__ == "__main__":
    main()
