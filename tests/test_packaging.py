"""The package as users install it: the wheel holds every module, and each one imports."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tomllib


ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = {"purejit": "purejit", "ir": "purejit.ir", "passes": "purejit.passes"}


def _packages_in_tree() -> set[str]:
    out = set()
    for folder, name in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            if folder == "purejit" and rel[:1] in (("ir",), ("passes",)):
                continue
            out.add(".".join([name, *rel]))
    return out


def _modules_in_tree() -> list[str]:
    mods = []
    for folder, name in FOLDERS.items():
        for py in (ROOT / folder).rglob("*.py"):
            rel = py.relative_to(ROOT / folder).with_suffix("").parts
            if rel[-1] == "__main__":
                continue
            parts = [p for p in rel if p != "__init__"]
            mods.append(".".join([name, *parts]))
    return sorted(mods)


def test_pyproject_lists_every_package():
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    missing = _packages_in_tree() - listed
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
    assert not listed - _packages_in_tree(), "pyproject.toml lists packages the tree lacks"


def test_wheel_installs_and_every_module_imports(tmp_path):
    """Build the wheel, install it into a scratch folder (no editable install on the path),
    and import every module from there."""
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("purejit-*.whl")
    site = tmp_path / "site"
    inst = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert inst.returncode == 0, inst.stderr[-3000:]
    mods = _modules_in_tree()
    code = (
        "import importlib, pathlib, sys\n"
        "import purejit\n"
        f"assert pathlib.Path(purejit.__file__).is_relative_to({str(site)!r}), purejit.__file__\n"
        f"for m in {mods!r}:\n"
        "    importlib.import_module(m)\n"
        "print(len(sys.modules))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(site))
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
