"""The coverage list (tools/coverage.py): every public name of every public module of the
installed jax is present in drop-in mode or listed with a reason, README's table and
docs/coverage.md are current, and the per-version report says what differs between versions."""

import importlib.util
import json
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
    neither = [f"{m}.{n}" for m, info in result["modules"].items() for n in info["neither"]]
    assert not neither, (
        f"{len(neither)} JAX names are neither in purejit nor in "
        f"docs/coverage_unsupported.toml (add them with a reason): {neither}"
    )


def test_every_entry_has_a_reason_of_a_known_kind(coverage, result):
    for table, entries in coverage.load_unsupported().items():
        for name, entry in entries.items():
            head = entry.reason.split(":", 1)[0]
            assert ":" in entry.reason and len(entry.reason) > len(head) + 5, (
                f"[{table}] {name}: give the kind and the reason ('not planned: why')"
            )
    assert not result["unknown_tables"], (
        f"tables for modules this jax lacks, with entries not marked for another jax version: "
        f"{result['unknown_tables']}"
    )


def test_the_walk_reaches_every_public_namespace(result):
    walked = set(result["modules"])
    for name in ("jax", "jax.typing", "jax.dtypes", "jax.flatten_util", "jax.sharding",
                 "jax.stages", "jax.errors", "jax.custom_derivatives", "jax.example_libraries.stax",
                 "jax.experimental.checkify", "jax.scipy.special", "jax.scipy.stats.norm",
                 "jax.image", "jax.export", "jax.extend.core", "jax.nn.initializers"):  # fmt: skip
        assert name in walked, f"{name} is not walked"
    assert not [m for m in walked if any(p.startswith("_") for p in m.split("."))]


def test_committed_reports_of_other_jax_versions_are_covered(coverage, result):
    """The list and purejit also cover the jax versions whose reports are committed
    (docs/coverage/jax-<version>.json, written where that jax is installed)."""
    reports = sorted((ROOT / "docs" / "coverage").glob("jax-*.json"))
    others = [json.loads(p.read_text()) for p in reports]
    others = [r for r in others if r["jax"] != result["jax"]]
    if not others:
        pytest.skip("no report of another jax version is committed")
    for report in others:
        survey = coverage.survey(names_from=report)
        neither = [f"{m}.{n}" for m, i in survey["modules"].items() for n in i["neither"]]
        assert not neither, (
            f"jax {report['jax']}: names neither in purejit nor in the coverage list (add them "
            f'with jax = ">=..." where older versions lack them): {neither}'
        )


def test_readme_table_is_current(coverage, result):
    readme = (ROOT / "README.md").read_text()
    if f"<!-- against jax {result['jax']} -->" not in readme:
        # the counts depend on JAX's public names; the committed table is for one version
        pytest.skip(
            f"README's coverage table was generated against another jax than {result['jax']}"
        )
    assert coverage.readme_table(result) in readme, (
        "README's 'Coming from JAX' table is stale: run `python tools/coverage.py --readme`"
    )
    details = (ROOT / "docs" / "coverage.md").read_text()
    assert details == coverage.details_page(result), (
        "docs/coverage.md is stale: run `python tools/coverage.py --readme`"
    )
    # the modules checked name by name (which optional modules import depends on the machine)
    committed = json.loads((ROOT / "docs" / "coverage" / f"jax-{result['jax']}.json").read_text())
    now = coverage._report_json(result)
    names = [m for m, i in now["modules"].items() if i["whole"] is None and not i["error"]]
    assert names == [m for m in names if m in committed["modules"]]
    assert [committed["modules"][m] for m in names] == [now["modules"][m] for m in names], (
        f"docs/coverage/jax-{result['jax']}.json is stale: run "
        "`python tools/coverage.py --out docs/coverage/`"
    )


def test_a_missing_name_fails(coverage, result):
    """The check can fail: a module with a name neither present nor listed reports it."""
    info = coverage._survey_module("jax.numpy", {}, {}, result["jax"])
    assert "save" in info["neither"], "an empty list should leave jax.numpy.save uncovered"


def test_a_module_listed_as_a_whole_covers_its_names(coverage, result):
    whole = {"jax.image": coverage.Entry("not implemented yet: image resizing")}
    info = coverage._survey_module("jax.image", {}, whole, result["jax"])
    assert not info["neither"] and "resize" in info["listed"]
    assert coverage.kind_counts(info)["not implemented yet"] == len(info["names"]) > 0


def test_entries_for_another_jax_version_are_not_stale(coverage, result):
    E = coverage.Entry
    here = {
        "not_in_any_jax": E("not planned: x"),
        "only_in_jax_99": E("not planned: x", jax=">=99"),
        "ravel_pytree": E("not planned: x", jax="<0.1"),  # in this jax, so the range is wrong
    }
    info = coverage._survey_module("jax.flatten_util", here, {}, result["jax"])
    assert info["stale"] == ["not_in_any_jax", "ravel_pytree"]


@pytest.mark.parametrize(
    "version, spec, ok",
    [("0.10.2", None, True), ("0.10.2", ">=0.11", False), ("0.11.2", ">=0.11", True),
     ("0.12.0", ">=0.11,<0.12", False), ("0.11.2", "==0.11", True), ("0.12.0.dev1", "<0.12", False),
     ("0.10.2", "<=0.10", True)],
)  # fmt: skip
def test_version_ranges(coverage, version, spec, ok):
    assert coverage.version_in(version, spec) is ok


def test_an_unimportable_module_is_recorded(coverage):
    module, error = coverage._import_real("jax.no_such_module_here")
    assert module is None and error.startswith("not importable here: ModuleNotFoundError")


def test_version_reports_name_what_other_versions_lack(coverage, result, tmp_path):
    coverage.write_reports(result, tmp_path)
    mine = json.loads((tmp_path / f"jax-{result['jax']}.json").read_text())
    assert mine["modules"]["jax.numpy"]["present"] == result["modules"]["jax.numpy"]["present"]
    # another version's report whose jax.numpy lacks `sin` and has `new_name`
    other = json.loads(json.dumps(mine))
    other["jax"] = "9.9.9"
    other["modules"]["jax.numpy"]["names"] = [
        n for n in other["modules"]["jax.numpy"]["names"] if n != "sin"
    ] + ["new_name"]
    (tmp_path / "jax-9.9.9.json").write_text(json.dumps(other))
    coverage.write_reports(result, tmp_path)
    md = (tmp_path / f"jax-{result['jax']}.md").read_text()
    section = md.split(f"## In jax {result['jax']}, not in jax 9.9.9", 1)[1]
    assert "- `jax.numpy`: `sin`" in section.split("## ", 1)[0]
    assert "`new_name`" in md.split("## In jax 9.9.9, not in", 1)[1]
    assert (tmp_path / "jax-9.9.9.md").exists()


def test_a_declared_only_name_counts_as_a_gap(coverage, result):
    """A name drop-in mode has only as a declaration that raises is listed, not present."""
    E = coverage.Entry
    here = {"minimize": E("declared only: raises NotImplementedError")}
    info = coverage._survey_module("jax.scipy.optimize", here, {}, result["jax"])
    assert "minimize" not in info["present"] and "minimize" in info["listed"]
    assert not info["stale"] and coverage.kind_counts(info)["declared only"] == 1
    # an entry that says "declared only" for a name purejit does not have at all is stale
    info = coverage._survey_module(
        "jax.image", {"resize": E("declared only: x")}, {}, result["jax"]
    )
    assert info["stale"] == ["resize"]
