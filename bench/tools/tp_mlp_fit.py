"""The collective-matmul cost model against measured rows: for each `bench.tp_mlp` JSON in a
folder, the model's plain and ring estimates from the calibration that row measured (or with
its fixed costs replaced), and whether the model then picks the faster of the measured
pass-off and pass-on programs.

    python -m bench.tools.tp_mlp_fit DIR                          # as measured
    python -m bench.tools.tp_mlp_fit DIR --step-latency-us 40,60,80 --plain-latency-us 30 --rows
    python -m bench.tools.tp_mlp_fit DIR --extra-us 0,20,40,60
    python -m bench.tools.tp_mlp_fit DIR --check                  # per row, Markdown
    python -m bench.tools.tp_mlp_fit DIR --anchor 3072x4096x4096  # what an anchor must read
    python -m bench.tools.tp_mlp_fit DIR --calibrations CAL.json  # each process's figures

`--step-latency-us` sets the calibration's `step_latency_s` (a ring step's fixed cost),
`--plain-latency-us` its `plain_latency_s` (the plain program's), `--extra-us` adds to the
step's. Rows measured before the calibration timed a ring and a plain program (no
`plain_latency_s`, as in the session-11 logs) were priced with a bare transfer's cost `L` as
`step_latency_s`: two for the plain program, one per ring step and one more per ring; they
are read as `plain_latency_s = 2 L` and `step_latency_s = L n / (n - 1)`, the same estimates.
The estimates come from `purejit.passes.collective_matmul.estimate_seconds`, the pass's own
formulas. A row whose measured on and off differ by under 2% counts as right either way.

With `--rows`, each row also shows the fixed costs' share of the decision, per rewrite:
`(n - 1) * step_latency - plain_latency` (what the calibration gives), the value below which
the model takes the ring, and the value at which the model's ring - plain equals the
measured on - off (what the row itself asks).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
from dataclasses import replace

import numpy as np

from purejit.passes.collective_matmul import Calibration, estimate_seconds

FIELDS = (
    "link_bytes_per_s",
    "flops_per_s",
    "step_latency_s",
    "overlap",
    "collective_bytes_per_s",
    "plain_latency_s",
)


def calibration(measured: dict, n: int, step_s=None, plain_s=None, extra_s: float = 0.0):
    """The row's calibration (`n` devices) with the ring step's fixed cost set to `step_s`
    and the plain program's to `plain_s` (None: as measured), `extra_s` added to the step's."""
    rec = {k: measured[k] for k in FIELDS if k in measured}
    if rec.get("plain_latency_s") is None:  # a bare transfer's cost, from before
        lat = rec["step_latency_s"]
        rec["plain_latency_s"], rec["step_latency_s"] = 2 * lat, lat * n / (n - 1)
    if step_s is not None:
        rec["step_latency_s"] = step_s
    if plain_s is not None:
        rec["plain_latency_s"] = plain_s
    rec["step_latency_s"] += extra_s
    return Calibration(**rec)


def estimate(n: int, t: int, d: int, f: int, cal: Calibration) -> tuple[float, float]:
    """Seconds of the two rewrites of one layer (all-gather + dot, dot + reduce-scatter),
    plain and ring, for `bench.tp_mlp`'s bf16 MLP of T x D tokens and a D x F hidden layer."""
    moved = t * d * 2 * (n - 1) / n  # both collectives move the T x D activations
    flops = 2 * t * d * f / n  # both matmuls: T x D x F/n per device
    plain, ring = estimate_seconds(moved, flops, n, cal)
    return 2 * plain, 2 * ring


def load(folder: str) -> list[dict]:
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "tp_mlp_n*.json"))):
        with open(path) as fh:
            rows.append(json.load(fh))
    return rows


