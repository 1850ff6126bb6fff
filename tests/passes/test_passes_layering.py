"""`ir/` and `passes/` have no import cycles (function-level imports counted), and
`passes/` imports nothing of purejit but `purejit.ir` and itself."""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = {"ir": "purejit.ir", "passes": "purejit.passes"}
THIRD_PARTY = {"numpy", "ml_dtypes"}


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for folder, pkg in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [x for x in path.relative_to(ROOT / folder).with_suffix("").parts]
            parts = [x for x in parts if x != "__init__"]
            mods[".".join([pkg, *parts])] = path
    return mods


def _imported(name: str, path: pathlib.Path):
    """Every module `path` imports, wherever the import statement sits."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            yield base
            yield from (f"{base}.{a.name}" for a in node.names)


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    edges = {}
    for name, path in mods.items():
        targets = set()
        for t in _imported(name, path):
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != name and not t.startswith(name + "."):
                targets.add(t)
        edges[name] = targets
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(v):
        state[v] = 1
        path.append(v)
        for w in sorted(edges.get(v, ())):
            if state.get(w) == 1:
                return path[path.index(w) :] + [w]
            if w not in state and (found := visit(w)):
                return found
        state[v] = 2
        path.pop()
        return None

    for v in sorted(edges):
        if v not in state and (found := visit(v)):
            return found
    return None


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_ir_and_passes_have_no_import_cycle():
    edges = _graph()
    assert "purejit.passes.pipeline" in edges and "purejit.ir.core" in edges
    cycle = _cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_passes_import_only_ir_numpy_and_stdlib():
    bad = []
    for name, path in _modules().items():
        if not name.startswith("purejit.passes"):
            continue
        for t in _imported(name, path):
            top = t.split(".")[0]
            if t.startswith(("purejit.ir", "purejit.passes")) or t in ("purejit", ""):
                continue
            if top in THIRD_PARTY or top in sys.stdlib_module_names or top == "__future__":
                continue
            bad.append(f"{path.relative_to(ROOT)}: {t}")
    assert not bad, "passes/ may import only purejit.ir:\n" + "\n".join(bad)
