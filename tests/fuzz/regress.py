"""Regression files: every failure the fuzzer found, as IR text in and expected numbers out.

`tests/fuzz/regressions/<name>.json` holds the program (JSON, replayed through every way by
`check`), the traced IR text, the input arrays and JAX's results. `replay` parses the IR text,
runs it through the interpreter, the pass pipeline and XLA, and compares with the numbers.
"""

from __future__ import annotations

import json
import os

import jax
import numpy as np

import purejit
from purejit.backend import pjrt, stablehlo
from purejit.ir import interpret, parse
from purejit.passes import Pipeline

from .check import RTOL, _inexact_ops, _loosest, _scale, compare
from .program import JX, PJ, Program, np_dtype, run

DIR = os.path.join(os.path.dirname(__file__), "regressions")


def _encode(a: np.ndarray) -> dict:
    return {
        "dtype": str(a.dtype),
        "shape": list(a.shape),
        "values": a.astype(np.float64).ravel().tolist()
        if a.dtype.kind not in "biu"
        else a.ravel().tolist(),
    }


def _decode(d: dict) -> np.ndarray:
    return (
        np.asarray(
            d["values"],
            dtype=np.float64 if d["dtype"] in ("bfloat16", "float16", "float32") else d["dtype"],
        )
        .astype(np_dtype(d["dtype"]))
        .reshape(d["shape"])
    )


def save(prog: Program, name: str, note: str, directory: str = DIR) -> str:
    """Write the regression file for `prog` into `directory` (the fuzzer's `--save` writes
    failures elsewhere first); a program purejit cannot trace yet is saved without IR."""
    args = prog.args()
    want = [np.asarray(v) for v in jax.jit(lambda *a: run(prog, JX, a))(*args)]
    every = jax.jit(lambda *a: run(prog, JX, a, all_values=True))(*args)
    try:
        ir = purejit.jit(lambda *a: run(prog, PJ, a)).lower(*args).traced
        ir_lines = purejit.ir.print_function(ir).splitlines()
    except Exception:  # noqa: BLE001 - the failure may be in tracing itself
        ir_lines = None
    data = {
        "note": note,
        "program": prog.to_json(),
        "source": prog.source().splitlines(),
        "ir": ir_lines,
        "inputs": [_encode(a) for a in args],
        "expected": [_encode(w) for w in want],
        "scale": _scale(every),
        "loosest": _loosest([*args, *every]),
    }
    path = os.path.join(directory, name + ".json")
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    return path


def program(name: str) -> Program:
    with open(os.path.join(DIR, name + ".json")) as f:
        return Program.from_json(json.load(f)["program"])


def names() -> list[str]:
    return sorted(n[:-5] for n in os.listdir(DIR) if n.endswith(".json"))


def replay(name: str) -> None:
    """IR text in, expected numbers out: interpreter, every pipeline variant, XLA."""
    with open(os.path.join(DIR, name + ".json")) as f:
        data = json.load(f)
    prog = Program.from_json(data["program"])
    if data["ir"] is None:  # saved before purejit could trace it: the program is replayed
        return
    fn = parse("\n".join(data["ir"]))
    args = [_decode(d) for d in data["inputs"]]
    want = [_decode(d) for d in data["expected"]]
    exact = prog.exact or [False] * len(want)
    steps = max(1, min(_inexact_ops(prog), 6))

    def cmp(what, outs):
        for k, (g, w, ex) in enumerate(zip(outs, want, exact)):
            rtol = max(RTOL.get(str(w.dtype), 0.0), data.get("loosest", 0.0)) * steps
            compare(f"{name}: {what} result {k}", np.asarray(g), w, ex, rtol, data["scale"])

    cmp("interpreter", interpret(fn, *args))
    opt, _ = Pipeline().run(fn)
    cmp("interpreter after passes", interpret(opt, *args))
    exe = pjrt.compile(stablehlo.emit(opt), opt.param_types, opt.result_types)
    outs = exe.execute([purejit.Array(host=a).buffer for a in args])
    cmp("XLA", [np.asarray(o) for o in outs])
