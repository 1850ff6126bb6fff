"""purejit.pmap (jit of shard_map over a 1-D mesh of local devices) against jax.pmap: 8 CPU
devices in a child process."""

import os

from _harness import run_cases

CASES = os.path.join(os.path.dirname(__file__), "cases_pmap.py")


def test_pmap_on_8_devices():
    results = run_cases(CASES)
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    assert len(results) >= 6
