"""The data-parallel training step as two processes (4 CPU devices each) through
`purejit.distributed.initialize`: both processes end with the parameters and losses of the
same two steps run on one device in this process."""

import os
import sys

import numpy as np

import purejit
from _harness import run_processes
from bench import tp_train

WORKER = os.path.join(os.path.dirname(__file__), "multihost_train_worker.py")
sys.path.insert(0, os.path.dirname(__file__))
import multihost_train_worker as worker  # noqa: E402


def test_data_parallel_step_across_two_processes(tmp_path):
    run_processes(WORKER, str(tmp_path), timeout=240)

    # the same two steps on one device, here
    params, x, y = worker.inputs()
    mesh = purejit.sharding.Mesh(np.array(purejit.devices()[:1]), ("dp",))
    steps = tp_train.make_steps(purejit, {"dp": mesh}, worker.HEADS, worker.LAYERS)
    single = purejit.jit(steps["single"])
    losses = []
    for _ in range(2):
        params, loss = single(params, x, y)
        losses.append(float(loss))
    want = [np.asarray(a) for a in purejit.tree_util.tree_leaves(params)]
    for k in range(2):
        got = np.load(tmp_path / f"process{k}.npz")
        np.testing.assert_allclose(got["loss"], losses, rtol=1e-5, atol=1e-6)
        for i, w in enumerate(want):
            np.testing.assert_allclose(got[f"p{i}"], w, rtol=1e-4, atol=1e-5)
