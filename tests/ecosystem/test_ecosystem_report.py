"""tools/ecosystem_report.py: its comparison of two runs' arrays (bit-exact count, worst
ulp, the library's tolerance, errors, chains compared by their statistics), a program whose
library is missing reported as "not installed", and a real run of the cheapest program
(lineax, under JAX and in drop-in mode) whose row agrees with the committed
docs/ecosystem_report.md."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import ecosystem_report as er  # noqa: E402

TOL = er.Tolerance(1e-5, 1e-8, "test")


def _row(part, want, got, parts=None):
    return er.compare_part(part, parts or (part,), want, got, TOL)


def test_compare_counts_exact_arrays_and_worst_ulp():
    part = er.Part("p", ("a", "b", "n"))
    w = {"a": np.float32([1.0, 2.0]), "b": np.float32([4.0, -4.0]), "n": np.int32([3])}
    g = dict(w, b=np.float32([4.0, np.nextafter(np.float32(-4.0), np.float32(0))]))
    row = _row(part, w, g)
    assert (row["arrays"], row["exact"], row["result"]) == (3, 2, "pass")
    assert row["worst"] == "b" and row["worst_ulp"] == 0.5  # half an ulp of the scale, 4
    assert er._fmt_ulp(row) == "0.5 (`b`)"


@pytest.mark.parametrize(
    "got,why",
    [
        ({"a": np.float32([1.0, 2.1])}, "beyond the tolerance"),
        ({"a": np.float32([1.0])}, "float32[1] vs float32[2]"),
        ({"a": np.float64([1.0, 2.0])}, "float64[2] vs float32[2]"),
        ({}, "only under JAX"),
    ],
)
def test_compare_fails_beyond_tolerance_and_on_shape_dtype_or_missing_arrays(got, why):
    row = _row(er.Part("p", ("a",)), {"a": np.float32([1.0, 2.0])}, got)
    assert row["result"] == "fail" and why in row["failures"][0]


def test_compare_integers_exactly_and_errors_against_jax():
    part = er.Part("p", ("n", "leak_error"))
    want = {"n": np.int32([3]), "leak_error": np.array("TraceContextError")}
    assert _row(part, want, dict(want))["result"] == "pass"
    assert _row(part, want, dict(want, n=np.int32([4])))["result"] == "fail"
    # JAX itself must raise the expected error: both sides silent is a failure
    quiet = {"n": np.int32([3]), "leak_error": np.array("")}
    assert "expected 'TraceContextError'" in _row(part, quiet, dict(quiet))["failures"][0]


def test_compare_statistical_parts_by_mean_and_sd():
    part = er.Part("chain", ("d_",), statistical=True)
    x = np.random.default_rng(0).normal(2.0, 0.3, 200).astype(np.float32)
    tol = er.Tolerance(0.0, 0.1, "test")
    near = er.compare_part(part, (part,), {"d_x": x}, {"d_x": x[::-1] + 0.05}, tol)
    assert near["result"] == "pass" and er._fmt_ulp(near) == "chains part"
    far = er.compare_part(part, (part,), {"d_x": x}, {"d_x": x + 0.2}, tol)
    assert far["result"] == "fail" and "mean" in far["failures"][0]


def test_each_array_belongs_to_the_part_with_the_longest_prefix():
    solve, grad = er.Part("solve", ("lu",)), er.Part("grad", ("lu_grad",))
    arrays = {"lu": np.ones(2), "lu_grad_a": np.ones(2)}
    assert _row(solve, arrays, arrays, (solve, grad))["arrays"] == 1
    assert _row(grad, arrays, arrays, (solve, grad))["arrays"] == 1


def test_missing_library_is_reported_not_installed(tmp_path):
    prog = er.Program("ghost", "_none.py", ("purejit_no_such_library",), TOL,
                      (er.Part("a part", ("x",)),))  # fmt: skip
    rows = er.report_program(prog, tmp_path, timeout=5)
    assert [r["result"] for r in rows] == ["not installed"]
    doc = tmp_path / "r.md"
    er.write_doc(rows, doc, er.versions())
    assert "| `_none.py` | a part | | | | not installed (purejit_no_such_library) |" in (
        doc.read_text()
    )


def _table_rows(text: str, file: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith(f"| `{file}` |")
    ]


@pytest.mark.skipif(importlib.util.find_spec("lineax") is None, reason="lineax is missing")
def test_report_of_lineax_runs_and_agrees_with_the_committed_doc(tmp_path):
    doc = tmp_path / "report.md"
    assert er.main(["--only", "lineax", "--doc", str(doc), "--results", str(tmp_path)]) == 0
    fresh = _table_rows(doc.read_text(), "_sci_lineax_program.py")
    assert len(fresh) == 2 and all(r[-1] == "pass" for r in fresh), fresh
    assert all(r[2] == r[3] for r in fresh)  # every array bit for bit
    committed = (ROOT / "docs" / "ecosystem_report.md").read_text()
    versions = re.search(r"lineax (\S+),", committed)
    if versions and versions.group(1) == er._version("lineax"):
        assert _table_rows(committed, "_sci_lineax_program.py") == fresh
