"""The coverage list (tools/coverage.py): every public name of the JAX namespaces purejit
mirrors is present in purejit or listed with a reason, and README's table is current."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location("_coverage_tool", ROOT / "tools" / "coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def result(coverage):
    return coverage.survey()


def test_every_name_present_or_listed(result):
    neither = [f"{ns}.{n}" for ns, r in result.items() for n in r["neither"]]
    assert not neither, (
        f"{len(neither)} JAX names are neither in purejit nor in "
        f"docs/coverage_unsupported.toml (add them with a reason): {neither}"
    )


def test_every_listed_name_has_a_reason(coverage):
    for ns, names in coverage.load_unsupported().items():
        assert ns in coverage.NAMESPACES, f"unknown namespace [{ns}] in the coverage list"
        for name, reason in names.items():
            assert isinstance(reason, str) and len(reason) > 5, f"{ns}.{name}: no reason given"


def test_readme_table_is_current(coverage, result):
    readme = (ROOT / "README.md").read_text()
    import jax

    if f"<!-- against jax {jax.__version__} -->" not in readme:
        # the counts depend on JAX's public names; the committed table is for one version
        pytest.skip(
            f"README's coverage table was generated against another jax than {jax.__version__}"
        )
    assert coverage.readme_table(result) in readme, (
        "README's 'Coming from JAX' table is stale: run `python tools/coverage.py --readme`"
    )
    details = (ROOT / "docs" / "coverage.md").read_text()
    assert details == coverage.details_page(result), (
        "docs/coverage.md is stale: run `python tools/coverage.py --readme`"
    )


def test_a_missing_name_fails(coverage):
    """The check can fail: a namespace with a name neither present nor listed is reported."""
    survey = coverage.survey({"jax.numpy": {}})
    assert survey["jax.numpy"]["neither"], "an empty list should leave jax.numpy names uncovered"
