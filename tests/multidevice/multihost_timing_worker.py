"""One process of the two-process timed-decision test (started by
test_md_candidate_timing.py).

    python multihost_timing_worker.py COORDINATOR_ADDRESS PROCESS_ID OUT_DIR
First both processes take part in a real timing of the candidate and must end with process
0's decision. Then each is given different timings: process 0's ring is faster, process 1's
slower. Both must still compile the same program, process 0's choice, taken through the
distributed key-value store. Writes the compiled HLO and the decisions to
OUT_DIR/process-K.json; prints "WORKER OK <process id>".
"""

import json
import os
import sys

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit import distributed, lax
from purejit.compiler import calibration, candidate_timing
from purejit.passes import Pipeline
from purejit.passes.collective_matmul import CollectiveMatmul
from purejit.passes.pipeline import default_passes
from purejit.sharding import Mesh, NamedSharding
from purejit.sharding import PartitionSpec as P

# (plain, ring) seconds per process: the ring wins in process 0 and loses in process 1
TIMINGS = [(1.0, 0.5), (0.5, 1.0)]


def main(address: str, pid: int, out_dir: str):
    distributed.initialize(address, num_processes=2, process_id=pid, initialization_timeout=60)
    mesh = Mesh(np.array(purejit.devices()), ("i",))
    n, d = 8, 16
    x = np.arange(n * 2 * d, dtype=np.float32).reshape(n * 2, d) / 100
    w = np.eye(d, dtype=np.float32)

    def body(xb, w):
        return jnp.tanh(lax.all_gather(xb, "i", tiled=True) @ w)

    def compile_auto():
        f = purejit.jit(
            purejit.shard_map(
                body, mesh=mesh, in_specs=(P("i"), P()), out_specs=P(), check_vma=False
            ),
            passes=Pipeline([CollectiveMatmul(), *default_passes()]),
        )
        # every process passes the same global values, placed on its own devices
        xs = purejit.device_put(x, NamedSharding(mesh, P("i")))
        ws = purejit.device_put(w, NamedSharding(mesh, P()))
        low = f.lower(xs, ws)
        rep = next(r for r in low.records if r.name == "collective_matmul").report
        np.testing.assert_allclose(np.asarray(f(xs, ws)), np.tanh(x @ w), rtol=1e-5, atol=1e-5)
        return low, rep

    # the real timing: both processes run the programs, process 0's decision is used
    _, rep = compile_auto()
    (real,) = rep["candidates"]
    assert real["timed"] == ("timed" if pid == 0 else "shared"), real
    calibration.forget()
    timed = []

    def injected(plain, ring, budget_s, agree):
        timed.append(1)
        return TIMINGS[pid]

    candidate_timing.time_pair = injected
    low, rep = compile_auto()
    # every process takes part in the timing of each form of the default (the ring)
    assert timed == [1], timed
    (c,) = rep["candidates"]
    assert c["timed"] == ("timed" if pid == 0 else "shared") and c["ring_s"] == 0.5, c
    real = {k: real[k] for k in ("plain_s", "ring_s", "ring", "timed")}
    real["source"] = real.pop("timed")
    with open(os.path.join(out_dir, f"process-{pid}.json"), "w") as fh:
        json.dump({"hlo": low.compile().as_text(), "rewritten": rep["rewritten"], "real": real}, fh)
    print(f"WORKER OK {pid}", flush=True)
    distributed.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
