"""Every notebook in notebooks/ runs top to bottom without an error, on the CPU, in a kernel of
the interpreter running the tests; and each one matches its paired `.py` source."""

import importlib.util
import json
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ALL = sorted(NOTEBOOKS.glob("*.ipynb"))


def _pair_module():
    spec = importlib.util.spec_from_file_location("_pair", NOTEBOOKS / "_pair.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def kernel_env(tmp_path, monkeypatch):
    """A `python3` kernel spec that runs this interpreter (so the notebook sees the same
    installed purejit), found first through JUPYTER_PATH; JAX forced onto the CPU."""
    spec_dir = tmp_path / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": "Python 3 (purejit tests)", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv(
        "JUPYTER_PATH", str(tmp_path) + os.pathsep + os.environ.get("JUPYTER_PATH", "")
    )
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("MPLBACKEND", "Agg")


def test_there_is_a_quickstart():
    assert NOTEBOOKS / "quickstart.ipynb" in ALL


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_runs(path, kernel_env):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=300,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, errors
    ran = [c for c in nb.cells if c.cell_type == "code" and c.get("execution_count")]
    assert ran, "no code cell ran"


def test_notebooks_match_their_py_sources():
    pair = _pair_module()
    for py, nb in pair.pairs(NOTEBOOKS):
        assert nb.exists(), f"{nb.name} missing: run python notebooks/_pair.py"
        assert nb.read_text() == pair.render(py), f"{nb.name} is stale: run notebooks/_pair.py"


def test_percent_parser():
    pair = _pair_module()
    text = "# ---\n# jupyter:\n# ---\n\n# %% [markdown]\n# # Title\n#\n# text\n\n# %%\nx = 1\n\n"
    assert pair.parse_percent(text) == [("markdown", "# Title\n\ntext"), ("code", "x = 1")]
