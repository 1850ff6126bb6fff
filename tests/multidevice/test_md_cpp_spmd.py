"""SPMD programs in jaxlib's C++ dispatch on 8 CPU devices."""

import os

from _harness import run_cases

CASES = os.path.join(os.path.dirname(__file__), "cases_cpp_spmd.py")


def test_cpp_spmd_dispatch_on_8_devices():
    results = run_cases(CASES)
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    assert len(results) == 4
