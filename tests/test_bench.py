"""CI runs the benchmark suite once in --quick mode to keep it working (speed not asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_quick_runs_every_workload(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (report,) = tmp_path.glob("*_quick.md")  # cpu_quick.md, gpu_quick.md, ...
    plat = report.name[: -len("_quick.md")]
    md = report.read_text()
    for name in (
        "complex_activation",
        "tiny_ops_chain",
        "mlp_dead_matmul",
        "layernorm_linear_gelu_residual",
        "transformer_12l",
        "scan_rnn",
        "dispatch_tiny",
    ):
        assert f"| {name} |" in md, f"{name} missing from the report"
    assert "Errors:" not in md, md
    assert (tmp_path / f"{plat}_quick_steady.png").stat().st_size > 1000


def test_tp_mlp_fit_decides_the_session_11_rows_as_documented(monkeypatch):
    """docs/benchmarks/multigpu_s12.md: the s11 calibrations decide 8 of 11 rows right; with
    (n - 1) step - plain latency in 42-93 us every row is right, below it the T=8192 D=2048
    row at n = 2 is not, above it the T=16384 one."""
    monkeypatch.syspath_prepend(ROOT)
    from bench.tools import tp_mlp_fit

    rows = tp_mlp_fit.load(os.path.join(ROOT, "docs/benchmarks/gpu_logs/tp_mlp_sweep_s11_final"))
    assert len(rows) == 11

    def wrong(step_us=None, plain_us=None):
        us = (None if v is None else v * 1e-6 for v in (step_us, plain_us))
        got = tp_mlp_fit.decide(rows, *us)
        return sorted((g["row"]["devices"], g["row"]["T"]) for g in got if not g["right"])

    assert wrong() == [(2, 2048), (2, 4096), (2, 8192)]
    assert wrong(100, 30) == [] and wrong(45, 0) == []
    assert wrong(70, 30) == [(2, 8192)]
    assert wrong(126, 30) == [(2, 16384)]


def test_tp_mlp_fit_check_decides_the_session_12_rows(monkeypatch):
    """docs/benchmarks/multigpu_s12.md, session 13: with the fixed costs' share D that the
    s12 sweep's own timings ask (31 us at n = 2 as the median of its rows, 33 us as the
    intercept of on - off over T), every row whose on and off differ by more than 2% is
    decided right, with each row's rates and with the median rates; the rows that decide
    D at n = 2 allow 23-48 us (own rates)."""
    monkeypatch.syspath_prepend(ROOT)
    from bench.tools import tp_mlp_fit

    rows = tp_mlp_fit.load(os.path.join(ROOT, "docs/benchmarks/gpu_logs/tp_mlp_sweep_s12"))
    assert len(rows) == 11
    inter = tp_mlp_fit.sweep_intercept(rows)
    assert 25e-6 < inter[2] < 45e-6 and inter[4] > 100e-6, inter
    table = tp_mlp_fit.check(rows)
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines()[2:]]
    assert len(cells) == 11
    # as measured in session 12 (remainders): T=4096 took the ring, T=16384 kept the plain
    wrong = [(c[0], c[1]) for c in cells if "WRONG" in c[7]]
    assert wrong == [("2", "4096 x 2048 x 8192"), ("2", "16384 x 2048 x 8192")], wrong
    # with the D the sweep asks, every row
    assert not any("WRONG" in c[9] or "WRONG" in c[11] for c in cells), table

    # the window at n = 2: below 23 us T=8192 D=2048 takes the ring, above 48 us T=16384
    # D=2048 keeps the plain program
    def wrong(d_us):
        got = tp_mlp_fit.decide(rows, d_us * 1e-6, 0.0)
        return sorted((g["row"]["T"], g["row"]["D"]) for g in got
                      if not g["right"] and g["row"]["devices"] == 2)  # fmt: skip

    assert wrong(31) == [] and wrong(25) == [] and wrong(47) == []
    assert (8192, 2048) in wrong(20) and wrong(50) == [(16384, 2048)]


def test_tp_mlp_sweep_measures_the_calibration_in_fresh_processes(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "bench.tp_mlp_sweep", "--out", str(tmp_path), "--cpu-devices",
         "2", "--devices", "2", "--calibrations", "1", "--shapes", "none"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (tmp_path / "tp_mlp_calibrations_cpu.md").read_text()
    assert "| 2 |" in md and "failed" not in md, md
    (rec,) = json.loads((tmp_path / "tp_mlp_calibrations_cpu.json").read_text())
    assert rec["devices"] == 2 and rec["ring_small_s"] > 0 and rec["seconds"] > 0, rec
