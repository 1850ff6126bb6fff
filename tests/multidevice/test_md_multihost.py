"""Two processes on localhost (4 CPU devices each) run one shard_map program together,
through the PJRT distributed runtime (`purejit.distributed.initialize`, gloo collectives)."""

import os
import socket
import subprocess
import sys

from _harness import child_env

WORKER = os.path.join(os.path.dirname(__file__), "multihost_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_shard_map_across_two_processes():
    address = f"127.0.0.1:{_free_port()}"
    env = child_env(num_devices=4)
    procs = [
        subprocess.Popen(
            [sys.executable, WORKER, address, str(k)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for k in range(2)
    ]
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=180)
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for k, (p, out) in enumerate(zip(procs, outs)):
        tail = "\n".join(out.splitlines()[-25:])
        assert p.returncode == 0 and f"WORKER OK {k}" in out, f"process {k}:\n{tail}"
