"""One process of the two-process data-parallel training step (test_md_autodiff_multihost.py).

    python multihost_train_worker.py COORDINATOR_ADDRESS PROCESS_ID OUT_DIR
Each process has 4 forced CPU devices: the `dp` mesh axis spans 8 devices over both
processes. The step is `bench/tp_train.py`'s data-parallel one (value_and_grad of each
device's batch shard, pmean of the gradients) with the parameters donated; the batch is
fed as each process's own half. Writes the new parameters and the loss of two steps to
OUT_DIR/process<ID>.npz and prints "WORKER OK <process id>".
"""

import os
import sys

import numpy as np

import purejit
from purejit import distributed
from purejit.sharding import Mesh, NamedSharding
from purejit.sharding import PartitionSpec as P

from bench import tp_train

LAYERS, BATCH, SEQ, WIDTH, HEADS, MLP = 1, 8, 8, 32, 8, 64


def inputs():
    rng = np.random.default_rng(0)
    params = tp_train.init_params(LAYERS, WIDTH, MLP, rng)
    x = rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32)
    y = rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32)
    return params, x, y


def main(address: str, pid: int, out_dir: str):
    distributed.initialize(address, num_processes=2, process_id=pid, initialization_timeout=60)
    devs = purejit.devices()
    assert len(devs) == 8 and len(distributed.local_devices()) == 4, devs
    mesh = Mesh(np.array(devs), ("dp",))
    steps = tp_train.make_steps(purejit, {"dp": mesh}, HEADS, LAYERS)
    params, x, y = inputs()
    rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("dp"))
    params = purejit.tree_util.tree_map(lambda a: purejit.device_put(a, rep), params)
    xs, ys = purejit.device_put(x, split), purejit.device_put(y, split)
    local = {d.id for d in distributed.local_devices()}
    assert {s.device.id for s in xs.buffer.addressable_shards} == local
    step = purejit.jit(steps["dp"], donate_argnums=0)
    losses = []
    for _ in range(2):
        params, loss = step(params, xs, ys)
        losses.append(np.asarray(loss.buffer.addressable_shards[0].data))
    leaves = purejit.tree_util.tree_leaves(params)
    out = {f"p{k}": np.asarray(a.buffer.addressable_shards[0].data) for k, a in enumerate(leaves)}
    for k, a in enumerate(leaves):  # replicated: every local copy holds the same values
        for s in a.buffer.addressable_shards:
            np.testing.assert_array_equal(np.asarray(s.data), out[f"p{k}"])
    np.savez(os.path.join(out_dir, f"process{pid}.npz"), loss=np.stack(losses), **out)
    print(f"WORKER OK {pid}", flush=True)
    distributed.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