def decide(rows: list[dict], step_s=None, plain_s=None, extra_s: float = 0.0) -> list[dict]:
    """Per row: the estimates, what the model picks and whether that is the faster."""
    out = []
    for d in rows:
        r = d["results"]
        off, on = r["purejit_off"]["step_s"], r["purejit_on"]["step_s"]
        cal = calibration(r["purejit_auto"]["calibration"], d["devices"], step_s, plain_s, extra_s)
        plain, ring = estimate(d["devices"], d["T"], d["D"], d["F"], cal)
        pick_ring = ring < plain
        # the fixed costs' share: ring - plain = free + 2 ((n - 1) step - plain latency)
        free = estimate(d["devices"], d["T"], d["D"], d["F"], replace(cal, step_latency_s=0.0,
                        plain_latency_s=0.0))  # fmt: skip
        out.append({
            "row": d, "plain": plain, "ring": ring, "pick_ring": pick_ring,
            "on_over_off": on / off, "cal": cal,
            "right": pick_ring == (on < off) or abs(on / off - 1) < 0.02,
            "break_even": (free[0] - free[1]) / 2,
            "implied": ((on - off) - (free[1] - free[0])) / 2,
        })  # fmt: skip
    return out


RATES = ("link_bytes_per_s", "flops_per_s", "collective_bytes_per_s", "overlap")


def median_rates(rows: list[dict]) -> dict[int, dict]:
    """Per mesh size, the median over its rows' calibrations of every rate and the overlap."""
    by_n: dict[int, list[dict]] = {}
    for d in rows:
        by_n.setdefault(d["devices"], []).append(d["results"]["purejit_auto"]["calibration"])
    return {n: {k: float(np.median([c[k] for c in cals])) for k in RATES}
            for n, cals in by_n.items()}  # fmt: skip


def sweep_intercept(rows: list[dict]) -> dict[int, float | None]:
    """Per mesh size, D from the pass on - pass off of its rows: per (D, F) group a line over
    T, all groups through one intercept, half of it (two rewrites a row). Least squares
    weighted by 1 / the pass-off time: a row's noise grows with its time (a 15 ms row's 1%
    is 150 us, many times the fixed costs)."""
    out = {}
    for n in sorted({d["devices"] for d in rows}):
        mine = [d for d in rows if d["devices"] == n]
        groups = sorted({(d["D"], d["F"]) for d in mine})
        if len({(d["D"], d["F"], d["T"]) for d in mine}) < len(groups) + 1:
            out[n] = None  # one T per group: no line to take an intercept from
            continue
        a = np.zeros((len(mine), 1 + len(groups)))
        y = np.zeros(len(mine))
        for i, d in enumerate(mine):
            r = d["results"]
            a[i, 0] = 1.0
            a[i, 1 + groups.index((d["D"], d["F"]))] = d["T"]
            y[i] = r["purejit_on"]["step_s"] - r["purejit_off"]["step_s"]
            a[i], y[i] = a[i] / r["purejit_off"]["step_s"], y[i] / r["purejit_off"]["step_s"]
        out[n] = float(np.linalg.lstsq(a, y, rcond=None)[0][0]) / 2
    return out


