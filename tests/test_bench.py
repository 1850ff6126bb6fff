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
