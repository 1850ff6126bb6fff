"""`python -m bench.tp_train_mp --cpu`: the data-parallel and fully sharded training steps as
two processes of one CPU device each (`purejit.distributed.initialize`, gloo collectives) end
with the parameters and losses of one process driving two devices, bit for bit."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _gloo_available() -> bool:
    from jaxlib import _jax

    return hasattr(_jax, "make_gloo_tcp_collectives")


def test_two_processes_equal_one_process_bit_for_bit(tmp_path):
    if not _gloo_available():
        pytest.skip("this jaxlib has no gloo collectives: no cross-process CPU programs")
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "bench.tp_train_mp", "--cpu", "--quick", "--processes", "2"]
    cmd += ["--layers", "1", "--check-steps", "2", "--iters", "1", "--repeats", "1"]
    cmd += ["--timeout", "150", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "tp_train_mp_cpu_quick.json") as fh:
        (r,) = json.load(fh)["results"]
    assert not r["failures"], "\n".join(r["failures"])
    assert r["psum_probe_equal"]
    for kind in ("dp", "fsdp"):
        c = r["steps"][kind]
        assert c["params_bit_equal"] and c["max_abs_param_diff"] == 0.0, (kind, c["notes"])
        assert c["losses_equal"] and len(c["multi_losses"]) == 2, (kind, c["notes"])
        assert c["passed"] and c["same_hlo"], (kind, c["notes"])
        assert c["single_step_s"] > 0 and c["multi_step_s"] > 0
    md = (tmp_path / "tp_train_mp_cpu_quick.md").read_text()
    assert "| 2 | dp | yes | 0 | yes |" in md and "| 2 | fsdp | yes | 0 | yes |" in md, md
