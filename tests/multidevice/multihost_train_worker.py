"""One process of the two-process training steps (test_md_autodiff_multihost.py).

    python multihost_train_worker.py COORDINATOR_ADDRESS PROCESS_ID OUT_DIR
Each process has 4 forced CPU devices: the `dp` mesh axis spans 8 devices over both
processes. The steps are `bench/tp_train.py`'s data-parallel one (value_and_grad of each
device's batch shard, pmean of the gradients) and its fully sharded one (parameters and Adam
moments split over the 8 devices, all-gathered for use, gradients reduce-scattered), with the
state donated; the batch is fed as each process's own half. Writes the new parameters (the
shards this process holds, with their global index) and the loss of two Adam steps to
OUT_DIR/process<ID>.npz and prints "WORKER OK <process id>".
"""

import os
import sys

import numpy as np

import purejit
from purejit import distributed
from purejit.sharding import Mesh
from purejit.sharding import PartitionSpec as P

from bench import tp_train_model

LAYERS, BATCH, SEQ, WIDTH, HEADS, MLP = 1, 8, 8, 32, 8, 64


def inputs():
    rng = np.random.default_rng(0)
    params = tp_train_model.init_params(LAYERS, WIDTH, MLP, rng)
    x = rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32)
    y = rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32)
    return params, x, y


def main(address: str, pid: int, out_dir: str):
    distributed.initialize(address, num_processes=2, process_id=pid, initialization_timeout=60)
    devs = purejit.devices()
    assert len(devs) == 8 and len(distributed.local_devices()) == 4, devs
    meshes = {a: Mesh(np.array(devs), (a,)) for a in ("dp", "fsdp")}
    steps = tp_train_model.make_steps(purejit, meshes, HEADS, LAYERS)
    params, x, y = inputs()
    out = {}
    local = {d.id for d in distributed.local_devices()}
    for kind in ("dp", "fsdp"):
        specs = tp_train_model.state_specs(P, kind, LAYERS)
        sh = tp_train_model.shardings(purejit, meshes[kind], specs)
        put = purejit.tree_util.tree_map
        state, xs, ys = (put(purejit.device_put, a, s) for a, s in zip(
            (tp_train_model.init_state(params), x, y), sh))  # fmt: skip
        assert {s.device.id for s in xs.buffer.addressable_shards} == local
        step = purejit.jit(steps[kind], donate_argnums=0)
        losses = []
        for _ in range(2):
            state, loss = step(state, xs, ys)
            losses.append(np.asarray(loss.buffer.addressable_shards[0].data))
        out[f"{kind}_loss"] = np.stack(losses)
        for k, a in enumerate(purejit.tree_util.tree_leaves(state[0])):
            for s in a.buffer.addressable_shards:  # rows start:stop of parameter k
                start = s.index[0].start or 0 if s.index else 0
                key = f"{kind}_p{k}_{start}"
                if key in out:  # replicated: every local copy holds the same values
                    np.testing.assert_array_equal(np.asarray(s.data), out[key])
                out[key] = np.asarray(s.data)
    np.savez(os.path.join(out_dir, f"process{pid}.npz"), **out)
    print(f"WORKER OK {pid}", flush=True)
    distributed.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
