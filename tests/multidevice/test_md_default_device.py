"""purejit.default_device, and eager ops on committed arrays, on 8 CPU devices."""

import os

from _harness import run_cases

CASES = os.path.join(os.path.dirname(__file__), "cases_default_device.py")


def test_default_device_on_8_devices():
    results = run_cases(CASES)
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    assert len(results) == 3
