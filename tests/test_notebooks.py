"""Every notebook in notebooks/ runs top to bottom without an error, on the CPU, in a kernel of
the interpreter running the tests; and each one matches its paired `.py` source."""

import json
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ALL = sorted(NOTEBOOKS.glob("*.ipynb"))


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


def _cells(nb):
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_matches_its_py_source(path):
    """The `.py` (jupytext percent format) is the reviewed source; the `.ipynb` must hold the
    same cells. `make notebooks` (jupytext --sync) brings them in step."""
    jupytext = pytest.importorskip("jupytext")
    py = path.with_suffix(".py")
    assert py.exists(), f"{path.name} has no paired {py.name}"
    assert _cells(jupytext.read(path)) == _cells(jupytext.read(py)), (
        f"{path.name} and {py.name} differ: run make notebooks"
    )


def test_every_notebook_source_has_its_ipynb():
    for py in NOTEBOOKS.glob("*.py"):
        assert py.with_suffix(".ipynb").exists(), f"{py.name}: run make notebooks"
