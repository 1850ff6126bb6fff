"""The collective-matmul pass's timed `auto` decision: injected timings, caching (in memory,
in `cache_dir`, in a fresh process), several processes, numbers equal to the pass off."""

import json
import os
import subprocess
import sys
import tempfile

from _harness import child_env, run_cases, run_processes

HERE = os.path.dirname(__file__)


def test_timed_decisions_on_8_cpu_devices():
    results = run_cases(os.path.join(HERE, "cases_candidate_timing.py"))
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())


def test_persisted_decisions_are_reused_by_a_fresh_process():
    worker = os.path.join(HERE, "timing_cache_worker.py")
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o700)
        got = []
        for _ in range(2):
            proc = subprocess.run(
                [sys.executable, worker, d],
                env=child_env(num_devices=4),
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
            got.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    # one candidate, timed in each form of the default: the ring
    assert got[0]["timed"] == 1 and got[0]["sources"] == ["timed"], got
    assert got[1]["timed"] == 0 and got[1]["sources"] == ["loaded"], got
    assert got[0]["rewritten"] == got[1]["rewritten"] == 1, got


def test_processes_with_different_timings_compile_one_program():
    with tempfile.TemporaryDirectory() as d:
        run_processes(os.path.join(HERE, "multihost_timing_worker.py"), d)
        got = []
        for k in range(2):
            with open(os.path.join(d, f"process-{k}.json")) as f:
                got.append(json.load(f))
    # process 0's timings (the ring faster) make both processes take the ring
    assert [g["rewritten"] for g in got] == [1, 1], got
    assert "collective-permute" in got[0]["hlo"] and "all-gather(" not in got[0]["hlo"]
    assert got[0]["hlo"] == got[1]["hlo"]
    # the real timing before: process 0 timed, process 1 took part and uses its decision
    assert got[0]["real"]["source"] == "timed" and got[1]["real"]["source"] == "shared", got
    strip = [{k: v for k, v in g["real"].items() if k != "source"} for g in got]
    assert strip[0] == strip[1] and strip[0]["plain_s"] > 0, strip
