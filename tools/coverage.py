"""Which public names of JAX purejit has: every name is present or listed with a reason.

The survey walks every public module of the installed jax (each module below `jax/` whose
dotted name has no `_`-component, found on disk, so walking imports nothing) and asks, for
each public name of each module, whether a drop-in user has it: `jax.X.Y` is looked up in
the module `purejit.compat` gives for `import jax.X.Y` (`purejit.X.Y`, or the equivalent
that drop-in mode maps it to), so coverage measures what `python -m purejit run` provides.
A name that purejit lacks must be listed, with the reason, in
`docs/coverage_unsupported.toml`:

- a table per JAX module, `name = "reason"`, for modules checked name by name;
- the `[modules]` table, `"jax.X" = "reason"`, for a module that is missing or out of scope
  as a whole (the reason covers its names and those of every module below it that has no
  entry of its own). What is not JAX's public API (modules JAX's API reference does not
  list: `jax.tools`, `jax.interpreters`, `jax.core`, `jax.lib`, kernels shipped as examples,
  ...) is listed there as "not public API: ...", never skipped silently;
- a reason starts with its kind: "not implemented yet: <what is missing>" (a gap),
  "not planned: <why>", "not public: <why>" (a helper JAX's module imports for itself),
  "not public API: <why>" (a module JAX does not document), and for a name drop-in mode
  has only as a declaration that raises NotImplementedError when used (so that libraries
  import), "declared only: <what is missing>": counted as a gap, not as present.

Names of one jax version only: an entry may be an inline table with the jax versions it is
for, `name = { reason = "...", jax = ">=0.11" }` (comma-separated `>=`, `>`, `<`, `<=`,
`==` clauses). An entry is reported stale when purejit has the name, or when the installed
jax lacks it although the entry's range includes the installed version (or has none), or
when the installed jax has it although the range excludes this version.

A public name is a non-`_` attribute of the module that is neither a module nor a class,
function or typing form from Python's standard library that the module imports (`partial`,
`Callable`, `annotations`, ...). A module that fails to import here (a missing optional
dependency, GPU- or TPU-only code) is reported "not importable here: <error>"; its names are
not checked.

    python tools/coverage.py            # the summary, and any name neither present nor listed
    python tools/coverage.py --missing  # also every listed name with its reason
    python tools/coverage.py --readme   # rewrite the table in README.md and docs/coverage.md
    python tools/coverage.py --out docs/coverage/  # docs/coverage/jax-<version>.md and .json
    python tools/coverage.py --prune    # drop listed names that purejit now has
    python tools/coverage.py --names-from docs/coverage/jax-0.11.2.json --out docs/coverage/
        # another jax's public names (from its committed report) against this checkout

Needs only jax, purejit (from this checkout) and numpy. The JAX modules are read from the
installed jax (a reference, as in the tests); purejit never imports this file.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import pkgutil
import platform
import re
import sys
import tomllib
import types
import warnings
from collections import Counter
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
UNSUPPORTED = ROOT / "docs" / "coverage_unsupported.toml"
README = ROOT / "README.md"
DETAILS = ROOT / "docs" / "coverage.md"
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"
MODULES = "modules"  # the TOML table of modules listed as a whole

# where an imported helper comes from when it is Python's, not JAX's
_STDLIB_ORIGINS = ("builtins", "typing", "typing_extensions", "functools", "collections.abc",
                   "__future__", "abc", "dataclasses", "enum", "contextlib", "itertools",
                   "operator", "types")  # fmt: skip
_MISSING = object()
KINDS = ("not implemented yet", "declared only", "not planned", "not public", "not public API")


class Entry(NamedTuple):
    """One listed name or module: why it is missing, and the jax versions it is for."""

    reason: str
    jax: str | None = None  # a version range such as ">=0.11"; None: every version

    @property
    def kind(self) -> str:
        return reason_kind(self.reason)


def reason_kind(reason: str) -> str:
    """The kind a reason states: one of KINDS (a gap by any wording counts as one)."""
    head = reason.split(":", 1)[0].strip() if ":" in reason else reason.strip()
    if head in ("not yet", "not implemented", "not implemented yet") or head.startswith("pending"):
        return "not implemented yet"
    if head in ("not public", "not public API", "declared only"):
        return head
    return "not planned"


# ---------------------------------------------------------------------------- versions


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v.split("+")[0].split("rc")[0])[:3])


def version_in(version: str, spec: str | None) -> bool:
    """Whether `version` ("0.10.2") satisfies `spec` (">=0.11,<0.12"); None matches all."""
    if not spec:
        return True
    v = _version_tuple(version)
    for clause in spec.split(","):
        m = re.fullmatch(r"\s*(>=|<=|==|>|<)\s*([\d.]+)\s*", clause)
        if m is None:
            raise ValueError(f"coverage list: bad jax version range {spec!r} (use '>=0.11')")
        op, bound = m.group(1), _version_tuple(m.group(2))
        # "==0.11" means every 0.11.x: compare as many components as the bound names
        head = v[: len(bound)]
        ok = {">=": v >= bound, "<=": head <= bound, "==": head == bound,
              ">": head > bound, "<": v < bound}[op]  # fmt: skip
        if not ok:
            return False
    return True


# ---------------------------------------------------------------------------- inputs


def load_unsupported(path: Path = UNSUPPORTED) -> dict[str, dict[str, Entry]]:
    """The coverage list: table name (a JAX module, or "modules") -> name -> Entry."""
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    out: dict[str, dict[str, Entry]] = {}
    for table, entries in raw.items():
        out[table] = {}
        for name, value in entries.items():
            if isinstance(value, str):
                out[table][name] = Entry(value)
            elif isinstance(value, dict) and set(value) <= {"reason", "jax"} and "reason" in value:
                out[table][name] = Entry(value["reason"], value.get("jax"))
            else:
                raise ValueError(
                    f'coverage list [{table}] {name}: expected "reason" or '
                    f'{{ reason = "...", jax = ">=0.11" }}, got {value!r}'
                )
    return out


def walk_modules(jax_module) -> list[str]:
    """Every public module of the installed jax, `jax` first, found on disk (no imports)."""
    found = ["jax"]

    def walk(package: str, path: str) -> None:
        for info in sorted(pkgutil.iter_modules([path]), key=lambda i: i.name):
            if info.name.startswith("_"):
                continue
            name = f"{package}.{info.name}"
            found.append(name)
            if info.ispkg:
                walk(name, os.path.join(path, info.name))

    for root in jax_module.__path__:
        walk("jax", root)
    return found


def _stdlib_helper(name: str, obj) -> bool:
    """Whether `obj` is the standard library's object of that name (`partial`, `Callable`,
    `annotations`, `map`, ...), which a JAX module imports for its own use."""
    for origin in _STDLIB_ORIGINS:
        mod = sys.modules.get(origin)
        if mod is not None and getattr(mod, name, _MISSING) is obj:
            return True
    return False


def public_names(module) -> list[str]:
    """The public names of `module`, sorted: non-`_` attributes that are neither modules nor
    standard-library helpers the module imports."""
    out = []
    for n in dir(module):
        if n.startswith("_"):
            continue
        try:
            obj = getattr(module, n)
        except AttributeError:  # a name dir() shows that a deprecation hook refuses
            continue
        if not isinstance(obj, types.ModuleType) and not _stdlib_helper(n, obj):
            out.append(n)
    return sorted(out)


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".strip()[:200]


def _import_real(name: str):
    """The installed jax's module `name`, or the error text of its import."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(name), None
    except BaseException as e:  # an optional module may raise anything at import
        if isinstance(e, KeyboardInterrupt):
            raise
        return None, f"not importable here: {_error(e)}"


