"""Reverse and forward mode through shard_map, every collective's derivative against JAX:
8 CPU devices in a child process."""

import os

from _harness import run_cases

CASES = os.path.join(os.path.dirname(__file__), "cases_autodiff.py")


def test_autodiff_through_shard_map_on_8_devices():
    results = run_cases(CASES)
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    assert len(results) >= 7


TRAIN = os.path.join(os.path.dirname(__file__), "cases_autodiff_train.py")


def test_data_and_tensor_parallel_training_steps_on_8_devices():
    results = run_cases(TRAIN)
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    assert results
