"""`ir/` (purejit.ir) imports only the standard library, numpy, ml_dtypes and itself."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

IR = pathlib.Path(__file__).resolve().parents[2] / "ir"
ALLOWED = {"numpy", "ml_dtypes"}


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: inside the package
                yield node.lineno, "purejit.ir"
            else:
                yield node.lineno, node.module or ""


def test_ir_sources_import_only_numpy_ml_dtypes_and_stdlib():
    files = sorted(IR.rglob("*.py"))
    assert len(files) >= 10, f"expected the ir/ sources under {IR}"
    bad = []
    for path in files:
        for line, module in _imports(path):
            top = module.split(".")[0]
            if module == "purejit.ir" or module.startswith("purejit.ir."):
                continue
            if top in ALLOWED or top in sys.stdlib_module_names or top == "__future__":
                continue
            bad.append(f"{path.relative_to(IR.parent)}:{line}: import {module}")
    assert not bad, "ir/ may import only numpy, ml_dtypes and the stdlib:\n" + "\n".join(bad)


def test_no_jax_mention_in_ir_code():
    """A plain grep, catching dynamic imports (importlib, __import__) the AST check misses."""
    out = subprocess.run(
        ["grep", "-rnE", r"(import|__import__|import_module).*\b(jax|jaxlib)\b", str(IR)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1, f"ir/ mentions jax in an import:\n{out.stdout}"


def test_importing_purejit_ir_loads_no_jax():
    code = (
        "import sys; import purejit.ir; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    # purejit/__init__ may import jax; load purejit.ir without running it
    stub = (
        "import sys, types, pathlib; "
        f"pkg = types.ModuleType('purejit'); pkg.__path__ = [{str(IR.parent / 'purejit')!r}]; "
        "sys.modules['purejit'] = pkg; "
    )
    res = subprocess.run([sys.executable, "-c", stub + code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
