"""Run Flax, Equinox, lineax, optimistix, diffrax and numpyro programs under JAX and under
purejit's drop-in mode, compare every saved array, and write docs/ecosystem_report.md.

    python tools/ecosystem_report.py                     # every program, writes the doc
    python tools/ecosystem_report.py --only lineax equinox --doc /tmp/report.md

Installs nothing: it runs whatever library versions are installed, and a program whose
library is missing is reported as "not installed". The programs are the drop-in tests'
(`tests/ecosystem/_*_program.py`); each runs as `python PROGRAM OUT.npz` under JAX and as
`python -m purejit run PROGRAM OUT.npz` under purejit, in its own process, and saves its
results as arrays. Each part of a program (the arrays whose names start with the part's
prefixes) gets a row: arrays compared, how many are bit for bit, the worst difference in
ulps of the array's largest magnitude, and pass/fail against the library's own test
tolerance. Raw results go to --results (JSON).

    python tools/ecosystem_report.py --flax-tests /path/to/flax/tests --reuse-programs

also runs Flax's own test modules (the wheel ships none: `--flax-tests` names the `tests`
folder of a checkout of Flax's repository at the installed version) under JAX and in
drop-in mode, one pytest process each (tools/ecosystem_check.py's runner), and counts the
test ids JAX passes that pass on purejit; `--flax-modules` picks the modules.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import ecosystem_check  # noqa: E402  (its pytest runner and counting)

PROGRAMS_DIR = ROOT / "tests" / "ecosystem"
DOC = ROOT / "docs" / "ecosystem_report.md"
DISTS = ("jax", "jaxlib", "flax", "equinox", "optax", "lineax", "optimistix", "diffrax")
DISTS += ("numpyro",)


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """|purejit - JAX| <= atol + rtol |JAX| elementwise (floats; everything else exactly)."""

    rtol: float
    atol: float
    source: str  # where the library's own tests use it


# The libraries' own test tolerances for float32 results computed two ways
FLAX = Tolerance(1e-7, 1e-6, "Flax's linen_transforms_test: `assert_allclose(y1, y2, atol=1e-6)`")
EQUINOX = Tolerance(1e-5, 1e-8, "Equinox's tests/helpers.py `tree_allclose` defaults")
LINEAX = Tolerance(1e-5, 1e-8, "lineax's tests/helpers.py `tree_allclose` defaults")
OPTIMISTIX = Tolerance(1e-5, 1e-5, "optimistix's test_root_find: `atol = rtol = 1e-5`")
DIFFRAX = Tolerance(1e-5, 1e-8, "diffrax's test/helpers.py `tree_allclose` defaults")
NUMPYRO = Tolerance(0.0, 0.1, "numpyro's test_mcmc: posterior means `atol=0.05`-`0.22`")


@dataclasses.dataclass(frozen=True)
class Part:
    """Rows of the report: the arrays of a program whose names start with `prefixes`."""

    label: str
    prefixes: tuple[str, ...]
    # the arrays' samples come from chains that part (compared by mean and standard
    # deviation within the tolerance, not elementwise)
    statistical: bool = False
    # arrays that are zero in exact arithmetic, so both sides hold rounding noise: compared
    # against the tolerance, left out of the worst ulp (a ratio of two noises)
    noise: tuple[str, ...] = ()
    # why arrays may differ from JAX's (shown where they are not all bit for bit)
    why: str = ""


@dataclasses.dataclass(frozen=True)
class Program:
    name: str
    file: str  # under tests/ecosystem/
    libraries: tuple[str, ...]  # import names that must be installed
    tolerance: Tolerance
    parts: tuple[Part, ...]


DOT_T = "purejit transposes `dot_general` as x^T ct where JAX computes (ct^T x)^T: weight gradients sum in another order"  # noqa: E501
EAGER_DIV = "JAX's eager broadcast-divide multiplies by the reciprocal on XLA CPU, purejit's divides exactly: eager means and norm statistics"  # noqa: E501

PROGRAMS = (
    Program(
        "flax_nnx",
        "_flax_nnx_program.py",
        ("flax", "optax"),
        FLAX,
        (
            Part("nnx MNIST tutorial CNN: Conv, avg_pool, Linear, adamw, MultiMetric", ("cnn",)),
            Part("nnx MultiHeadAttention, eager and under nnx.jit", ("mha_",)),
            Part("nnx MLP: BatchNorm, Dropout, nnx.Optimizer(adamw)", ("mlp",), why=DOT_T),
            Part("nnx Linear trained through split/merge under jax.jit", ("linear",)),
            Part("nnx.vmap, nnx.scan, nnx.grad through scan, nnx.remat, nnx.cond", ("tr_",)),
            Part("outer nnx.Variable mutated inside jit raises", ("leak_error",)),
        ),
    ),
    Program(
        "flax_linen",
        "_flax_linen_program.py",
        ("flax", "optax"),
        FLAX,
        (
            Part("linen MLP: init, apply, 6 jitted adam steps", ("mlp",), why=DOT_T),
            Part(
                "linen Conv, LayerNorm, attention, Dropout, BatchNorm; 4 momentum steps",
                ("block",),
                why=f"{DOT_T}; {EAGER_DIV}",
                # softmax is invariant to a shift per query: the key bias's gradient is zero
                noise=("block/['params']['MultiHeadDotProductAttention_0']['key']['bias']",),
            ),
            Part("linen nn.scan (and under jit(grad)), nn.remat, nn.vmap, nn.cond", ("lift_",)),
        ),
    ),
    Program(
        "equinox",
        "_equinox_program.py",
        ("equinox",),
        EQUINOX,
        (
            Part("Equinox MLP: filter_jit, filter_value_and_grad, 5 steps", ("mlp_",), why=DOT_T),
            Part("Equinox filter_vmap of the trained MLP", ("vmap",), why=DOT_T),
            Part("Equinox Conv2d and LayerNorm", ("conv", "layernorm")),
            Part("Equinox GRUCell in lax.scan", ("gru_",)),
            Part("Equinox error_if under filter_jit: passes, and raises as on JAX", ("error_if",)),
        ),
    ),
    Program(
        "equinox_attention",
        "_equinox_attention_program.py",
        ("equinox", "optax"),
        EQUINOX,
        (
            Part(
                "Equinox MultiheadAttention classifier: Embedding, LayerNorm, Dropout, adam",
                ("losses", "logits", "param"),
                why=DOT_T,
            ),
            Part(
                "Equinox BatchNorm under filter_vmap(axis_name=), eager",
                ("bn_",),
                why=EAGER_DIV,
            ),
            Part("Equinox internal.while_loop(checkpointed) under jit(grad)", ("loop_grad",)),
            Part("Equinox filter_checkpoint under filter_grad", ("ckpt_grad",), why=DOT_T),
        ),
    ),
    Program(
        "lineax",
        "_sci_lineax_program.py",
        ("lineax",),
        LINEAX,
        (
            Part("lineax LU, Cholesky, CG solves (float64)", ("lu", "cholesky", "cg")),
            Part("lineax grad of a jitted LU solve", ("lu_grad",)),
        ),
    ),
    Program(
        "optimistix",
        "_sci_optimistix_program.py",
        ("optimistix",),
        OPTIMISTIX,
        (
            Part("optimistix Newton root find, and its gradient", ("newton_", "root_grad")),
            Part("optimistix Chord root find; BFGS minimise", ("chord_", "bfgs_")),
        ),
    ),
    Program(
        "diffrax",
        "_sci_diffrax_program.py",
        ("diffrax",),
        DIFFRAX,
        (
            Part("diffrax Tsit5 + PID, Lotka-Volterra at 11 times", ("lv_",)),
            Part("diffrax Dopri5, jit(value_and_grad) through the solve", ("decay",)),
            Part(
                "diffrax Euler; Kvaerno5 on stiff Robertson; grad through Kvaerno3",
                ("euler_", "robertson_", "kvaerno_"),
            ),  # fmt: skip
        ),
    ),
    Program(
        "numpyro",
        "_sci_numpyro_program.py",
        ("numpyro",),
        NUMPYRO,
        (
            Part("numpyro NUTS, 200+200 draws, jit_model_args=True", ("jit_",)),
            Part(
                "numpyro NUTS, default settings (draws compared by mean and sd)",
                ("default_",),
                statistical=True,
                why="numpyro takes the first gradient eagerly: JAX's eager gradient is an ulp "
                "from its jitted one, purejit's equals it, and the chains part",
            ),
        ),
    ),
)

# Flax's test modules run by --flax-tests (paths under its tests/ folder): nnx's layers,
# state, variables, rngs, optimizer and metrics, linen's layers (integration_test needs
# orbax, not installed here)
FLAX_MODULES = (
    "nnx/ids_test.py", "nnx/filters_test.py", "nnx/containers_test.py", "nnx/ema_test.py",
    "nnx/state_test.py", "nnx/variable_test.py", "nnx/helpers_test.py",
    "nnx/nn/embed_test.py", "nnx/nn/stochastic_test.py", "nnx/nn/lora_test.py",
    "nnx/nn/conv_test.py", "nnx/nn/attention_test.py", "nnx/nn/linear_test.py",
    "nnx/nn/normalization_test.py", "nnx/nn/recurrent_test.py", "nnx/rngs_test.py",
    "nnx/optimizer_test.py", "nnx/metrics_test.py",
    "linen/linen_activation_test.py", "linen/linen_dtypes_test.py",
    "linen/initializers_test.py", "linen/linen_batch_apply_test.py",
    "linen/linen_meta_test.py", "linen/linen_combinators_test.py",
    "linen/linen_attention_test.py", "linen/linen_recurrent_test.py",
)  # fmt: skip

# The arrays a program saves that name an exception (or whether one was raised): equal on
# both sides, and what JAX must give
ERRORS = {
    "leak_error": "TraceContextError",
    "error_if_raised": True,
    "error_if_type": "EquinoxRuntimeError",
}


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> dict[str, str]:
    return {d: _version(d) for d in DISTS}


def missing(program: Program) -> list[str]:
    return [m for m in program.libraries if importlib.util.find_spec(m) is None]


def _env() -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = " ".join(
        f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f
    )
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_program(program: Program, out_dir: pathlib.Path, timeout: float) -> dict:
    """Run `program` under JAX and under purejit at once, each in its own process; returns
    {mode: (npz path or None, seconds, output tail)}."""
    path = PROGRAMS_DIR / program.file
    cmds = {
        "jax": [sys.executable, str(path)],
        "purejit": [sys.executable, "-m", "purejit", "run", str(path)],
    }
    procs, start = {}, time.time()
    for mode, cmd in cmds.items():
        npz = out_dir / f"{program.name}.{mode}.npz"
        npz.unlink(missing_ok=True)
        log = open(out_dir / f"{program.name}.{mode}.log", "w+")  # noqa: SIM115
        procs[mode] = (subprocess.Popen([*cmd, str(npz)], env=_env(), stdout=log,
                                        stderr=subprocess.STDOUT, cwd=ROOT), npz, log)  # fmt: skip
    ended = {}
    while len(ended) < len(procs) and time.time() - start < timeout:
        for mode, (proc, _, _) in procs.items():
            if mode not in ended and proc.poll() is not None:
                ended[mode] = round(time.time() - start, 1)
        time.sleep(0.2)
    done = {}
    for mode, (proc, npz, log) in procs.items():
        if proc.poll() is None:  # past the timeout
            proc.kill()
            proc.wait()
        log.seek(0)
        tail = log.read()[-3000:]
        log.close()
        ok = proc.returncode == 0 and npz.exists()
        done[mode] = (npz if ok else None, ended.get(mode, "timeout"), tail)
    return done


def scaled_ulp(want: np.ndarray, got: np.ndarray) -> float:
    """The largest difference in units of the last place of the array's largest magnitude
    (a gradient summed in another order differs in ulps of its scale, not of each entry)."""
    if not want.size:
        return 0.0
    scale = np.spacing(np.abs(want).max().astype(want.dtype))
    return float(np.abs(want.astype(np.float64) - got).max() / scale)


def owner(key: str, parts) -> Part | None:
    """The part an array belongs to: the one with the longest prefix of its name."""
    best = max(
        ((len(p), part) for part in parts for p in part.prefixes if key.startswith(p)),
        key=lambda x: x[0],
        default=(0, None),
    )
    return best[1]


def compare_part(part: Part, parts, want, got, tol: Tolerance) -> dict:
    """One row: the part's arrays under JAX (`want`) and purejit (`got`), both npz-like
    (`parts`: all the program's parts, each array belonging to one)."""
    keys = sorted(k for k in set(want) | set(got) if owner(k, parts) is part)
    row = {"arrays": len(keys), "exact": 0, "worst_ulp": 0.0, "worst": "", "failures": []}
    row["statistical"] = part.statistical
    for k in keys:
        if k not in want or k not in got:
            row["failures"].append(f"{k}: only under {'JAX' if k in want else 'purejit'}")
            continue
        w, g = np.asarray(want[k]), np.asarray(got[k])
        if k in ERRORS and w.item() != ERRORS[k]:
            row["failures"].append(f"{k}: JAX gave {w.item()!r}, expected {ERRORS[k]!r}")
        if w.dtype.kind == g.dtype.kind == "U" and w.shape == g.shape == ():
            if w.item() == g.item():
                row["exact"] += 1
            else:
                row["failures"].append(f"{k}: `{g.item()}` where JAX gives `{w.item()}`")
            continue
        if (w.shape, w.dtype) != (g.shape, g.dtype):
            row["failures"].append(f"{k}: {g.dtype}{list(g.shape)} vs {w.dtype}{list(w.shape)}")
            continue
        if np.array_equal(w, g, equal_nan=w.dtype.kind in "fc"):
            row["exact"] += 1
        elif w.dtype.kind in "fc" and k not in part.noise:
            ulp = scaled_ulp(w, g)
            if ulp > row["worst_ulp"]:
                row["worst_ulp"], row["worst"] = ulp, k
        if part.statistical and w.dtype.kind == "f":
            for stat in (np.mean, np.std):
                a, b = float(stat(w)), float(stat(g))
                if abs(a - b) > tol.atol + tol.rtol * abs(a):
                    row["failures"].append(f"{k}: {stat.__name__} {b:.4g} vs JAX's {a:.4g}")
        elif not part.statistical and w.dtype.kind in "fc":
            if not np.allclose(g, w, rtol=tol.rtol, atol=tol.atol, equal_nan=True):
                row["failures"].append(f"{k}: beyond the tolerance ({row['worst_ulp']:.3g} ulp)")
        elif not part.statistical and not np.array_equal(w, g):
            row["failures"].append(f"{k}: {w.dtype} values differ")
    if not keys:
        row["failures"].append("no arrays saved")
    row["result"] = "fail" if row["failures"] else "pass"
    return row


def report_program(
    program: Program, out_dir: pathlib.Path, timeout: float, reuse: bool = False
) -> list[dict]:
    """The rows of one program (its library missing: rows that say so, nothing run).
    `reuse`: compare the results an earlier run left in `out_dir`, where both are there."""
    base = {"program": program.name, "file": program.file}
    absent = missing(program)
    if absent:
        return [{**base, "part": p.label, "result": "not installed", "missing": absent}
                for p in program.parts]  # fmt: skip
    saved = {m: out_dir / f"{program.name}.{m}.npz" for m in ("jax", "purejit")}
    timing = out_dir / f"{program.name}.seconds.json"
    if reuse and all(p.exists() for p in saved.values()) and timing.exists():
        runs = {m: (p, json.loads(timing.read_text())[m], "") for m, p in saved.items()}
    else:
        runs = run_program(program, out_dir, timeout)
        timing.write_text(json.dumps({m: r[1] for m, r in runs.items()}))
    seconds = {m: r[1] for m, r in runs.items()}
    failed = {m: r[2] for m, r in runs.items() if r[0] is None}
    if failed:
        reason = "; ".join(f"{m} did not finish: {t.strip().splitlines()[-1:]}"
                           for m, t in failed.items())  # fmt: skip
        return [{**base, "part": p.label, "result": "fail", "failures": [reason],
                 "seconds": seconds} for p in program.parts]  # fmt: skip
    want, got = np.load(runs["jax"][0]), np.load(runs["purejit"][0])
    rows = []
    for p in program.parts:
        row = compare_part(p, program.parts, want, got, program.tolerance)
        rows.append({**base, "part": p.label, "seconds": seconds, **row})
    return rows


def flax_tests(tests_dir: pathlib.Path, modules, out_dir: pathlib.Path, timeout, jobs):
    """Flax's own test modules under JAX and purejit: ecosystem_check's row (JAX's passing
    ids, how many pass on purejit, the failing ids and their messages). Runs found in
    `out_dir` are reused (the slow JAX baseline runs once)."""
    files = [tests_dir / m for m in modules if (tests_dir / m).exists()]
    recs = ecosystem_check.run_suite(
        files, ecosystem_check.MODES, [1], timeout, out_dir, True, jobs
    )
    done = {}
    for r in recs:
        done.setdefault(ecosystem_check.module_key(r["module"]), set()).add(r["mode"])
    row = ecosystem_check.compare(recs, f"flax {_version('flax')}")[0]
    row["shipped"], row["modules_run"] = len(files), sorted(done)
    # a module that failed to collect under purejit has no per-test messages: its error's
    for r in recs:
        if r["mode"] == "purejit" and r["status"] not in (0, 1):
            lines = [x for x in str(r["tail"]).splitlines() if x.startswith("E ")]
            error = lines[0][1:].strip() if lines else f"pytest exited with {r['status']}"
            for t in row["failing"]:
                if not row["messages"].get(t) and t.startswith(_test_prefix(r["module"])):
                    row["messages"][t] = f"collection: {error}"
    # per module: JAX's passes and purejit's (of those)
    per = {}
    for r in recs:
        key = pathlib.Path(r["module"]).relative_to(tests_dir).as_posix()
        ids = {t for t, v in r["results"].items() if not t.startswith("_") and v == "passed"}
        per.setdefault(key, {})[r["mode"]] = ids
    row["per_module"] = {
        k: (len(v.get("jax", ())), len(v.get("jax", set()) & v.get("purejit", set())))
        for k, v in per.items()
    }
    return row


def _test_prefix(module: str) -> str:
    """The start of the junit ids of `module`'s tests (its dotted path, from /tmp)."""
    rel = os.path.relpath(module, "/tmp")
    return rel.removesuffix(".py").replace(os.sep, ".") + "."


def _failure_reasons(row: dict, top: int = 12) -> list[tuple[int, str]]:
    """The failing tests' messages, grouped (count, message) most common first."""
    counts: dict[str, int] = {}
    for t in row["failing"]:
        msg = " ".join((row["messages"].get(t) or "(no message)").split())[:150].replace("`", "'")
        counts[msg] = counts.get(msg, 0) + 1
    return sorted(((n, m) for m, n in counts.items()), reverse=True)[:top]


def _flax_section(row: dict, tests_dir: str) -> list[str]:
    lines = [
        "",
        "## Flax's own tests",
        "",
        f"The flax {_version('flax')} wheel ships no tests; these are the modules of Flax's "
        f"repository at that version ({tests_dir}), each in its own pytest "
        "process under JAX and in drop-in mode (`tools/_dropin_pytest_plugin.py`), one CPU "
        "device. *purejit passes*: the test ids JAX passes that also pass on purejit.",
        "",
        "| module | JAX passes | purejit passes (of JAX's) |",
        "|---|---:|---:|",
    ]
    for mod, (j, p) in sorted(row["per_module"].items()):
        lines.append(f"| `{mod}` | {j} | {p} |")
    share = row["purejit_passed"] / row["jax_passed"] if row["jax_passed"] else 0.0
    lines.append(
        f"| all {len(row['per_module'])} | {row['jax_passed']} | {row['purejit_passed']} "
        f"({100 * share:.1f}%) |"
    )
    reasons = _failure_reasons(row)
    if reasons:
        lines += ["", "What the failing tests raise (most common first):", ""]
        lines += [f"- {n} x `{m}`" for n, m in reasons]
    return lines


def _fmt_ulp(row: dict) -> str:
    if row.get("statistical") and row["exact"] < row["arrays"]:
        return "chains part"
    if row["exact"] == row["arrays"] or not row["worst"]:
        return "0"
    return f"{row['worst_ulp']:.3g} (`{row['worst']}`)"


def write_doc(rows: list[dict], path: pathlib.Path, ver: dict[str, str], flax=None) -> None:
    """The report; `flax`: (the row of Flax's own tests, their folder) or None."""
    parts = {(p.name, q.label): (p, q) for p in PROGRAMS for q in p.parts}
    lines = [
        "# JAX libraries' programs on purejit (drop-in mode)",
        "",
        "Generated by `python tools/ecosystem_report.py`; do not edit by hand. Versions: "
        + ", ".join(f"{d} {ver[d]}" for d in DISTS)
        + "; CPU.",
        "",
        "Each program (`tests/ecosystem/`) runs twice, each in its own process: under JAX "
        "(`python PROGRAM OUT.npz`) and in drop-in mode (`python -m purejit run PROGRAM "
        "OUT.npz`: every `import jax` of the program and of the libraries is purejit), and "
        "every array it saves is compared. *Worst ulp*: the largest difference in units of "
        "the last place of the array's largest magnitude. *Result*: every array within the "
        "library's own test tolerance (below), integers and errors equal.",
        "",
        "| program | part | arrays | bit-exact | worst ulp | result |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        if r["result"] == "not installed":
            lines.append(f"| `{r['file']}` | {r['part']} | | | | not installed "
                         f"({', '.join(r['missing'])}) |")  # fmt: skip
            continue
        if "arrays" not in r:
            lines.append(f"| `{r['file']}` | {r['part']} | | | | fail |")
            continue
        lines.append(
            f"| `{r['file']}` | {r['part']} | {r['arrays']} | {r['exact']} | {_fmt_ulp(r)} | "
            f"{r['result']} |"
        )
    lines += ["", "## Tolerances", "", "| library | rtol | atol | from |", "|---|---:|---:|---|"]
    seen = set()
    for p in PROGRAMS:
        if p.tolerance not in seen:
            seen.add(p.tolerance)
            t = p.tolerance
            lines.append(f"| {p.libraries[0]} | {t.rtol:g} | {t.atol:g} | {t.source} |")
    notes = []
    for r in rows:
        part = parts.get((r["program"], r["part"]), (None, None))[1]
        inexact = "arrays" in r and r["exact"] < r["arrays"]
        if part is not None and part.why and inexact:
            notes.append(f"- {r['part']}: {part.why}.")
        for f in r.get("failures", []):
            notes.append(f"- {r['part']}: fails: {f}")
    if notes:
        lines += ["", "## Why arrays differ", ""] + notes
    secs = [r for r in rows if "seconds" in r]
    if secs:
        lines += ["", "## Seconds (both sides run at once)", "", "| program | JAX | purejit |"]
        lines.append("|---|---:|---:|")
        for name in dict.fromkeys(r["program"] for r in secs):
            s = next(r["seconds"] for r in secs if r["program"] == name)
            lines.append(f"| {name} | {s['jax']} | {s['purejit']} |")
    if flax is not None:
        lines += _flax_section(*flax)
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="program names (" +
                    ", ".join(p.name for p in PROGRAMS) + ")")  # fmt: skip
    ap.add_argument("--timeout", type=float, default=900, help="seconds per program")
    ap.add_argument("--results", default="/tmp/purejit_ecosystem_report")
    ap.add_argument("--doc", default=str(DOC), help="where the Markdown report goes")
    ap.add_argument("--flax-tests", help="the tests/ folder of Flax's repository")
    ap.add_argument("--flax-modules", nargs="*", default=list(FLAX_MODULES))
    ap.add_argument(
        "--flax-source",
        default="a checkout",
        help="where --flax-tests came from, for the report (e.g. a commit)",
    )
    ap.add_argument("--jobs", type=int, default=2, help="Flax test processes at a time")
    ap.add_argument(
        "--reuse-programs",
        action="store_true",
        help="compare the programs' results found in --results instead of running them",
    )
    args = ap.parse_args(argv)
    out_dir = pathlib.Path(args.results)
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = [p for p in PROGRAMS if not args.only or p.name in args.only]
    unknown = set(args.only or ()) - {p.name for p in PROGRAMS}
    if unknown:
        ap.error(f"unknown programs {sorted(unknown)}")
    rows = []
    saved = out_dir / "report.json"
    for program in chosen:
        got = report_program(program, out_dir, args.timeout, args.reuse_programs)
        for r in got:
            counts = f" {r['exact']}/{r['arrays']} exact" if "arrays" in r else ""
            print(f"{program.name:18s} {r['part'][:60]:60s} {r['result']}{counts}", flush=True)
        rows += got
    ver = versions()
    saved.write_text(json.dumps({"versions": ver, "rows": rows}, indent=1))
    flax = None
    if args.flax_tests:
        flax_dir = out_dir / "flax_tests"
        flax_dir.mkdir(exist_ok=True)
        row = flax_tests(pathlib.Path(args.flax_tests), args.flax_modules, flax_dir,
                         args.timeout, args.jobs)  # fmt: skip
        print(f"flax tests: JAX passes {row['jax_passed']}, purejit {row['purejit_passed']}")
        flax = (row, args.flax_source)
    write_doc(rows, pathlib.Path(args.doc), ver, flax)
    print(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
