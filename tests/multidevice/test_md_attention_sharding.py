"""Fused attention per device in a partitioned jit (FSDP through in_shardings), on 8 CPU
devices (`cases_attention_sharding.py`)."""

import os

from _harness import run_cases

CASES = os.path.join(os.path.dirname(__file__), "cases_attention_sharding.py")


def test_attention_sharding_on_8_devices():
    results = run_cases(CASES)
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    assert len(results) >= 4
