"""Run JAX libraries' own tests under JAX and under purejit's drop-in mode, and compare.

    python tools/ecosystem_check.py                      # everything, writes docs/ecosystem.md
    python tools/ecosystem_check.py --only optax/_src/alias_test.py --devices 1
    python tools/ecosystem_check.py --skip-tests         # only the training loops

Installs nothing: it runs whatever optax / chex / jax versions are installed. Optax's test
modules come from the installed wheel (it ships them; `--optax-tests DIR` points at a copy
of optax's repository otherwise). Each module runs in its own pytest process, on 1 device
and on 8 forced CPU devices (`XLA_FLAGS=--xla_force_host_platform_device_count=8`), with the
same flags for JAX and for purejit; purejit's runs load `tools/_dropin_pytest_plugin.py`, so
every `import jax` of the tests and of optax is purejit. Results are counted by test id
against the ids JAX passes. Then one training loop per Optax optimizer family runs under
both and the final parameters are compared bit for bit.

Raw results (JSON, one file per run) go to --results (default /tmp/purejit_ecosystem);
`--reuse` keeps the runs found there, so the slow JAX baseline runs once.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
DOC = ROOT / "docs" / "ecosystem.md"
MODES = ("jax", "purejit")


def _package_dir(name: str) -> pathlib.Path | None:
    import importlib.util

    spec = importlib.util.find_spec(name)
    return None if spec is None else pathlib.Path(spec.origin).parent


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def module_key(path: str) -> str:
    """A test module's name independent of where the library is installed (runs made from
    different virtual environments count as the same module)."""
    return "/".join(pathlib.Path(path).parts[-3:])


def versions() -> dict:
    """The versions a run measures (recorded with every result, reported in the doc)."""
    return {d: _version(d) for d in ("jax", "jaxlib", "optax", "chex")}


def test_modules(package: str, tests_dir: str | None) -> list[pathlib.Path]:
    """The `*_test.py` files of `package` (the installed wheel's, or those under tests_dir)."""
    base = pathlib.Path(tests_dir) if tests_dir else _package_dir(package)
    if base is None:
        return []
    found = [p for p in base.rglob("*_test.py") if "__pycache__" not in p.parts]
    return sorted(found, key=lambda p: (p.stat().st_size, str(p)))  # small modules first


def _env(mode: str, devices: int) -> dict:
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    if devices > 1:
        flags.append(f"--xla_force_host_platform_device_count={devices}")
    env["XLA_FLAGS"] = " ".join(flags)
    path = [str(TOOLS), str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def run_module(
    path: pathlib.Path, mode: str, devices: int, timeout: float, out: pathlib.Path, xdist: int = 0
):
    """Run one test module under `mode` in its own pytest process (`xdist` > 0: that many
    pytest-xdist workers); returns its record."""
    xml = out.with_suffix(".xml")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(path),
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={xml}",
        "-o",
        "junit_family=xunit1",
    ]
    if mode == "purejit":
        cmd += ["-p", "_dropin_pytest_plugin"]
    if xdist:
        cmd += ["-n", str(xdist)]
    start = time.time()
    try:
        proc = subprocess.run(
            cmd,
            env=_env(mode, devices),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd="/tmp",
        )
        status, tail = proc.returncode, proc.stdout[-3000:] + proc.stderr[-2000:]
    except subprocess.TimeoutExpired as e:
        status, tail = "timeout", str(e.stdout or "")[-2000:]
    results = {}
    if xml.exists():
        for case in ET.parse(xml).getroot().iter("testcase"):
            tid = f"{case.get('classname')}::{case.get('name')}"
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                    results.setdefault("_messages", {})[tid] = (child.get("message") or "")[:300]
                elif child.tag == "skipped":
                    outcome = "skipped"
            if outcome != "passed" or tid not in results:
                results[tid] = outcome
        xml.unlink()
    record = {
        "versions": versions(),
        "module": str(path),
        "mode": mode,
        "devices": devices,
        "status": status,
        "seconds": round(time.time() - start, 1),
        "results": results,
        "tail": tail,
    }
    out.write_text(json.dumps(record, indent=1))
    return record


def run_suite(files, modes, devices_list, timeout, results_dir, reuse, jobs=1, xdist=0):
    """Run every (device count, module, mode) not reused from `results_dir`, `jobs` pytest
    processes at a time, in the order given (small modules first: a run cut short has
    covered the most modules)."""
    records, todo = [], []
    for devices in devices_list:
        for path in files:
            for mode in modes:
                rel = "_".join(path.parts[-3:]).replace(".py", "")
                out = results_dir / f"{mode}-{devices}dev-{rel}.json"
                if reuse and out.exists():
                    records.append(json.loads(out.read_text()))
                    continue
                if reuse == "only":
                    continue
                todo.append((path, mode, devices, out, rel))

    def run(task):
        path, mode, devices, out, rel = task
        rec = run_module(path, mode, devices, timeout, out, xdist)
        n = {
            k: sum(v == k for v in rec["results"].values() if isinstance(v, str))
            for k in ("passed", "failed", "skipped")
        }
        print(
            f"{mode:8s} {devices}dev {rel:55s} {n} {rec['seconds']}s "
            f"{'' if rec['status'] in (0, 1) else rec['status']}",
            flush=True,
        )
        return rec

    if jobs <= 1:
        records += [run(t) for t in todo]
        return records
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(jobs) as pool:
        records += list(pool.map(run, todo))
    return records


def compare(records, label: str) -> list[dict]:
    """Per device count: JAX's passing ids, how many of them pass on purejit, what fails."""
    rows = []
    for devices in sorted({r["devices"] for r in records}):
        by_mode = {m: {} for m in MODES}
        seconds = {m: 0.0 for m in MODES}
        modules = set()
        for r in records:
            if r["devices"] != devices:
                continue
            modules.add(module_key(r["module"]))
            seconds[r["mode"]] += r["seconds"]
            by_mode[r["mode"]].update(
                {k: v for k, v in r["results"].items() if not k.startswith("_")}
            )
        jax_pass = {t for t, v in by_mode["jax"].items() if v == "passed"}
        pj = by_mode["purejit"]
        pj_pass = {t for t in jax_pass if pj.get(t) == "passed"}
        failing = sorted(t for t in jax_pass if t not in pj_pass)
        messages = {}
        for r in records:
            if r["devices"] == devices and r["mode"] == "purejit":
                messages.update(r["results"].get("_messages", {}))
        rows.append(
            {
                "suite": label,
                "devices": devices,
                "modules": len(modules),
                "tests": len(by_mode["jax"]),
                "jax_passed": len(jax_pass),
                "purejit_passed": len(pj_pass),
                "purejit_extra": len(
                    [t for t, v in pj.items() if v == "passed" and t not in jax_pass]
                ),
                "failing": failing,
                "messages": {t: messages.get(t, "") for t in failing},
                "seconds": seconds,
                "versions": next(
                    (r["versions"] for r in records if r["devices"] == devices and "versions" in r),
                    None,
                ),
            }
        )
    return rows


# ---- training loops ------------------------------------------------------------------------

OPTIMIZERS = {
    "sgd (momentum, nesterov)": "optax.sgd(1e-2, momentum=0.9, nesterov=True)",
    "adam": "optax.adam(1e-2)",
    "adamw": "optax.adamw(1e-2, weight_decay=1e-3)",
    "adagrad": "optax.adagrad(1e-1)",
    "rmsprop": "optax.rmsprop(1e-2, momentum=0.9)",
    "lion": "optax.lion(1e-3)",
    "adafactor": "optax.adafactor(1e-2)",
    "lamb": "optax.lamb(1e-2)",
    "novograd": "optax.novograd(1e-2)",
    "chain(clip_by_global_norm, adam, schedule)": (
        "optax.chain(optax.clip_by_global_norm(1.0), optax.adam("
        "optax.warmup_cosine_decay_schedule(0.0, 1e-2, 5, 20)))"
    ),
    "adabelief": "optax.adabelief(1e-2)",
    "yogi": "optax.yogi(1e-2)",
    "MultiSteps(adam)": "optax.MultiSteps(optax.adam(1e-2), every_k_schedule=2)",
}

LOOP = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp, optax

rng = np.random.default_rng(0)
X = rng.normal(size=(64, 8)).astype(np.float32)
Y = rng.normal(size=(64, 1)).astype(np.float32)
W1 = rng.normal(size=(8, 16)).astype(np.float32) * 0.3
W2 = rng.normal(size=(16, 1)).astype(np.float32) * 0.3
if sys.argv[2] == "mlp":
    params = {"w1": jnp.asarray(W1), "b1": jnp.zeros((16,)), "w2": jnp.asarray(W2)}

    def loss_fn(p, x, y):
        h = jnp.maximum(x @ p["w1"] + p["b1"], 0.0)
        return jnp.mean((h @ p["w2"] - y) ** 2)
else:  # linear least squares
    params = {"w": jnp.asarray(W1[:, :1]), "b": jnp.zeros((1,))}

    def loss_fn(p, x, y):
        return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

out = {}
for name, make in json.loads(sys.argv[1]).items():
    opt = eval(make)
    p, state = params, opt.init(params)

    @jax.jit
    def step(p, s):
        loss, g = jax.value_and_grad(loss_fn)(p, X, Y)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    losses = []
    for _ in range(20):
        p, state, loss = step(p, state)
        losses.append(float(loss))
    out[name] = {"loss": losses[-1], "bits": {k: np.asarray(v).view(np.uint32).tolist()
                                              for k, v in p.items()}}
print("RESULT" + json.dumps(out))
"""


def training_loops(timeout: float, optimizers: dict = OPTIMIZERS, model: str = "mlp") -> dict:
    """Each optimizer's 20 jitted steps under JAX and under purejit: final loss, bit match.
    `model`: "mlp" (a ReLU layer, then a linear one) or "linear" (least squares)."""
    script = pathlib.Path("/tmp/purejit_ecosystem_loop.py")
    script.write_text(LOOP)
    got = {}
    for mode in MODES:
        cmd = [sys.executable] + (["-m", "purejit", "run"] if mode == "purejit" else [])
        proc = subprocess.run(
            cmd + [str(script), json.dumps(optimizers), model],
            env=_env(mode, 1),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT")]
        if not line:
            raise RuntimeError(f"training loops under {mode} failed:\n{proc.stderr[-3000:]}")
        got[mode] = json.loads(line[0][len("RESULT") :])
    rows = {}
    for name in optimizers:
        j, p = got["jax"][name], got["purejit"][name]
        pairs = [ab for k in j["bits"] for ab in zip(_flat(j["bits"][k]), _flat(p["bits"][k]))]
        differing = sum(a != b for a, b in pairs)
        total = len(pairs)
        ulps = max((abs(a - b) for a, b in pairs if (a >> 31) == (b >> 31)), default=0)
        rows[name] = {
            "jax_loss": j["loss"],
            "purejit_loss": p["loss"],
            "differing": differing,
            "of": total,
            "max_ulp": ulps,
        }
    return rows


def _flat(x):
    if isinstance(x, list):
        for y in x:
            yield from _flat(y)
    else:
        yield x


# ---- the report ----------------------------------------------------------------------------


def write_doc(rows: list[dict], loops: dict | None, path: pathlib.Path) -> None:
    lines = [
        "# JAX libraries on purejit (drop-in mode)",
        "",
        "Generated by `python tools/ecosystem_check.py`; do not edit by hand. Versions where "
        f"it ran: jax {_version('jax')}, jaxlib {_version('jaxlib')}, optax "
        f"{_version('optax')}, chex {_version('chex')}; CPU. The test tables name the jax "
        "each run used (runs may come from another machine: `--results`).",
        "",
        "Each library's shipped test modules run in their own pytest process under JAX and "
        "under `purejit.compat` (every `import jax` is purejit), with the same device count "
        'and flags; "passed" counts the test ids JAX passes that also pass on purejit. '
        '"modules" counts those run to the end under both, of those shipped: a full run '
        "takes hours on a shared 2-core machine, so a report may cover part of them.",
        "",
        "| suite | jax / jaxlib | devices | modules | tests | JAX passes | "
        "purejit passes (of JAX's) | share |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        share = r["purejit_passed"] / r["jax_passed"] if r["jax_passed"] else 0.0
        v = r.get("versions") or {}
        lines.append(
            f"| {r['suite']} | {v.get('jax', '?')} / {v.get('jaxlib', '?')} | {r['devices']} | "
            f"{r['modules']} of {r.get('shipped', '?')} | "
            f"{r['tests']} | "
            f"{r['jax_passed']} | {r['purejit_passed']} | {100 * share:.1f}% |"
        )
    if loops:
        lines += [
            "",
            "## Training loops",
            "",
            "Least squares (`linear`) and a ReLU MLP (`mlp`), 20 jitted steps of "
            "`value_and_grad` + `opt.update` + `apply_updates`, per Optax optimizer family; "
            "the final parameters compared bit for bit.",
            "",
            "| optimizer | JAX final loss | purejit final loss | parameters differing | max ulp |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, r in loops.items():
            lines.append(
                f"| `{name}` | {r['jax_loss']:.7g} | {r['purejit_loss']:.7g} | "
                f"{r['differing']} of {r['of']} | {r['max_ulp']} |"
            )
    for r in rows:
        if r["failing"]:
            lines += ["", f"## {r['suite']}, {r['devices']} device(s): JAX passes, purejit not", ""]
            for t in r["failing"]:
                msg = " ".join(r["messages"].get(t, "").split())[:160]
                lines.append(f"- `{t}`" + (f": {msg}" if msg else ""))
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--only", nargs="*", help="test files (paths ending in these)")
    ap.add_argument("--optax-tests", help="a folder of optax test modules (default: the wheel)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per test module")
    ap.add_argument("--jobs", type=int, default=1, help="test modules run at a time")
    ap.add_argument("--xdist", type=int, default=0, help="pytest-xdist workers per module")
    ap.add_argument("--results", default="/tmp/purejit_ecosystem")
    ap.add_argument("--reuse", action="store_true", help="keep runs found in --results")
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="count only the runs found in --results (run nothing new; a partial report)",
    )
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("--skip-loops", action="store_true")
    ap.add_argument(
        "--loops-from",
        help="a summary.json of an earlier run whose training-loop table the report keeps "
        "(with --skip-loops: the loops take long and change only with purejit's numerics)",
    )
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite docs/ecosystem.md")
    args = ap.parse_args(argv)
    results = pathlib.Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    rows = []
    if not args.skip_tests:
        suites = {
            f"optax {_version('optax')}": test_modules("optax", args.optax_tests),
            f"chex {_version('chex')}": test_modules("chex", None),
        }
        for label, files in suites.items():
            if args.only:
                files = [f for f in files if any(str(f).endswith(o) for o in args.only)]
            if not files:
                continue
            reuse = "only" if args.report_only else args.reuse
            recs = run_suite(
                files, args.modes, args.devices, args.timeout, results, reuse,
                args.jobs, args.xdist,
            )  # fmt: skip
            if args.report_only:  # modules both modes finished, nothing else
                done = {}
                for r in recs:
                    key = (module_key(r["module"]), r["devices"])
                    done.setdefault(key, set()).add(r["mode"])
                recs = [
                    r for r in recs if done[(module_key(r["module"]), r["devices"])] == set(MODES)
                ]
            for row in compare(recs, label):
                row["shipped"] = len(files)
                rows.append(row)
        for r in rows:
            print(
                f"{r['suite']} {r['devices']}dev: JAX passes {r['jax_passed']} of "
                f"{r['tests']}, purejit {r['purejit_passed']} of those"
            )
    loops = None
    if args.loops_from:
        loops = json.loads(pathlib.Path(args.loops_from).read_text())["loops"]
    elif not args.skip_loops:
        loops = {
            f"{name}, {model}": r
            for model in ("linear", "mlp")
            for name, r in training_loops(args.timeout, OPTIMIZERS, model).items()
        }
        for name, r in loops.items():
            print(
                f"{name:45s} jax {r['jax_loss']:.7g} purejit {r['purejit_loss']:.7g} "
                f"differing {r['differing']}/{r['of']}, max {r['max_ulp']} ulp"
            )
    (results / "summary.json").write_text(json.dumps({"rows": rows, "loops": loops}, indent=1))
    if not args.no_doc:
        write_doc(rows, loops, DOC)
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
