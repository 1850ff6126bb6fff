"""Two commits of purejit through `python -m bench`, alternated in fresh processes.

    python -m bench.compare_commits --old 86b5289 --new HEAD [--rounds 5] [--quick]
        [--only w1,w2] [--paired 0-7/8-15] [--json runs.json]
        [--out docs/benchmarks/compare_commits_cpu.md]

Each commit's tree is exported (`git archive`) into a temporary folder; round r runs
`bench.run.main` once per commit, each in a new Python process whose imports of `purejit`,
`purejit.ir`, `purejit.passes` and `bench` resolve to that commit's tree (whatever the venv's
editable install points at). The order alternates every round (old first in odd rounds), so
a slow period of a shared machine falls on both sides. Per workload the table gives the
median over rounds of purejit's steady-state time and first call (trace + compile + first
run, after the untimed warm-up compile `bench.run` does) for each commit and the ratio
new / old, and the same ratio with each run's time divided by `jax.jit`'s in the same
process (which cancels load the two processes saw differently). With `--paired 0-7/8-15`
the two runs of a round go at once, each pinned to one half of the cores (halves swapped
every round), so both commits meet the same machine state. Speed is reported, never
asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from subprocess import PIPE

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run in the child: map purejit (and its package-dir children) onto one tree, then bench.
_CHILD = r"""
import importlib.machinery, importlib.util, json, os, sys
tree, out, *argv = sys.argv[1:]
roots = {"purejit": "purejit", "purejit.ir": "ir", "purejit.passes": "passes"}


class _Tree:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in roots:
            return None
        folder = os.path.join(tree, roots[name])
        return importlib.util.spec_from_file_location(
            name, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
        )


sys.meta_path.insert(0, _Tree)
sys.path.insert(0, tree)
from bench.run import main

results = main(argv)
import purejit

assert purejit.__file__.startswith(tree), purejit.__file__
with open(out, "w") as f:
    json.dump(results, f)
