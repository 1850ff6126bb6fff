"""The collective-matmul cost model against measured rows: for each `bench.tp_mlp` JSON in a
folder, the model's plain and ring estimates from the calibration that row measured (or with
its fixed costs replaced), and whether the model then picks the faster of the measured
pass-off and pass-on programs.

    python -m bench.tools.tp_mlp_fit DIR                          # as measured
    python -m bench.tools.tp_mlp_fit DIR --step-latency-us 40,60,80 --plain-latency-us 30 --rows
    python -m bench.tools.tp_mlp_fit DIR --extra-us 0,20,40,60

`--step-latency-us` sets the calibration's `step_latency_s` (a ring step's fixed cost),
`--plain-latency-us` its `plain_latency_s` (the plain program's), `--extra-us` adds to the
step's. Rows measured before the calibration timed a ring and a plain program (no
`plain_latency_s`, as in the session-11 logs) were priced with a bare transfer's cost `L` as
`step_latency_s`: two for the plain program, one per ring step and one more per ring; they
are read as `plain_latency_s = 2 L` and `step_latency_s = L n / (n - 1)`, the same estimates.
The estimates come from `purejit.passes.collective_matmul.estimate_seconds`, the pass's own
formulas. A row whose measured on and off differ by under 2% counts as right either way.

Rows whose `auto` timed its candidates (the default since `auto` times them; no calibration
in the row) are listed apart: what the timed programs gave (ring - plain, summed over the
timing units: a joint unit's members counted once) against the measured on - off, and
whether auto's program came within 2% of the better of on and off.

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

from bench.tp_mlp_sweep import timed_units
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
    """Per row with a calibration: the estimates, what the model picks and whether that is
    the faster."""
    out = []
    for d in rows:
        r = d["results"]
        if "calibration" not in r["purejit_auto"]:
            continue
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


def timed(rows: list[dict]) -> list[dict]:
    """Per row whose auto timed its candidates: the timed and the measured on - off, and
    whether auto came within 2% of the better of on and off."""
    out = []
    for d in rows:
        r = d["results"]
        auto = r["purejit_auto"]
        if "timed" not in auto:
            continue
        off, on = r["purejit_off"]["step_s"], r["purejit_on"]["step_s"]
        out.append({
            "row": d,
            "timed_on_minus_off": sum(c["ring_s"] - c["plain_s"] for c in timed_units(auto)),
            "measured_on_minus_off": on - off,
            "rings": auto["rings"],
            "auto_over_best": auto["step_s"] / min(on, off),
            "same_program_as": auto.get("same_program_as"),
            "seconds": auto.get("calibration_s"),
        })  # fmt: skip
    return out


def _timed_report(got: list[dict]) -> None:
    right = [g for g in got if g["auto_over_best"] <= 1.02]
    print(f"timed auto: within 1.02x of the better of on and off on {len(right)} of {len(got)}")
    for g in got:
        d = g["row"]
        print(
            f"  n={d['devices']} {d['T']}x{d['D']}x{d['F']}: timed on - off "
            f"{g['timed_on_minus_off'] * 1e6:.0f} us, measured "
            f"{g['measured_on_minus_off'] * 1e6:.0f} us; {g['rings']} rings (program of "
            f"{g['same_program_as'] or 'neither'}), auto / "
            f"best {g['auto_over_best']:.3f}; deciding took {g['seconds'] or 0:.2f} s"
        )


def _us(text: str | None) -> list:
    return [None] if not text else [float(x) * 1e-6 for x in text.split(",")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--step-latency-us", default=None, help="ring step fixed costs to try")
    p.add_argument("--plain-latency-us", default=None, help="plain program fixed costs to try")
    p.add_argument("--extra-us", default="0", help="added to each ring step's fixed cost")
    p.add_argument("--rows", action="store_true", help="print every row's estimates")
    args = p.parse_args(argv)
    rows = load(args.folder)
    if not rows:
        raise SystemExit(f"no tp_mlp_n*.json in {args.folder}")
    if timed(rows):
        _timed_report(timed(rows))
    if not decide(rows):
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
