"""CI runs the benchmark suite once in --quick mode to keep it working (speed not asserted)."""

from __future__ import annotations

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


def test_step_profile_xla_options_reach_a_compile_after_another(monkeypatch):
    """purejit reads PUREJIT_XLA_OPTIONS once per process; a step_profile form with an
    `{xla_option=value}` suffix compiled after another form must still get its options."""
    import numpy as np

    import purejit
    from purejit.backend import pjrt

    monkeypatch.syspath_prepend(ROOT)
    monkeypatch.delenv("PUREJIT_XLA_OPTIONS", raising=False)
    from bench.tools.step_profile import xla_env

    purejit.jit(lambda x: x + 1)(np.ones(3, np.float32))  # an earlier form's compile
    assert pjrt.xla_option_overrides() == ()
    with xla_env("xla_cpu_enable_fast_math=false"):
        assert pjrt.xla_option_overrides() == (("xla_cpu_enable_fast_math", False),)
        assert float(purejit.jit(lambda x: x * 3)(np.ones(3, np.float32))[0]) == 3.0
    assert pjrt.xla_option_overrides() == ()
    assert "PUREJIT_XLA_OPTIONS" not in os.environ


def test_overlap_profile_counts_collective_time_beside_compute():
    from bench.tools.overlap_profile import device_summary

    # two calls: a gemm 0-10 with an all-gather 5-15 beside it, then a fusion 20-30 alone,
    # a second gemm 30-40 and a reduce-scatter 40-50 after it (not hidden)
    kernels = [
        ("sm90_gemm", 0, 10), ("ncclDevKernel_AllGather", 5, 15), ("loop_fusion", 20, 30),
        ("sm90_gemm", 30, 40), ("ncclDevKernel_ReduceScatter", 40, 50),
    ]  # fmt: skip
    s = device_summary(kernels, calls=2)
    assert s["span_us"] == 25.0  # 50 over 2 calls
    assert s["collective_us"] == 10.0 and s["compute_us"] == 15.0
    assert s["overlap_us"] == 2.5 and s["collective_hidden"] == 0.25
    assert s["idle_us"] == 2.5  # 15-20
    assert s["kernels"] == 2.5
