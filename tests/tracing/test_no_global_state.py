"""No module keeps the state of a trace in a global: the tracing, transformation, lax,
compiler and pass modules hold no module-level container that is mutated after import,
except the few listed here with the reason each may (a registry filled once when modules
are imported, or a cache that is bounded and thread-safe). Tracing state lives in the
per-thread `purejit.tracing.context`.

The scan reads the source (AST): a module-level `name = []`, `{}`, `set()`, `dict(...)`,
`defaultdict(...)`, `deque()`, weak dictionaries and the like counts unless every use of
`name` in purejit only reads it (`name[k]`, `name.get(k)`, `k in name`, iterating it): a
mutating call, an item assignment, passing it on or binding it to another name all count.
A module-level function cached by `functools.lru_cache` must be bounded (`maxsize` a
number).
"""

from __future__ import annotations

import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCANNED = ["purejit/tracing", "purejit/transforms", "purejit/lax", "purejit/compiler", "passes"]

_CONTAINERS = {
    "list",
    "dict",
    "set",
    "defaultdict",
    "OrderedDict",
    "deque",
    "Counter",
    "WeakKeyDictionary",
    "WeakValueDictionary",
    "WeakSet",
    "bytearray",
}
# (file, name) -> why it may be a mutated module-level container
ALLOWED = {
    ("purejit/compiler/calibration.py", "_memory"): (
        "the collective-matmul calibration per (device kind, device count): a handful of "
        "entries per process, written under the module's lock"
    ),
    ("purejit/compiler/calibration.py", "_generation"): (
        "one counter (bumped by forget, under the lock) naming fresh key-value entries"
    ),
    ("purejit/compiler/candidate_timing.py", "_memory"): (
        "timed collective-matmul decisions per (device kind, device count, candidate): at most "
        "MAX_KEPT entries, written under the module's lock"
    ),
    ("purejit/compiler/candidate_timing.py", "_generation"): (
        "one counter (bumped by forget, under the lock) naming fresh key-value entries"
    ),
    ("purejit/lax/incomplete.py", "IMPLS"): (
        "registry of differentiable implementations, filled at import by special_gradients"
    ),
    ("purejit/lax/special_functions.py", "IMPLS"): (
        "registry of differentiable implementations, filled at import by special_gradients"
    ),
    ("purejit/tracing/primitive.py", "_PRIMITIVES"): (
        "one primitive object per IR op name (bounded by the op registry), made by an atomic "
        "dict.setdefault so each name has one object (libraries compare them by identity)"
    ),
    ("purejit/tracing/context.py", "_listeners"): (
        "registry filled at import: the C++ dispatch's listener of trace changes"
    ),
    ("purejit/transforms/autodiff/_core.py", "JVP_RULES"): "registry of rules, filled at import",
    ("purejit/transforms/autodiff/_core.py", "LINEAR_OPS"): "registry of rules, filled at import",
    ("purejit/transforms/autodiff/_core.py", "TRANSPOSE_RULES"): (
        "registry of rules, filled at import"
    ),
    ("purejit/transforms/autodiff/_core.py", "NOT_DIFFERENTIABLE"): (
        "registry of rules, filled at import"
    ),
    ("purejit/transforms/autodiff/elementwise.py", "_UNARY"): (
        "registry of derivative rules, filled at import"
    ),
    ("purejit/transforms/autodiff/collective.py", "_eager_runner"): (
        "registry of one entry, set when purejit.shard_map is imported"
    ),
    ("purejit/transforms/batching/core.py", "RULES"): "registry of rules, filled at import",
    ("purejit/transforms/batching/core.py", "FALLBACKS"): "registry of rules, filled at import",
    ("purejit/lax/solves.py", "_IMPLS"): "registry of solver implementations, filled at import",
    ("purejit/transforms/autodiff/_core.py", "CUSTOM_RULES"): (
        "custom rules by key: one per custom function and argument structure, and one per "
        "distinct (rule, axis, mapped dims) batched from it (interned by value); never "
        "dropped, since programs kept in caches name rules by key; written under a lock"
    ),
    ("purejit/transforms/autodiff/_core.py", "_INTERNED"): (
        "the key of each rule interned by value (as CUSTOM_RULES), written under a lock"
    ),
    ("purejit/compiler/cache_files.py", "_behind"): (
        "cache writes under way in this process's threads (one per entry path, removed when "
        "written), written under a lock"
    ),
    ("purejit/compiler/cache_files.py", "_refused"): (
        "cache folders already warned about (one warning each; as many as the user configured),"
        " written under a lock"
    ),
    ("purejit/transforms/vmap_lowering.py", "CHOICES"): (
        "measured lowering choices: bounded (CHOICES_MAX, oldest dropped), written under a lock"
    ),
}


