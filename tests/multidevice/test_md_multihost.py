"""Two processes on localhost (4 CPU devices each) run one shard_map program together,
through the PJRT distributed runtime (`purejit.distributed.initialize`, gloo collectives)."""

import os

from _harness import run_processes

WORKER = os.path.join(os.path.dirname(__file__), "multihost_worker.py")


def test_shard_map_across_two_processes():
    run_processes(WORKER)