"""


def export(commit: str, into: str) -> str:
    """The tree of `commit` (a full hash is resolved first) in a folder under `into`; a
    folder instead of a commit (an exported tree, or `.` for the working tree) is copied."""
    dest = os.path.join(into, str(len(os.listdir(into))))
    if os.path.isdir(commit):
        keep = ("purejit", "ir", "passes", "bench")
        for name in keep:
            shutil.copytree(os.path.join(commit, name), os.path.join(dest, name))
    else:
        sha = subprocess.check_output(["git", "-C", REPO, "rev-parse", commit], text=True)
        os.makedirs(dest)
        archive = subprocess.Popen(["git", "-C", REPO, "archive", sha.strip()], stdout=PIPE)
        subprocess.check_call(["tar", "-x", "-C", dest], stdin=archive.stdout)
        archive.wait()
    # byte-compile now, so that neither side's first round pays for writing .pyc files
    subprocess.check_call([sys.executable, "-m", "compileall", "-q", dest])
    return dest


def start(tree: str, bench_args: list[str], scratch: str, cores: str | None = None):
    """One `bench.run` of `tree` in a new process (pinned to `cores` by taskset if given)."""
    out = os.path.join(scratch, "results.json")
    md = os.path.join(scratch, "md")
    cmd = [sys.executable, "-c", _CHILD, tree, out, "--out", md, *bench_args]
    if cores:
        cmd = ["taskset", "-c", cores, *cmd]
    return subprocess.Popen(cmd, cwd=scratch, stdout=subprocess.DEVNULL), out


def finish(proc_out) -> list[dict]:
    proc, out = proc_out
    if proc.wait():
        raise RuntimeError(f"a bench run failed ({proc.args[-1]})")
    with open(out) as f:
        return json.load(f)


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarise(runs: dict[str, list[list[dict]]], old: str, new: str) -> dict:
    """Per workload: medians of purejit's steady and first-call times for each commit, and
    the new / old ratios, raw and relative to jax.jit of the same process."""
    names = [r["name"] for r in runs[old][0]]
    rows = {}
    for name in names:
        row = {}
        for kind in ("steady", "first"):
            for tag in (old, new):
                own, rel = [], []
                for run in runs[tag]:
                    res = next(r for r in run if r["name"] == name)
                    t, j = res[kind].get("purejit jit"), res[kind].get("jax.jit")
                    own.append(t)
                    rel.append(t / j if t and j else None)
                row[f"{kind} {tag}"] = _median(own)
                row[f"{kind} rel {tag}"] = _median(rel)
            for suffix in ("", " rel"):
                a, b = row[f"{kind}{suffix} {old}"], row[f"{kind}{suffix} {new}"]
                row[f"{kind}{suffix} ratio"] = b / a if a and b else None
        rows[name] = row
    return rows


def _geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def _t(s):
    if s is None:
        return "—"
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")


def report(rows: dict, old: str, new: str, rounds: int, cmd: str) -> str:
    def r(x):
        return "—" if x is None else f"{x:.3f}x"

    lines = [
        f"# purejit {new} against {old}: `python -m bench`, alternated fresh processes",
        "",
        f"`{cmd}`: {rounds} rounds, each running both commits in new processes (order",
        "alternating per round); medians over rounds. *raw*: median time new / median time old;",
        "*rel. jax*: the same with each run's time divided by `jax.jit`'s in its own process.",
        "",
        "| workload | steady old | steady new | raw | rel. jax | first old | first new | raw"
        " | rel. jax |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, w in rows.items():
        lines.append(
            f"| {name} | {_t(w[f'steady {old}'])} | {_t(w[f'steady {new}'])} "
            f"| {r(w['steady ratio'])} | {r(w['steady rel ratio'])} "
            f"| {_t(w[f'first {old}'])} | {_t(w[f'first {new}'])} "
            f"| {r(w['first ratio'])} | {r(w['first rel ratio'])} |"
        )
    for kind in ("steady", "first"):
        for suffix, what in (("", "raw"), (" rel", "relative to jax.jit")):
            vals = [w[f"{kind}{suffix} ratio"] for w in rows.values()]
            worst = max((v for v in vals if v), default=float("nan"))
            lines.append(
                f"\n{kind.capitalize()} state, {what}: geometric mean **{_geomean(vals):.3f}x**"
                f", largest {worst:.3f}x"
                if kind == "steady"
                else f"\nFirst call, {what}: geometric mean **{_geomean(vals):.3f}x**, largest "
                f"{worst:.3f}x"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", default="HEAD")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument(
        "--paired",
        default="",
        metavar="CORES/CORES",
        help="run both commits of a round at once, pinned by taskset to these two core sets "
        "(e.g. 0-7/8-15), swapped every round: both see the same machine at the same time",
    )
    ap.add_argument("--out", default="docs/benchmarks/compare_commits_cpu.md")
    ap.add_argument(
        "--json",
        default=None,
        help="every run's results are written there; runs already there are kept and the "
        "rounds continue after them (a comparison spread over several sessions or machines)",
    )
    a = ap.parse_args(argv)
    bench_args = (["--quick"] if a.quick else []) + (["--only", a.only] if a.only else [])
    with tempfile.TemporaryDirectory(prefix="pj-compare-") as tmp:
        trees = {tag: export(c, tmp) for tag, c in (("old", a.old), ("new", a.new))}
        runs = {"old": [], "new": []}
        if a.json and os.path.exists(a.json):
            with open(a.json) as f:
                runs = json.load(f)["runs"]
        first = min(len(runs["old"]), len(runs["new"]))
        for i in range(first, first + a.rounds):
            order = ("old", "new") if i % 2 == 0 else ("new", "old")
            if a.paired:  # both at once, each on its own half of the cores, halves swapped
                halves = a.paired.split("/")
                procs = {
                    tag: start(trees[tag], bench_args, tempfile.mkdtemp(dir=tmp), cores)
                    for tag, cores in zip(order, halves)
                }
                done = [(tag, finish(procs[tag])) for tag in order]
            else:
                done = []
                for tag in order:
                    done.append(
                        (tag, finish(start(trees[tag], bench_args, tempfile.mkdtemp(dir=tmp))))
                    )
            for tag, res in done:
                runs[tag].append(res)
                print(f"round {i + 1}/{first + a.rounds}: {tag} done", flush=True)
            if a.json:  # after every round, so a cut-off call keeps what it measured
                with open(a.json, "w") as f:
                    json.dump({"old": a.old, "new": a.new, "runs": runs}, f)
    rows = summarise(runs, "old", "new")
    cmd = "python -m bench.compare_commits " + " ".join(argv if argv is not None else sys.argv[1:])
    md = report(rows, "old", "new", min(len(runs["old"]), len(runs["new"])), cmd).replace(
        "# purejit new against old", f"# purejit {a.new} (new) against {a.old} (old)"
    )
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        f.write(md)
    print(md)
    return rows


if __name__ == "__main__":
    main()