@functools.lru_cache(maxsize=None)
def _parse(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text())


def _files():
    for folder in SCANNED:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _is_container(value: ast.expr) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        f = value.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        return name in _CONTAINERS
    return False


def _module_containers() -> dict[tuple[str, str], int]:
    """(file, name) -> line of every module-level container assignment."""
    out = {}
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        for node in _parse(path).body:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            if not _is_container(value):
                continue
            for t in targets:
                if isinstance(t, ast.Name) and t.id != "__all__":
                    out[(rel, t.id)] = node.lineno
    return out


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


_READERS = {"get", "items", "keys", "values", "copy", "index", "count"}
_READING_CALLS = {"len", "sorted", "list", "tuple", "set", "frozenset", "dict", "any", "all"}
_READING_CALLS |= {"iter", "enumerate", "zip", "min", "max", "sum", "reversed", "isinstance"}


def _read_only(node: ast.expr, parent: ast.AST) -> bool:
    """Whether this use of a container only reads it (so the container cannot change)."""
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return parent.attr in _READERS
    if isinstance(parent, ast.Compare):
        return node in parent.comparators
    if isinstance(parent, (ast.For, ast.comprehension)):
        return parent.iter is node
    if isinstance(parent, ast.Call) and node in parent.args:
        return getattr(parent.func, "id", None) in _READING_CALLS
    if isinstance(parent, ast.Starred):
        return True
    if isinstance(parent, ast.Dict):  # `{**rules, ...}` copies it
        return any(k is None and v is node for k, v in zip(parent.keys, parent.values))
    return False


def _module_of(rel: str) -> str:
    parts = pathlib.PurePosixPath(rel).with_suffix("").parts
    parts = ("purejit", *parts) if parts[0] == "passes" else parts
    return ".".join(p for p in parts if p != "__init__")


def _written(containers) -> set[tuple[str, str]]:
    """The (file, name) of `containers` that some purejit module uses other than to read:
    mutated in place, passed on or bound to another name (each may change the container).
    A bare name counts in its own module and where it is imported by name; `module.name`
    counts anywhere."""
    by_module = {(_module_of(f), n): (f, n) for f, n in containers}
    by_name: dict = {}
    for f, n in containers:
        by_name.setdefault(n, []).append((f, n))
    out = set()
    paths = [*sorted((ROOT / "purejit").rglob("*.py")), *sorted((ROOT / "passes").rglob("*.py"))]
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        tree = _parse(path)
        bare = {n: (rel, n) for f, n in containers if f == rel}  # this module's own
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    hit = by_module.get((node.module, a.name))
                    if hit is not None:
                        bare[a.asname or a.name] = hit
        top = {id(t) for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])}  # fmt: skip
        for parent in ast.walk(tree):
            for node in ast.iter_child_nodes(parent):
                if isinstance(node, ast.Name):
                    if isinstance(node.ctx, ast.Store) or id(node) in top:
                        continue  # a local of that name, or the definition itself
                    hits = [bare[node.id]] if node.id in bare else []
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    hits = by_name.get(node.attr, [])
                else:
                    continue
                if hits and not _read_only(node, parent):
                    out.update(hits)
    return out


def test_no_module_level_mutable_state_outside_the_allow_list():
    containers = _module_containers()
    written = _written(containers)
    found = {k: line for k, line in containers.items() if k in written}
    unexpected = [
        f"{f}:{line}: {n}" for (f, n), line in sorted(found.items()) if (f, n) not in ALLOWED
    ]
    assert unexpected == [], (
        "module-level mutable containers (tracing state belongs in purejit.tracing.context; "
        "a cache must be bounded and thread-safe, e.g. functools.lru_cache(maxsize=N)): "
        + ", ".join(unexpected)
    )


def test_the_allow_list_names_what_exists():
    found = _module_containers()
    stale = [f"{f}: {n}" for f, n in ALLOWED if (f, n) not in found]
    assert stale == []
    assert all(reason.strip() for reason in ALLOWED.values())


def test_module_level_caches_are_bounded():
    unbounded = []
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        for node in _parse(path).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for d in node.decorator_list:
                name = _last_name(d.func if isinstance(d, ast.Call) else d)
                if name == "cache":
                    unbounded.append(f"{rel}: {node.name}")
                elif name == "lru_cache" and isinstance(d, ast.Call):
                    size = {k.arg: k.value for k in d.keywords}.get("maxsize")
                    if size is None and d.args:
                        size = d.args[0]
                    if isinstance(size, ast.Constant) and size.value is None:
                        unbounded.append(f"{rel}: {node.name}")
    assert unbounded == [], f"unbounded caches: {unbounded}"