def _mirror(name: str):
    """(purejit module name or None, drop-in module or None, error text or None)."""
    from purejit.compat import _views

    target = "purejit" if name == "jax" else _views._mapped_name(name)
    if target is None:
        return None, None, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return target, _views.resolve(name), None
    except Exception as e:
        return target, None, f"purejit's {target} fails to import: {_error(e)}"


class _Checkout:
    """Finds purejit and its package-dir children (`purejit.ir` is ir/, `purejit.passes` is
    passes/, as pyproject.toml maps them) in this checkout, installed or not."""

    roots = {"purejit": "purejit", "purejit.ir": "ir", "purejit.passes": "passes"}

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name not in cls.roots:
            return None
        folder = ROOT / cls.roots[name]
        return importlib.util.spec_from_file_location(
            name, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def _use_this_checkout() -> None:
    """Import purejit from this checkout (a no-op once purejit is imported)."""
    if "purejit" not in sys.modules and _Checkout not in sys.meta_path:
        sys.meta_path.insert(0, _Checkout)


def _module_entry(name: str, modules: dict[str, Entry]) -> tuple[str, Entry] | None:
    """The [modules] entry covering `name`: its own, or its nearest listed parent's."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in modules:
            return key, modules[key]
    return None


# ---------------------------------------------------------------------------- the survey


def survey(
    unsupported: dict[str, dict[str, Entry]] | None = None, names_from: dict | None = None
) -> dict:
    """The coverage of every public module of the installed jax.

    Args:
      unsupported: the coverage list (default: docs/coverage_unsupported.toml).
      names_from: another jax version's report (docs/coverage/jax-<version>.json): its
        modules and public names stand in for the installed jax's, so the current list and
        purejit are checked against a jax that cannot be installed next to this one.

    Returns {"jax": version, "jaxlib": version, "python": version, "source": where the names
    were read, "modules": {name: info}, "stale_modules": [...], "unknown_tables": [...]}.
    Each info has "purejit" (the module drop-in mode gives, or None), "error" (why it could
    not be read, or None), "whole" (the [modules] entry covering it: {"module", "reason"}, or
    None), "names", "present", "listed" ({name: reason}), "neither" and "stale" (listed
    names the survey contradicts).
    """
    import jax
    import jaxlib

    _use_this_checkout()
    from purejit import compat

    if compat.installed():
        raise RuntimeError("coverage: run the survey outside drop-in mode (purejit.compat)")
    unsupported = load_unsupported() if unsupported is None else unsupported
    modules_table = unsupported.get(MODULES, {})
    if names_from is None:
        version, read = jax.__version__, {name: None for name in walk_modules(jax)}
        source = {"jax": version, "jaxlib": jaxlib.__version__, "python": platform.python_version(),
                  "source": "imported"}  # fmt: skip
    else:
        version = names_from["jax"]
        read = {m: (None if i["error"] else i["names"], i["error"])
                for m, i in names_from["modules"].items()}  # fmt: skip
        source = {k: names_from[k] for k in ("jax", "jaxlib", "python")}
        source["source"] = names_from.get("source", "imported")
    out = {}
    for name, found in read.items():
        listed_here = unsupported.get(name, {})
        out[name] = _survey_module(name, listed_here, modules_table, version, found)
    stale_modules = []
    for key, entry in modules_table.items():
        in_jax = key in out
        if in_jax != version_in(version, entry.jax):
            stale_modules.append(key)
        elif in_jax:
            info = out[key]
            if info["names"] and len(info["present"]) == len(info["names"]):
                stale_modules.append(key)
    unknown = [
        t for t, entries in unsupported.items()
        if t != MODULES and t not in out
        and any(version_in(version, e.jax) for e in entries.values())
    ]  # fmt: skip
    return source | {
        "modules": out,
        "stale_modules": sorted(stale_modules),
        "unknown_tables": sorted(unknown),
    }


def _survey_module(name, listed_here, modules_table, version, found=None) -> dict:
    """One module's coverage; `found` is (its public names or None, error) when read from
    another version's report, else the installed jax's module is imported."""
    if found is None:
        real, error = _import_real(name)
        names = None if real is None else public_names(real)
    else:
        names, error = found
    target, view, mirror_error = _mirror(name)
    whole = _module_entry(name, modules_table)
    info = {
        "purejit": target,
        "error": error,
        "mirror_error": mirror_error,
        "whole": None if whole is None else {"module": whole[0], "reason": whole[1].reason},
        "names": [],
        "present": [],
        "listed": {},
        "neither": [],
        "stale": [],
    }
    if names is None:
        return info
    has = {n for n in names if view is not None and hasattr(view, n)}
    declared = {n for n, e in listed_here.items() if reason_kind(e.reason) == "declared only"}
    present = [n for n in names if n in has and n not in declared]
    listed, neither = {}, []
    for n in names:
        if n in present:
            continue
        if n in listed_here:
            listed[n] = listed_here[n].reason
        elif whole is not None:
            listed[n] = whole[1].reason
        else:
            neither.append(n)
    name_set, present_set = set(names), set(present)
    stale = sorted(
        n for n, e in listed_here.items()
        if n in present_set or (n in name_set) != version_in(version, e.jax)
        or (n in declared and n in name_set and n not in has)
    )  # fmt: skip
    info.update(names=names, present=present, listed=listed, neither=neither, stale=stale)
    return info


def checked(result: dict) -> dict[str, dict]:
    """The modules checked name by name (not listed as a whole), in walk order."""
    return {k: v for k, v in result["modules"].items() if v["whole"] is None}


def kind_counts(info: dict) -> Counter:
    """Missing names by reason kind; names covered only by the module's [modules] entry
    count under that entry's kind (a report's JSON keeps the module reason once)."""
    out = Counter(reason_kind(r) for r in info["listed"].values())
    rest = len(info["names"]) - len(info["present"]) - len(info["listed"]) - len(info["neither"])
    if rest and info["whole"]:
        out[reason_kind(info["whole"]["reason"])] += rest
    return out


# ---------------------------------------------------------------------------- README + details


def _counts_row(info: dict) -> tuple[int, ...]:
    k = kind_counts(info)
    return (len(info["names"]), len(info["present"]), k["not implemented yet"] + k["declared only"],
            k["not planned"], k["not public"] + k["not public API"])  # fmt: skip


def _whole_groups(result: dict) -> dict[str, list[str]]:
    """Reason kind -> the top modules listed as a whole with that kind."""
    groups: dict[str, list[str]] = {}
    for key in sorted({i["whole"]["module"] for i in result["modules"].values() if i["whole"]}):
        reason = next(i["whole"]["reason"] for i in result["modules"].values()
                      if i["whole"] and i["whole"]["module"] == key)  # fmt: skip
        groups.setdefault(reason_kind(reason), []).append(key)
    return groups


def _compact(keys: list[str]) -> list[str]:
    """Module names for a sentence, siblings folded: `jax.a.{x, y, z}` for three or more."""
    by_parent: dict[str, list[str]] = {}
    for k in keys:
        by_parent.setdefault(k.rpartition(".")[0], []).append(k)
    out = []
    for parent, ks in by_parent.items():
        if len(ks) >= 3:
            out.append(f"`{parent}.{{{', '.join(k.rpartition('.')[2] for k in ks)}}}`")
        else:
            out += [f"`{k}`" for k in ks]
    return out


def readme_table(result: dict) -> str:
    """README's generated block: one row per module checked name by name, then the modules
    listed as a whole, by kind."""
    lines = [
        BEGIN,
        "<!-- generated by `python tools/coverage.py --readme`; do not edit by hand -->",
        f"<!-- against jax {result['jax']} -->",
        "",
        "| JAX namespace | purejit (drop-in) | names | present | not yet | not planned "
        "| not public |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, info in checked(result).items():
        if not info["names"]:
            continue  # nothing to count (or not importable here): in docs/coverage.md
        n, p, gap, no, hidden = _counts_row(info)
        lines.append(
            f"| `{name}` | `{info['purejit'] or '—'}` | {n} | {p} | {gap} | {no} | {hidden} |"
        )
    walked = len(result["modules"])
    lines += [
        "",
        f"All {walked} public modules of jax {result['jax']} are walked. Modules listed as a "
        "whole in `docs/coverage_unsupported.toml` (with their submodules):",
    ]
    for kind, keys in sorted(_whole_groups(result).items()):
        lines.append(f"- {kind}: " + ", ".join(_compact(keys)) + ".")
    lines += [
        "",
        "Every missing name and the reason it is missing: [docs/coverage.md](docs/coverage.md);"
        " per jax version: [docs/coverage/](docs/coverage/).",
        END,
    ]
    return "\n".join(lines)


def details_page(result: dict) -> str:
    """docs/coverage.md: every missing name of every module checked name by name, with its
    reason, then the modules listed as a whole and those not importable here."""
    out = [
        "# Coverage of JAX's public names",
        "",
        "Generated by `python tools/coverage.py --readme` from `docs/coverage_unsupported.toml`"
        f" and the installed jax ({result['jax']}); do not edit by hand. A name counts as "
        "present when drop-in mode's module for it (`import jax.X` under `purejit.compat`) "
        "has it.",
    ]
    for name, info in checked(result).items():
        out += ["", f"## `{name}` → `{info['purejit'] or 'no purejit module'}`", ""]
        if info["error"]:
            out.append(info["error"])
            continue
        out.append(f"{len(info['present'])} of {len(info['names'])} names present.")
        if info["mirror_error"]:
            out.append(info["mirror_error"])
        if info["listed"]:
            out += ["", "| name | why it is missing |", "|---|---|"]
            out += [f"| `{n}` | {r} |" for n, r in sorted(info["listed"].items())]
    # which optional modules import depends on the machine (tensorflow, tensorstore, absl):
    # the per-version reports count their names; this page names them only
    out += ["", "## Modules listed as a whole", "",
            "Each with the modules below it; their names, per jax version: "
            "[docs/coverage/](coverage/).", "",
            "| JAX module | purejit (drop-in) | why |", "|---|---|---|"]  # fmt: skip
    for name, info in result["modules"].items():
        if info["whole"] is not None and info["whole"]["module"] == name:
            reason = info["whole"]["reason"]
            out.append(f"| `{name}` | `{info['purejit'] or '—'}` | {reason} |")
    return "\n".join(out) + "\n"


def replace_block(text: str, block: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + block + tail


# ---------------------------------------------------------------------------- per-version report


def _report_json(result: dict) -> dict:
    """The JSON of one version: a module's names covered by its [modules] entry are not
    repeated under "listed" (the entry's reason is kept once, under "whole")."""
    mods = {}
    for name, info in result["modules"].items():
        whole = info["whole"]["reason"] if info["whole"] else None
        keys = ("purejit", "error", "mirror_error", "whole", "names", "present", "neither", "stale")
        mods[name] = {k: info[k] for k in keys}
        mods[name]["listed"] = {n: r for n, r in info["listed"].items() if r != whole}
    keys = ("jax", "jaxlib", "python", "source", "stale_modules")
    return {k: result[k] for k in keys} | {"modules": mods}


def _dump_json(report: dict) -> str:
    """One line per module, so a new jax version's report diffs by module."""
    head = {k: v for k, v in report.items() if k != "modules"}
    lines = [json.dumps(head, sort_keys=True)[:-1] + ', "modules": {']
    mods = list(report["modules"].items())
    for i, (name, info) in enumerate(mods):
        sep = "," if i < len(mods) - 1 else ""
        lines.append(f" {json.dumps(name)}: {json.dumps(info, sort_keys=True)}{sep}")
    lines.append("}}")
    return "\n".join(lines) + "\n"


def _totals(report: dict) -> Counter:
    t = Counter()
    for info in report["modules"].values():
        t["modules"] += 1
        t["whole"] += info["whole"] is not None
        t["unimportable"] += bool(info["error"])
        t["names"] += len(info["names"])
        t["present"] += len(info["present"])
        t["neither"] += len(info["neither"])
        for kind, c in kind_counts(info).items():
            t[kind] += c
    return t


def _names_of(report: dict, modules: set[str]) -> set[str]:
    """`module.name` for every public name of the given modules of a report."""
    return {f"{m}.{n}" for m in modules for n in report["modules"][m]["names"]}


def _version_diff(report: dict, other: dict) -> list[tuple[str, list[str]]]:
    """What `report`'s jax has that `other`'s lacks, and the other way round: modules, then
    the names of modules both import (a module one of them cannot import is left out)."""
    mine, theirs = set(report["modules"]), set(other["modules"])
    both = {
        m for m in mine & theirs
        if not report["modules"][m]["error"] and not other["modules"][m]["error"]
    }  # fmt: skip
    out = []
    for a, b, ma, mb in ((report, other, mine, theirs), (other, report, theirs, mine)):
        lines = [f"- module `{m}`" for m in sorted(ma - mb)]
        lines += _grouped(sorted(_names_of(a, both) - _names_of(b, both)))
        out.append((f"In jax {a['jax']}, not in jax {b['jax']}", lines or ["None."]))
    return out


def _grouped(names: list[str]) -> list[str]:
    """`jax.a.x`, `jax.a.y` -> "`jax.a`: x, y" lines (modules themselves stand alone)."""
    by_mod: dict[str, list[str]] = {}
    for full in sorted(names):
        mod, _, n = full.rpartition(".")
        by_mod.setdefault(mod, []).append(n)
    return [f"- `{m}`: " + ", ".join(f"`{n}`" for n in ns) for m, ns in sorted(by_mod.items())]


def version_report(report: dict, others: list[dict]) -> str:
    """The Markdown report of one jax version (from its JSON), compared with `others`."""
    t = _totals(report)
    ver = report["jax"]
    made = (
        f"Generated by `python tools/coverage.py --out docs/coverage/` (jax {ver}, jaxlib "
        f"{report['jaxlib']}, Python {report['python']}) from `docs/coverage_unsupported.toml`;"
        " do not edit by hand. A name counts as present when drop-in mode's module for it has"
        " it."
    )
    if report.get("source", "imported") != "imported":
        made += f" The names of jax {ver} were read from {report['source']}."
    out = [
        f"# purejit against jax {ver}",
        "",
        made,
        "",
        f"{t['modules']} public modules walked: {t['modules'] - t['whole']} checked name by "
        f"name, {t['whole']} listed as a whole; {t['unimportable']} not importable here. "
        f"{t['names']} public names: {t['present']} present, {t['not implemented yet']} not "
        f"implemented yet, {t['declared only']} declared only, {t['not planned']} not planned, "
        f"{t['not public'] + t['not public API']} not public, {t['neither']} neither present "
        "nor listed.",
        "",
        "| JAX module | purejit (drop-in) | names | present | not yet | not planned "
        "| not public | neither | listed as a whole |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, info in report["modules"].items():
        n, p, gap, no, hidden = _counts_row(info)
        notes = [f"`{info['whole']['module']}`"] if info["whole"] else []
        notes += [e for e in (info["error"], info.get("mirror_error")) if e]
        out.append(
            f"| `{name}` | `{info['purejit'] or '—'}` | {n} | {p} | {gap} | {no} | {hidden} | "
            f"{len(info['neither'])} | {' '.join(notes)} |"
        )
    neither = [f"{m}.{n}" for m, i in report["modules"].items() for n in i["neither"]]
    if neither:
        out += ["", "## Neither present nor listed", "",
                "Add each to `docs/coverage_unsupported.toml` with its reason (and "
                f'`jax = ">={".".join(ver.split(".")[:2])}"` for a name older versions lack):',
                ""] + _grouped(neither)  # fmt: skip
    stale = [f"{m}.{n}" for m, i in report["modules"].items() for n in i["stale"]]
    stale += [f"{m} (module)" for m in report["stale_modules"]]
    if stale:
        out += ["", "## Stale entries", "",
                "Listed, but purejit has them, or this jax contradicts the entry's versions:",
                ""] + [f"- `{s}`" for s in sorted(stale)]  # fmt: skip
    by_reason: dict[tuple[str, str], list[str]] = {}
    for mod, info in report["modules"].items():
        whole = info["whole"]["reason"] if info["whole"] else None
        for n, reason in info["listed"].items():
            if reason != whole:
                by_reason.setdefault((reason_kind(reason), reason), []).append(f"{mod}.{n}")
    out += ["", "## Missing names by reason", "",
            "Modules listed as a whole are in the table above; here, the names listed one by "
            "one."]  # fmt: skip
    kind = None
    for (k, reason), names in sorted(by_reason.items()):
        if k != kind:
            kind = k
            count = sum(len(v) for (k2, _), v in by_reason.items() if k2 == k)
            out += ["", f"### {k} ({count} names)"]
        out += ["", f"**{reason}**", ""] + _grouped(names)
    for other in sorted(others, key=lambda r: _version_tuple(r["jax"])):
        for title, lines in _version_diff(report, other):
            out += ["", f"## {title}", "", *lines]
    return "\n".join(out) + "\n"


def write_reports(result: dict, folder: Path) -> list[Path]:
    """Write this version's JSON, then every version's Markdown from the JSONs in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    report = _report_json(result)
    path = folder / f"jax-{report['jax']}.json"
    path.write_text(_dump_json(report))
    reports = [json.loads(p.read_text()) for p in sorted(folder.glob("jax-*.json"))]
    written = [path]
    for r in reports:
        md = folder / f"jax-{r['jax']}.md"
        md.write_text(version_report(r, [o for o in reports if o["jax"] != r["jax"]]))
        written.append(md)
    return written


# ---------------------------------------------------------------------------- prune + main


def prune(result: dict, path: Path = UNSUPPORTED) -> int:
    """Remove stale lines (names purejit now has, or this jax contradicts) from the list."""
    stale = {(m, n) for m, i in result["modules"].items() for n in i["stale"]}
    stale |= {(MODULES, m) for m in result["stale_modules"]}
    lines, section, dropped = [], None, 0
    for line in path.read_text().splitlines():
        s = line.strip()
        if s.startswith("[") and s.endswith("]"):
            section = s.strip("[]").strip('"')
        elif section and "=" in s and not s.startswith("#"):
            name = s.split("=", 1)[0].strip().strip('"')
            if (section, name) in stale:
                dropped += 1
                continue
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    return dropped


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readme", action="store_true", help="rewrite README's table + details")
    ap.add_argument("--missing", action="store_true", help="print every listed name")
    ap.add_argument("--prune", action="store_true", help="drop stale entries from the list")
    ap.add_argument("--out", type=Path, help="write jax-<version>.md/.json into this folder")
    ap.add_argument(
        "--names-from",
        type=Path,
        help="check against the public names recorded in another jax's jax-<version>.json",
    )
    args = ap.parse_args(argv)
    names_from = None
    if args.names_from:
        if args.readme or args.prune:
            ap.error("--names-from checks another jax: README and --prune follow the installed one")
        names_from = json.loads(args.names_from.read_text())
        if names_from.get("source", "imported") == "imported":
            names_from["source"] = f"a report written where jax {names_from['jax']} is installed"
    result = survey(names_from=names_from)
    if args.prune:
        print(f"dropped {prune(result)} stale entries")
        result = survey()
    bad = 0
    for name, info in result["modules"].items():
        tag = f" (as {info['whole']['module']})" if info["whole"] else ""
        print(f"{name:52s} {len(info['present']):4d} / {len(info['names']):4d} present, "
              f"{len(info['listed']):4d} listed{tag}")  # fmt: skip
        for error in (info["error"], info["mirror_error"]):
            if error:
                print(f"    {error}")
        for n in info["neither"]:
            print(f"    NEITHER present nor listed: {name}.{n}")
            bad += 1
        for n in info["stale"]:
            print(f"    stale entry (present, or contradicted by this jax): {name}.{n}")
        if args.missing:
            for n, reason in sorted(info["listed"].items()):
                print(f"    {n}: {reason}")
    for m in result["stale_modules"]:
        print(f"stale [modules] entry: {m}")
    for t in result["unknown_tables"]:
        print(f"table [{t}] names a module this jax does not have (mark its entries' versions)")
    if args.readme:
        README.write_text(replace_block(README.read_text(), readme_table(result)))
        DETAILS.write_text(details_page(result))
        print(f"wrote {README.relative_to(ROOT)} and {DETAILS.relative_to(ROOT)}")
    if args.out:
        for p in write_reports(result, args.out):
            print(f"wrote {p}")
    print(f"jax {result['jax']}: {len(result['modules'])} modules, {bad} names neither present "
          "nor listed")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
