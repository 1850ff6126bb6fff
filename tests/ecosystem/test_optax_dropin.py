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


@pytest.mark.parametrize(
    ("model", "size", "names"),
    [
        ("linear", 9, ("adam", "sgd (momentum, nesterov)", "lion", "MultiSteps(adam)")),
        # the ReLU MLP's data is a closure constant (the layout pass once handed XLA its
        # transpose, another summation order) and MultiSteps divides every leaf by one
        # `n + 1` (CSE once shared it, and XLA then rounded those divides differently)
        ("mlp", 160, ("adam", "MultiSteps(adam)")),
    ],
)
def test_training_loops_equal_jax_bit_for_bit(check, model, size, names):
    """20 jitted steps per optimizer: purejit's parameters are JAX's bits."""
    rows = check.training_loops(300, {k: check.OPTIMIZERS[k] for k in names}, model)
    for name, r in rows.items():
        assert r["of"] == size, name
        assert r["differing"] == 0, f"{name}: {r}"


@pytest.mark.parametrize("module", ["_src/update_test.py", "schedules/_join_test.py"])
def test_optax_test_modules_pass_in_dropin_mode(check, module, tmp_path):
    """Optax's own test modules, run by pytest with drop-in mode on: every test JAX passes
    (all of these) passes."""
    (path,) = [p for p in check.test_modules("optax", None) if str(p).endswith(module)]
    record = check.run_module(path, "purejit", 1, 300, tmp_path / "record.json")
    results = {k: v for k, v in record["results"].items() if not k.startswith("_")}
    assert results and all(v == "passed" for v in results.values()), record["tail"]
