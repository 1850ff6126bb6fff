"""Two processes whose measurements disagree compile the same collective-matmul program:
process 0's calibration is shared through the distributed key-value store."""

import json
import os
import tempfile

from _harness import run_processes

WORKER = os.path.join(os.path.dirname(__file__), "multihost_calibration_worker.py")


def test_processes_with_different_calibrations_compile_one_program():
    with tempfile.TemporaryDirectory() as d:
        run_processes(WORKER, d)
        got = []
        for k in range(2):
            with open(os.path.join(d, f"process-{k}.json")) as f:
                got.append(json.load(f))
    # process 0's figures (a costly plain program) make auto take the ring in both processes
    assert [g["rewritten"] for g in got] == [1, 1]
    assert "collective-permute" in got[0]["hlo"] and "all-gather(" not in got[0]["hlo"]
    assert got[0]["hlo"] == got[1]["hlo"]
    # the real measurement: process 0 measured, process 1 took part and uses its figures
    real = [{k: v for k, v in g["real"].items() if k != "source"} for g in got]
    assert real[0] == real[1] and real[0]["link_bytes_per_s"] > 0, real
    # the measured fixed costs are shared too (the ring and plain programs ran in both)
    assert real[0]["plain_latency_s"] is not None and real[0]["step_latency_s"] >= 0, real
