"""The collective-matmul cost model against measured rows: for each `bench.tp_mlp` JSON in a
folder, the model's plain and ring estimates from the calibration that row measured, with
an extra fixed cost per ring step added, and whether the model then picks the faster of
the measured pass-off and pass-on programs.

    python -m bench.tools.tp_mlp_fit docs/benchmarks/gpu_logs/tp_mlp_sweep_s11_final \
        --extra-us 0,20,40,60

A row whose measured on and off differ by under 2% counts as right either way.
"""

from __future__ import annotations

import argparse
import glob
import json
import os


def estimate(n: int, t: int, d: int, f: int, cal: dict, extra_s: float) -> tuple[float, float]:
    """Seconds of the two rewrites of one layer (gather + dot, dot + scatter), plain and ring,
    by `passes.collective_matmul`'s formulas with `extra_s` added to each ring step."""
    plain = ring = 0.0
    for _ in range(2):
        moved = t * d * 2 * (n - 1) / n  # bf16
        t_comm = moved / cal["link_bytes_per_s"]
        t_comp = 2 * t * d * f / n / cal["flops_per_s"]
        lat = cal["step_latency_s"]
        t_coll = moved / (cal.get("collective_bytes_per_s") or cal["link_bytes_per_s"])
        plain += t_coll + t_comp + 2 * lat
        a, b = t_comm / (n - 1), t_comp / n
        step = max(a, b) + (1.0 - cal.get("overlap", 1.0)) * min(a, b) + lat + extra_s
        ring += t_comp / n + (n - 1) * step + lat
    return plain, ring


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--extra-us", default="0,20,40,60")
    args = p.parse_args(argv)
    rows = []
    for path in sorted(glob.glob(os.path.join(args.folder, "tp_mlp_n*.json"))):
        with open(path) as fh:
            d = json.load(fh)
        r = d["results"]
        rows.append((d, r["purejit_off"]["step_s"], r["purejit_on"]["step_s"]))
    for extra in (float(x) for x in args.extra_us.split(",")):
        wrong = []
        for d, off, on in rows:
            cal = d["results"]["purejit_auto"]["calibration"]
            plain, ring = estimate(d["devices"], d["T"], d["D"], d["F"], cal, extra * 1e-6)
            if (ring < plain) != (on < off) and abs(on / off - 1) >= 0.02:
                wrong.append(f"n={d['devices']} {d['T']}x{d['D']} (on/off {on / off:.2f})")
        print(f"extra {extra:g} us per ring step: {len(rows) - len(wrong)} of {len(rows)} right"
              + (f"; wrong: {', '.join(wrong)}" if wrong else ""))  # fmt: skip


if __name__ == "__main__":
    main()
