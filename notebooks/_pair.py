"""Keep each notebook and its paired `.py` (jupytext "percent" format) in step.

    python notebooks/_pair.py          # write every notebooks/NAME.ipynb from NAME.py
    python notebooks/_pair.py --check  # exit 1 if any .ipynb differs from its .py

The `.py` file is the source that is reviewed and edited; the `.ipynb` is generated from it
without outputs (jupytext reads the same format: `jupytext --sync` works too).
"""

from __future__ import annotations

import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
_CELL = re.compile(r"^# %%(?: \[(markdown)\])?\s*$")


def parse_percent(text: str) -> list[tuple[str, str]]:
    """Cells of a percent-format script as (kind, source) pairs; kind is code or markdown."""
    lines = text.splitlines()
    if lines and lines[0] == "# ---":  # the jupytext header
        end = lines.index("# ---", 1)
        lines = lines[end + 1 :]
    cells: list[tuple[str, list[str]]] = []
    for line in lines:
        m = _CELL.match(line)
        if m:
            cells.append(("markdown" if m.group(1) else "code", []))
        elif cells:
            cells[-1][1].append(line)
    out = []
    for kind, body in cells:
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        if kind == "markdown":
            body = [b[2:] if b.startswith("# ") else b.lstrip("#") for b in body]
        out.append((kind, "\n".join(body)))
    return out


def to_notebook(cells: list[tuple[str, str]]) -> dict:
    """An nbformat-4 notebook (as a dict) with the given cells and no outputs."""
    nb_cells = []
    for i, (kind, src) in enumerate(cells):
        lines = src.splitlines(keepends=True)
        cell = {"cell_type": kind, "id": f"cell-{i}", "metadata": {}, "source": lines}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        nb_cells.append(cell)
    return {
        "cells": nb_cells,
        "metadata": {
            "jupytext": {"formats": "ipynb,py:percent"},
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def render(py_path: pathlib.Path) -> str:
    """The .ipynb text that `py_path` generates."""
    return json.dumps(to_notebook(parse_percent(py_path.read_text())), indent=1) + "\n"


def pairs(folder: pathlib.Path = HERE) -> list[tuple[pathlib.Path, pathlib.Path]]:
    """(script, notebook) for every paired script in `folder` (files starting with _ skipped)."""
    return [
        (p, p.with_suffix(".ipynb"))
        for p in sorted(folder.glob("*.py"))
        if not p.name.startswith("_") and p.read_text().startswith("# ---\n# jupyter:")
    ]


def main(argv: list[str]) -> int:
    stale = []
    for py, nb in pairs():
        text = render(py)
        if "--check" in argv:
            if not nb.exists() or nb.read_text() != text:
                stale.append(nb.name)
        else:
            nb.write_text(text)
            print(f"wrote {nb.relative_to(HERE.parent)}")
    if stale:
        print("out of date (run python notebooks/_pair.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
