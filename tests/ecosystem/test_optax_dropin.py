"""A fast subset of tools/ecosystem_check.py for CI: Optax in drop-in mode (every `import jax`
of optax and of its tests is purejit). Skips cleanly where optax is not installed."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("optax") is None, reason="optax is not installed"
)


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location(
        "_ecosystem_check", ROOT / "tools" / "ecosystem_check.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_training_loops_equal_jax_bit_for_bit(check):
    """Least squares, 20 jitted steps per optimizer: purejit's parameters are JAX's bits."""
    optimizers = {k: check.OPTIMIZERS[k] for k in ("adam", "sgd (momentum, nesterov)", "lion")}
    rows = check.training_loops(300, optimizers, "linear")
    for name, r in rows.items():
        assert r["of"] == 9, name
        assert r["differing"] == 0, f"{name}: {r}"


@pytest.mark.parametrize("module", ["_src/update_test.py", "schedules/_join_test.py"])
def test_optax_test_modules_pass_in_dropin_mode(check, module, tmp_path):
    """Optax's own test modules, run by pytest with drop-in mode on: every test JAX passes
    (all of these) passes."""
    (path,) = [p for p in check.test_modules("optax", None) if str(p).endswith(module)]
    record = check.run_module(path, "purejit", 1, 300, tmp_path / "record.json")
    results = {k: v for k, v in record["results"].items() if not k.startswith("_")}
    assert results and all(v == "passed" for v in results.values()), record["tail"]