def check(rows: list[dict]) -> str:
    """The Markdown table of `--check`."""
    med = median_rates(rows)
    inter = sweep_intercept(rows)
    asked: dict[int, float] = {}
    for g in decide(rows):
        asked.setdefault(g["row"]["devices"], []).append(g["implied"])
    asked = {n: float(np.median(v)) for n, v in asked.items()}
    lines = [
        "| n | T x D x F | on / off | faster | ring below (own rates) | ring below (median "
        "rates) | D measured | auto picks | D asked (median) | picks | D intercept | picks |",
        "|---:|---|---:|---|---:|---:|---:|---|---:|---|---:|---|",
    ]
    us = 1e6
    for d in sorted(rows, key=lambda d: (d["devices"], d["D"], d["T"])):
        n = d["devices"]
        r = d["results"]
        ratio = r["purejit_on"]["step_s"] / r["purejit_off"]["step_s"]
        faster = "either" if abs(ratio - 1) < 0.02 else ("on" if ratio < 1 else "off")
        cal = calibration(r["purejit_auto"]["calibration"], n, 0.0, 0.0)
        evens = []
        for c in (cal, replace(cal, **med[n])):
            plain, ring = estimate(n, d["T"], d["D"], d["F"], c)
            evens.append((plain - ring) / 2)
        own = calibration(r["purejit_auto"]["calibration"], n)
        measured = (n - 1) * own.step_latency_s - own.plain_latency_s
        cells = []
        for k, dd in enumerate((measured, asked[n], inter[n])):
            if dd is None:
                cells.append("- | -")
                continue
            picks = ["on" if dd < e else "off" for e in evens]
            if k == 0:  # the row's own calibration: what auto did, own rates only
                picks = picks[:1]
            right = all(p == faster for p in picks) or faster == "either"
            cells.append(f"{dd * us:.0f} us | {'/'.join(picks)}{'' if right else ' WRONG'}")
        lines.append(
            f"| {n} | {d['T']} x {d['D']} x {d['F']} | {ratio:.3f} | {faster} | "
            f"{evens[0] * us:.0f} us | {evens[1] * us:.0f} us | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines) + "\n"


def _be(n: int, moved: float, flops: float, cal: Calibration) -> float:
    """The model's break-even fixed cost per rewrite: plain - ring with no fixed costs."""
    free = replace(cal, step_latency_s=0.0, plain_latency_s=0.0)
    plain, ring = estimate_seconds(moved, flops, n, free)
    return plain - ring


def anchor_be(n: int, anchor, cal: Calibration, itemsize: int = 2) -> float:
    """`_be` of the anchor program's rewrites (`rows x k` shards, `k x f` per device)."""
    rows, k, f = anchor
    return _be(n, itemsize * rows * k * (n - 1), 2 * n * rows * k * f, cal)


def anchor_window(rows: list[dict], anchor, itemsize: int = 2) -> dict[int, dict]:
    """Per mesh size: the (low, high) seconds between which the anchor program's ring -
    plain per layer decides every row right (rows whose on and off differ by under 2% count
    either way), with the median rates ("median") and each row's own ("own"); and the rows'
    own on - off per layer at the anchor's ring block ("rows_at_anchor", None where no two
    rows of one D bracket it)."""
    med = median_rates(rows)
    out = {}
    for n in sorted({d["devices"] for d in rows}):
        mine = [d for d in rows if d["devices"] == n]
        res = {}
        for label in ("median", "own"):
            lo, hi = -float("inf"), float("inf")
            for d in mine:
                r = d["results"]
                on, off = r["purejit_on"]["step_s"], r["purejit_off"]["step_s"]
                if abs(on / off - 1) < 0.02:
                    continue
                cal = calibration(r["purejit_auto"]["calibration"], n, 0.0, 0.0)
                if label == "median":
                    cal = replace(cal, **med[n])
                row_be = _be(
                    n, d["T"] * d["D"] * 2 * (n - 1) / n, 2 * d["T"] * d["D"] * d["F"] / n, cal
                )
                edge = 2 * (row_be - anchor_be(n, anchor, cal, itemsize))
                if on < off:  # the ring must be chosen: ring - plain (anchor) below edge
                    hi = min(hi, edge)
                else:
                    lo = max(lo, edge)
            res[label] = (lo, hi)
        res["rows_at_anchor"] = _interpolated(mine, anchor[0] * anchor[1] * itemsize, n)
        out[n] = res
    return out


def _interpolated(rows: list[dict], block: float, n: int) -> float | None:
    """The rows' on - off per layer at ring block `block` (bytes per device), linear between
    the two rows of one (D, F) that bracket it."""
    for group in sorted({(d["D"], d["F"]) for d in rows}):
        pts = sorted(
            (d["T"] * d["D"] * 2 / n, d["results"]["purejit_on"]["step_s"]
             - d["results"]["purejit_off"]["step_s"])
            for d in rows if (d["D"], d["F"]) == group
        )  # fmt: skip
        for (b0, y0), (b1, y1) in zip(pts, pts[1:]):
            if b0 <= block <= b1:
                return y0 + (y1 - y0) * (block - b0) / (b1 - b0)
    return None


def anchor_report(rows: list[dict], anchor) -> str:
    lines = [
        f"Anchor {'x'.join(map(str, anchor))}: its measured ring - plain per layer must lie in",
    ]
    for n, res in anchor_window(rows, anchor).items():
        cells = [
            f"{lab} rates {_fmt_us(res[lab][0])} to {_fmt_us(res[lab][1])}"
            for lab in ("median", "own")
        ]
        at = res["rows_at_anchor"]
        seen = "-" if at is None else f"{at * 1e6:.0f} us"
        lines.append(f"  n={n}: {'; '.join(cells)}; the rows' own on - off there: {seen}")
    return "\n".join(lines) + "\n"


def _fmt_us(v: float) -> str:
    return f"{v * 1e6:.0f} us" if abs(v) != float("inf") else ("-inf" if v < 0 else "+inf")


def calibrations_report(rows: list[dict], recs: list[dict]) -> str:
    """Markdown: per measured calibration, D and which rows of its mesh size it decides
    wrong."""
    lines = [
        "| n | method | D = (n-1) step - plain | seconds | rows right | wrong |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for m in recs:
        if "error" in m:
            continue
        n = m["devices"]
        mine = [d for d in rows if d["devices"] == n]
        if not mine:
            continue
        cal = {k: m[k] for k in FIELDS}
        got = decide([_with_calibration(d, cal) for d in mine])
        wrong = [f"{g['row']['T']}x{g['row']['D']}" for g in got if not g["right"]]
        dd = (n - 1) * m["step_latency_s"] - m["plain_latency_s"]
        lines.append(
            f"| {n} | {m.get('method', 'remainder')} | {dd * 1e6:.1f} us | "
            f"{m['seconds']:.2f} | {len(got) - len(wrong)} of {len(got)} | "
            f"{', '.join(wrong) or '-'} |"
        )
    return "\n".join(lines) + "\n"


def _with_calibration(row: dict, cal: dict) -> dict:
    auto = dict(row["results"]["purejit_auto"], calibration=cal)
    return dict(row, results=dict(row["results"], purejit_auto=auto))


def _us(text: str | None) -> list:
    return [None] if not text else [float(x) * 1e-6 for x in text.split(",")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--step-latency-us", default=None, help="ring step fixed costs to try")
    p.add_argument("--plain-latency-us", default=None, help="plain program fixed costs to try")
    p.add_argument("--extra-us", default="0", help="added to each ring step's fixed cost")
    p.add_argument("--rows", action="store_true", help="print every row's estimates")
    p.add_argument("--check", action="store_true", help="the per-row decision check (Markdown)")
    p.add_argument("--anchor", default=None, help="RxKxF: the window an anchor must read")
    p.add_argument("--calibrations", default=None, help="a tp_mlp_calibrations_*.json to try")
    args = p.parse_args(argv)
    rows = load(args.folder)
    if not rows:
        raise SystemExit(f"no tp_mlp_n*.json in {args.folder}")
    if args.check or args.anchor or args.calibrations:
        if args.check:
            print(check(rows), end="")
        if args.anchor:
            print(anchor_report(rows, tuple(int(v) for v in args.anchor.split("x"))), end="")
        if args.calibrations:
            with open(args.calibrations) as fh:
                print(calibrations_report(rows, json.load(fh)), end="")
        return
    for step_s in _us(args.step_latency_us):
        for plain_s in _us(args.plain_latency_us):
            for extra_s in _us(args.extra_us):
                _report(decide(rows, step_s, plain_s, extra_s), step_s, plain_s, extra_s, args.rows)


def _report(got: list[dict], step_s, plain_s, extra_s, per_row: bool) -> None:
    what = ", ".join(
        f"{name} {'as measured' if v is None else f'{v * 1e6:g} us'}"
        for name, v in (("step latency", step_s), ("plain latency", plain_s))
    )
    wrong = [
        f"n={g['row']['devices']} {g['row']['T']}x{g['row']['D']} (on/off {g['on_over_off']:.2f})"
        for g in got
        if not g["right"]
    ]
    print(
        f"{what}, extra {extra_s * 1e6:g} us: {len(got) - len(wrong)} of {len(got)} right"
        + (f"; wrong: {', '.join(wrong)}" if wrong else "")
    )
    if per_row:
        for g in got:
            d, cal = g["row"], g["cal"]
            print(
                f"  n={d['devices']} {d['T']}x{d['D']}x{d['F']}: step "
                f"{cal.step_latency_s * 1e6:.1f} us, plain {cal.plain_latency_s * 1e6:.1f} us; "
                "estimates plain "
                f"{g['plain'] * 1e3:.3f} ms, ring {g['ring'] * 1e3:.3f} ms -> "
                f"{'on' if g['pick_ring'] else 'off'}; measured on/off {g['on_over_off']:.3f}"
                + ("" if g["right"] else "  WRONG")
            )
            fixed = (d["devices"] - 1) * cal.step_latency_s - cal.plain_latency_s
            print(
                f"    (n-1) step - plain latency: {fixed * 1e6:.0f} us; the ring is chosen "
                f"below {g['break_even'] * 1e6:.0f} us; the measured on - off asks "
                f"{g['implied'] * 1e6:.0f} us"
            )


if __name__ == "__main__":
    main()
