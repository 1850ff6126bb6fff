"""`python -m bench.tp_train_mp --cpu`: the data-parallel and fully sharded training steps as
two processes of one CPU device each (`purejit.distributed.initialize`, gloo collectives) end
with the parameters and losses of one process driving two devices, bit for bit."""

import json
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
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


def _write_run(folder, kind, pids, shards, losses, hlo):
    """Files as bench.tp_train_mp_worker writes them: shards {pid: {key: bits}}."""
    os.makedirs(folder, exist_ok=True)
    recs = []
    for pid in pids:
        np.savez(os.path.join(folder, f"{kind}_process{pid}.npz"), **shards[pid])
        step = {"losses": losses, "shapes": [[4, 2]], "local_replicas_differing": 0}
        step.update(compile_s=1.0, step_s=0.01, temp_bytes=0, argument_bytes=0, compiles=1)
        step.update(rerun_losses_equal=True, rerun_values_differing=0)
        recs.append({"dtype": "bfloat16", "steps": {kind: step}})
        if pid == 0:
            with open(os.path.join(folder, f"{kind}_process0.hlo.txt"), "w") as fh:
                fh.write(hlo)
    return recs


def test_compare_names_every_difference(tmp_path):
    # no processes: the parent's comparison of files shaped as the worker writes them
    from bench.tp_train_mp_compare import compare_kind

    w = np.arange(8, dtype=np.float32).reshape(4, 2).astype(ml_dtypes.bfloat16).view(np.uint16)
    one = _write_run(tmp_path / "one", "fsdp", [0], {0: {"p0_0": w}}, [2.0, 1.5], "a\nb = 1\n")
    halves = {0: {"p0_0": w[:2]}, 1: {"p0_2": w[2:]}}
    same = _write_run(tmp_path / "same", "fsdp", [0, 1], halves, [2.0, 1.5], "a\nb = 1\n")
    c = compare_kind("fsdp", str(tmp_path / "one"), str(tmp_path / "same"), one[0], same)
    assert c["passed"] and c["params_bit_equal"] and c["same_hlo"] and not c["notes"], c

    off = w.copy()
    off[3, 1] = np.array([9.0], ml_dtypes.bfloat16).view(np.uint16)[0]  # 7 -> 9
    halves = {0: {"p0_0": w[:2]}, 1: {"p0_2": off[2:]}}
    diff = _write_run(tmp_path / "diff", "fsdp", [0, 1], halves, [2.0, 1.25], "a\nb = 2\n")
    c = compare_kind("fsdp", str(tmp_path / "one"), str(tmp_path / "diff"), one[0], diff)
    assert not c["passed"] and not c["params_bit_equal"] and not c["losses_equal"]
    assert c["max_abs_param_diff"] == 2.0 and not c["same_hlo"]
    text = "\n".join(c["notes"])
    assert "1 of 8 parameter values differ" in text and "from step 1" in text, text
    assert "1 lines differ" in text and "b = 1  ->  ...b = 2" in text, text
