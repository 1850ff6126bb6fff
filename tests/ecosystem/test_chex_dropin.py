"""chex in drop-in mode (a fast subset of tools/ecosystem_check.py): a script using chex's
asserts, chexify, dataclasses, variants and restrict_backends, and two of chex's own test
modules. Skips cleanly where chex is not installed."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("chex") is None, reason="chex is not installed"
)


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location(
        "_ecosystem_check", ROOT / "tools" / "ecosystem_check.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_chex_usage_runs_on_purejit(check):
    script = pathlib.Path(__file__).with_name("chex_usage.py")
    proc = subprocess.run(
        [sys.executable, "-m", "purejit", "run", str(script)],
        env=check._env("purejit", 1),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert "CHEX-OK" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]


@pytest.mark.parametrize(
    ("module", "passes"), [("dataclass_test.py", 43), ("variants_test.py", 99)]
)
def test_chex_test_modules_pass_in_dropin_mode(check, module, passes, tmp_path):
    """chex's own modules under drop-in mode: no failure, as many passes as under JAX (jax
    0.10.2: dataclass 43 and variants 99, the rest skipped there too)."""
    (path,) = [p for p in check.test_modules("chex", None) if p.name == module]
    record = check.run_module(path, "purejit", 1, 300, tmp_path / "record.json")
    results = {k: v for k, v in record["results"].items() if not k.startswith("_")}
    assert "failed" not in results.values(), record["tail"]
    assert sum(v == "passed" for v in results.values()) >= passes, record["tail"]
