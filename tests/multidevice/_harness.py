"""Run multi-device test cases in a child process with 8 forced host CPU devices.

The pytest process never starts an 8-device backend itself: a case file defines functions
named `case_*`; `run_cases(path)` runs all of them in one child process (imports and compiles
are shared) under a timeout, and returns each case's outcome. A case that crashes or hangs
the child fails with the child's output tail; the cases before it keep their results.

    python tests/multidevice/_harness.py tests/multidevice/cases_collectives.py [case ...]
"""

from __future__ import annotations

import ast
import json
import os
import runpy
import socket
import subprocess
import sys
import time
import traceback

NUM_DEVICES = 8
_MARK = "@@purejit-case "


def case_names(path: str) -> list[str]:
    """The `case_*` functions defined at the top level of the file at `path`."""
    with open(path) as f:
        tree = ast.parse(f.read())
    return [
        n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("case_")
    ]


def child_env(num_devices: int = NUM_DEVICES) -> dict:
    env = dict(os.environ)
    flags = env.get("XLA_FLAGS", "")
    flags = " ".join(f for f in flags.split() if "xla_force_host_platform_device_count" not in f)
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={num_devices}".strip()
    env["JAX_PLATFORMS"] = "cpu"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def run_processes(worker: str, *args: str, n: int = 2, timeout: float = 180.0) -> None:
    """Run `n` copies of `worker` (4 CPU devices each) as processes 0..n-1 of one distributed
    job on a free localhost port: `worker ADDRESS K *args`; each must exit 0 and print
    `WORKER OK K`, else the assertion shows its output's tail."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    env = child_env(num_devices=4)
    procs = [
        subprocess.Popen(
            [sys.executable, worker, address, str(k), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for k in range(n)
    ]
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for k, (p, out) in enumerate(zip(procs, outs)):
        tail = "\n".join(out.splitlines()[-25:])
        assert p.returncode == 0 and f"WORKER OK {k}" in out, f"process {k}:\n{tail}"


def run_cases(path: str, timeout: float = 300.0) -> dict[str, str]:
    """Run every case of `path` in one child process; {name: "ok" | failure text}."""
    names = case_names(path)
    cmd = [sys.executable, os.path.abspath(__file__), os.path.abspath(path)]
    try:
        proc = subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=timeout)
        out, err, why = proc.stdout, proc.stderr, f"child exited with status {proc.returncode}"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        why = f"child timed out after {timeout:.0f} s"
    results = {}
    for line in out.splitlines():
        if line.startswith(_MARK):
            r = json.loads(line[len(_MARK) :])
            results[r["name"]] = "ok" if r["ok"] else r["error"]
    tail = "\n".join((out + "\n" + err).strip().splitlines()[-30:])
    for n in names:
        results.setdefault(n, f"{why} before this case finished:\n{tail}")
    return results


def _main(path: str, only: list[str]):
    mod = runpy.run_path(path, run_name="purejit_multidevice_cases")
    for name in only or case_names(path):
        t0 = time.perf_counter()
        try:
            mod[name]()
            rec = {"name": name, "ok": True}
        except BaseException:  # noqa: BLE001 - report every failure, keep going
            rec = {"name": name, "ok": False, "error": traceback.format_exc()}
        rec["seconds"] = round(time.perf_counter() - t0, 3)
        print(_MARK + json.dumps(rec), flush=True)


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2:])
