"""The folders are the layers: import rules checked from the AST (imports inside functions
count as much as those at the top of a file).

Layers, lowest first; a module may import its own layer's modules (without cycles) and
anything lower, never higher:

    0  purejit.ir
    1  purejit.config, purejit.errors, purejit.dtypes, purejit.tree_util (with its private
       _treedef and _tree_keys)
    2  purejit.passes
    3  purejit.tracing, purejit.backend
    4  purejit.runtime
    5  purejit.lax, purejit.compiler
    6  purejit.numpy, purejit.transforms (rules bind ops through lax)
    7  the user API at the top of purejit/ (api, nn, export, sharding, shard_map, ...)
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = {"purejit": "purejit", "ir": "purejit.ir", "passes": "purejit.passes"}

LAYERS = [
    ("purejit.ir",),
    (
        "purejit.config",
        "purejit.errors",
        "purejit.dtypes",
        "purejit.tree_util",
        "purejit._treedef",
        "purejit._tree_keys",
    ),
    ("purejit.passes",),
    ("purejit.tracing", "purejit.backend"),
    ("purejit.runtime",),
    ("purejit.lax", "purejit.compiler"),
    ("purejit.numpy", "purejit.transforms"),
]
TOP = len(LAYERS)


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for folder, pkg in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            if folder == "purejit" and rel[:1] in (("ir",), ("passes",)):
                continue
            parts = [p for p in rel if p != "__init__"]
            mods[".".join([pkg, *parts])] = path
    return mods


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(mod: str) -> set[str]:
    """The purejit modules `mod` imports, anywhere in the file."""
    path = MODULES[mod]
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names]
            # `from pkg import submodule` imports the submodule; the package itself counts
            # only when a name is not a module of it
            targets = names + ([] if all(n in MODULES for n in names) else [base])
        else:
            continue
        for t in targets:
            r = _resolve(t)
            # a package's __init__ re-exporting its own submodules is not an upward edge
            if r and r != mod and not r.startswith(mod + "."):
                out.add(r)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


def layer(mod: str) -> int:
    for i, roots in enumerate(LAYERS):
        if any(mod == r or mod.startswith(r + ".") for r in roots):
            return i
    return TOP


def _cycles() -> list[list[str]]:
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    assert _cycles() == []


def test_nothing_imports_upward():
    bad = [
        f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
        for m, ts in sorted(GRAPH.items())
        for t in sorted(ts)
        if layer(t) > layer(m)
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "folder, forbidden",
    [
        ("purejit.passes", ("purejit.",)),  # only purejit.ir (and itself), checked below
        ("purejit.tracing", ("purejit.runtime", "purejit.backend", "purejit.numpy")),
        (
            "purejit.backend",
            (
                "purejit.compiler",
                "purejit.runtime",
                "purejit.numpy",
                "purejit.lax",
                "purejit.sharding",
            ),
        ),
        ("purejit.lax", ("purejit.numpy", "purejit.compiler", "purejit.api")),
        ("purejit.ir", ("purejit.",)),
    ],
)
def test_folder_boundaries(folder, forbidden):
    own = (folder, folder + ".")
    allowed = ("purejit.ir",) if folder in ("purejit.passes", "purejit.ir") else ()
    bad = []
    for m, ts in GRAPH.items():
        if not m.startswith(own) and m != folder:
            continue
        for t in ts:
            if t.startswith(own) or t == folder or any(t.startswith(a) for a in allowed):
                continue
            if any(t == f.rstrip(".") or t.startswith(f) for f in forbidden):
                bad.append(f"{m} imports {t}")
    assert not bad, "\n".join(sorted(bad))


def test_the_checker_sees_function_level_imports(tmp_path, monkeypatch):
    """An import inside a function body is an edge, and an upward one is caught."""
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from purejit.numpy import ones\n    return ones\n")
    monkeypatch.setitem(MODULES, "purejit.tracing.fake", fake)
    edges = _imports("purejit.tracing.fake")
    assert "purejit.numpy" in edges
    assert layer("purejit.numpy") > layer("purejit.tracing.fake")
