"""The data-parallel and fully sharded training steps as two processes (4 CPU devices each)
through `purejit.distributed.initialize`: both processes end with the parameters (the shards
each holds) and losses of the same two Adam steps run on one device in this process."""

import os
import sys

import numpy as np

import purejit
from _harness import run_processes
from bench import tp_train_model

WORKER = os.path.join(os.path.dirname(__file__), "multihost_train_worker.py")
sys.path.insert(0, os.path.dirname(__file__))
import multihost_train_worker as worker  # noqa: E402


def test_data_parallel_and_fsdp_steps_across_two_processes(tmp_path):
    run_processes(WORKER, str(tmp_path), timeout=240)

    # the same two steps on one device, here
    params, x, y = worker.inputs()
    steps = tp_train_model.make_steps(purejit, {}, worker.HEADS, worker.LAYERS)
    single = purejit.jit(steps["single"])
    state, losses = tp_train_model.init_state(params), []
    for _ in range(2):
        state, loss = single(state, x, y)
        losses.append(float(loss))
    want = [np.asarray(a) for a in purejit.tree_util.tree_leaves(state[0])]
    for k in range(2):
        got = np.load(tmp_path / f"process{k}.npz")
        for kind in ("dp", "fsdp"):
            np.testing.assert_allclose(got[f"{kind}_loss"], losses, rtol=1e-5, atol=1e-6)
            seen = 0
            for i, w in enumerate(want):
                for key in got.files:
                    if key.startswith(f"{kind}_p{i}_"):
                        start = int(key.rsplit("_", 1)[1])
                        part = got[key]
                        np.testing.assert_allclose(
                            part, w[start : start + len(part)], rtol=1e-4, atol=1e-5
                        )
                        seen += 1
            # dp: every parameter whole; fsdp: each process holds 4 of the 8 row blocks
            assert seen == len(want) * (1 if kind == "dp" else 4), (kind, seen)
