"""One process of the two-process calibration test (started by test_md_calibration.py).

    python multihost_calibration_worker.py COORDINATOR_ADDRESS PROCESS_ID OUT_DIR
First both take part in the real measurement and must end with process 0's figures. Then
each process is given different figures by its (replaced) measurement: process 0's plain
program has a fixed cost that makes the ring win, process 1's one that makes it lose. Both must still compile the same program, process 0's
choice, taken through the distributed key-value store. Writes the compiled HLO and the
pass's decisions to OUT_DIR/process-K.json; prints "WORKER OK <process id>".
"""

import json
import os
import sys

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit import distributed, lax
from purejit.compiler import calibration
from purejit.passes import Pipeline
from purejit.passes.collective_matmul import CollectiveMatmul
from purejit.passes.pipeline import default_passes
from purejit.sharding import Mesh, NamedSharding
from purejit.sharding import PartitionSpec as P

# the same link, matmul and ring step; process 0's plain program costs 1 s (the ring wins),
# process 1's nothing (the ring loses)
FIGURES = [
    {
        "link_bytes_per_s": 1e9,
        "flops_per_s": 1e9,
        "step_latency_s": 1e-3,
        "plain_latency_s": plain,
        "overlap": 1.0,
        "collective_bytes_per_s": None,
    }
    for plain in (1.0, 0.0)
]


def main(address: str, pid: int, out_dir: str):
    distributed.initialize(address, num_processes=2, process_id=pid, initialization_timeout=60)
    # the real measurement first: every process takes part, process 0's figures are used
    real, _ = calibration.calibration()
    assert real.source == ("measured" if pid == 0 else "shared"), real
    calibration.forget()
    measured = []

    def injected(devices):
        measured.append(len(devices))
        return dict(FIGURES[pid], seconds=0.0)

    calibration.measure = injected
    mesh = Mesh(np.array(purejit.devices()), ("i",))
    n, d = 8, 16
    x = np.arange(n * 2 * d, dtype=np.float32).reshape(n * 2, d) / 100
    w = np.eye(d, dtype=np.float32)

    def body(xb, w):
        return jnp.tanh(lax.all_gather(xb, "i", tiled=True) @ w)

    f = purejit.jit(
        purejit.shard_map(body, mesh=mesh, in_specs=(P("i"), P()), out_specs=P(), check_vma=False),
        passes=Pipeline([CollectiveMatmul(decide="model"), *default_passes()]),
    )
    # every process passes the same global values, placed on its own devices
    xs = purejit.device_put(x, NamedSharding(mesh, P("i")))
    ws = purejit.device_put(w, NamedSharding(mesh, P()))
    low = f.lower(xs, ws)
    rec = next(r for r in low.records if r.name == "collective_matmul")
    hlo = low.compile().as_text()
    out = np.asarray(f(xs, ws))
    np.testing.assert_allclose(out, np.tanh(x @ w), rtol=1e-5, atol=1e-5)
    # every process took part in the (injected) measurement; process 0's figures are used
    assert measured == [8], measured
    want = "measured" if pid == 0 else "shared"
    assert rec.report["calibration"]["source"] == want, rec.report
    assert rec.report["calibration"]["plain_latency_s"] == 1.0, rec.report
    with open(os.path.join(out_dir, f"process-{pid}.json"), "w") as fh:
        json.dump({"hlo": hlo, "rewritten": rec.report["rewritten"], "real": real.as_dict()}, fh)
    print(f"WORKER OK {pid}", flush=True)
    distributed.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
