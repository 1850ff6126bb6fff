"""purejit.make_array_from_* / live_arrays / copy_to_host_async on 8 CPU devices."""

import os

from _harness import run_cases

CASES = os.path.join(os.path.dirname(__file__), "cases_global_arrays.py")


def test_global_arrays_on_8_devices():
    results = run_cases(CASES)
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    assert len(results) == 3
