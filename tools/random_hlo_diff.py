"""Which purejit.random samplers compile to other float arithmetic than jax.random's.

For every group of `bench.random_bits` (or those named by `--only`) with a float dtype in
`--dtypes`, the same sampler call is lowered by purejit and by `jax.jit`, and the multisets
of float operations are compared: `(op, dtype)` for arithmetic and transcendental ops,
`(convert, from -> to)` for conversions; integer ops (the threefry hash), constants and data
movement are left out, since they cannot round. Two stages:

* `--stage compiled` (default): XLA's optimised HLO for the current backend (after XLA's
  constant folding and simplification, bf16 normalisation and, on GPU, excess-precision
  rewrites). Run it on the machine whose bits differ: a difference here is what can make
  the bits differ. Loop samplers (gamma, poisson, binomial) show differences in how often
  XLA duplicated an op into several fusions, not only in the arithmetic.
* `--stage stablehlo`: the StableHLO each library hands XLA. purejit folds constant
  arithmetic (`maxval - minval`, `x * 1`, `x + 0`) at trace time where JAX passes the
  constants into private functions and leaves them to XLA, so this stage shows those too.

    python tools/random_hlo_diff.py [--stage stablehlo] [--dtypes bfloat16,float16|all]
                                    [--only gumbel]

Prints one line per group, `same` or the ops each side has more of; exits 1 if any differ.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import purejit  # noqa: E402
import purejit.random as pr  # noqa: E402
from bench import random_bits as rb  # noqa: E402

_FLOATS = {"f16", "bf16", "f32", "f64"}
# ops that move or make values without rounding them
_MOVES = {
    "constant", "broadcast_in_dim", "broadcast", "reshape", "slice", "concatenate",
    "transpose", "iota", "dynamic_slice", "dynamic_update_slice", "gather", "pad", "reverse",
    "bitcast", "bitcast_convert", "copy", "tuple", "get_tuple_element", "parameter", "fusion",
    "call", "while", "return", "select", "compare", "sort", "reduce", "scatter",
}  # fmt: skip
_ONE_ZERO = ("add", "subtract", "multiply")


# ---- StableHLO (both the generic and the pretty printed form) -----------------------------

_SHLO_OP = re.compile(r"^\s*(?:%[\w#:]+(?:,\s*%[\w#:]+)*\s*=\s*)?\"?(?:stablehlo|chlo)\.(\w+)")
_SHLO_DEF = re.compile(r"^\s*(%[\w#]+)\s*=")
_TENSOR = re.compile(r"tensor<(?:[\d?]+x)*([a-z]+\d*)>")
_FUNC = re.compile(r"func\.func\s+(?:public|private)?\s*@([\w.$-]+)")
_CALL = re.compile(r"(?:func\.)?call\s*@([\w.$-]+)|callee\s*=\s*@([\w.$-]+)")
_CONST = re.compile(
    r"^\s*(%[\w#]+)\s*=\s*\"?stablehlo\.constant\"?.*?dense<([^>]*)>.*tensor<([a-z]+\d*)>"
)
_NP = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}


def _is_zero_or_one(value: str, elem: str) -> bool:
    """Whether a StableHLO scalar constant (`dense<...>` text) is 0 or 1."""
    value = value.strip()
    try:
        if value.startswith('"0x'):
            dt = np.dtype(ml_dtypes.bfloat16 if elem == "bf16" else _NP.get(elem, elem))
            v = np.frombuffer(bytes.fromhex(value[3:-1]), dt)
            return v.size == 1 and float(v[0]) in (0.0, 1.0)
        return float(value) in (0.0, 1.0)
    except (ValueError, TypeError):
        return False


def _elem(type_text: str) -> str | None:
    m = _TENSOR.findall(type_text)
    return m[-1] if m else None


def _shlo_counts(text: str) -> collections.Counter:
    """The float-op multiset of a StableHLO module, calls expanded."""
    funcs: dict[str, list] = {}
    cur = None
    trivial: set[str] = set()  # values that are 0 or 1 constants (or broadcasts of them)
    for line in text.splitlines():
        fm = _FUNC.search(line)
        if fm:
            cur = fm.group(1)
            funcs[cur] = []
            continue
        if cur is None:
            continue
        cm = _CONST.match(line)
        if cm:
            if _is_zero_or_one(cm.group(2), cm.group(3)):
                trivial.add(cm.group(1))
            continue
        d = _SHLO_DEF.match(line)
        call = _CALL.search(line)
        if call:
            funcs[cur].append(("call", call.group(1) or call.group(2)))
            continue
        m = _SHLO_OP.match(line)
        if not m:
            continue
        op = m.group(1)
        args = re.findall(r"%[\w#]+", line.split("=", 1)[1] if d else line)
        if op == "broadcast_in_dim" and args and args[0] in trivial and d:
            trivial.add(d.group(1))
        if op in _MOVES:
            continue
        types = line.rsplit(":", 1)[-1]
        out = _elem(types.split("->")[-1])
        if op == "convert":
            src = _elem(types.split("->")[0])
            if src in _FLOATS or out in _FLOATS:
                funcs[cur].append(("op", (f"convert {src}->{out}",)))
            continue
        if out not in _FLOATS:
            continue
        if op in _ONE_ZERO and any(a in trivial for a in args):
            continue
        funcs[cur].append(("op", (f"{op} {out}",)))

    def expand(name, depth=0):
        c = collections.Counter()
        for kind, v in funcs.get(name, []):
            if kind == "op":
                c[v[0]] += 1
            elif depth < 50 and v in funcs:
                c += expand(v, depth + 1)
        return c

    return expand("main")


# ---- XLA's optimised HLO ------------------------------------------------------------------

_HLO_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*([a-z]+\d*)\[[^\]]*\](?:\{[^}]*\})?\s+([\w\-]+)\((.*)"
)


def _hlo_counts(text: str) -> collections.Counter:
    types: dict[str, str] = {}
    c = collections.Counter()
    for line in text.splitlines():
        m = _HLO_INSTR.match(line)
        if not m:
            continue
        name, dt, op, rest = m.groups()
        types[name] = dt
        op = op.replace("-", "_")
        if op == "convert":
            arg = re.match(r"\s*%?([\w.\-]+)", rest)
            src = types.get(arg.group(1)) if arg else None
            if src in _FLOATS or dt in _FLOATS:
                c[f"convert {src}->{dt}"] += 1
            continue
        if op in _MOVES or dt not in _FLOATS:
            continue
        c[f"{op} {dt}"] += 1
    return c


# ---- driver -------------------------------------------------------------------------------


def _texts(group, stage: str):
    name, shape, dtype, params, kw = group

    def pj_one(seed, *ps):
        return rb._call(pr, name, pr.key(seed), shape, dtype, ps, kw)

    def jx_one(seed, *ps):
        return rb._call(jax.random, name, jax.random.key(seed), shape, dtype, ps, kw)

    args = (np.int32(0), *params)
    a, b = purejit.jit(pj_one).lower(*args), jax.jit(jx_one).lower(*args)
    if stage == "compiled":
        return a.compile().as_text(), b.compile().as_text()
    return a.as_text(), b.as_text()


def diff_group(group, stage: str = "compiled") -> tuple[collections.Counter, collections.Counter]:
    """(ops purejit has more of, ops JAX has more of) for one group."""
    a, b = _texts(group, stage)
    count = _hlo_counts if stage == "compiled" else _shlo_counts
    ca, cb = count(a), count(b)
    return ca - cb, cb - ca


def _dtype_name(dt) -> str:
    return np.dtype(dt).name if dt is not None else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stage", choices=("stablehlo", "compiled"), default="compiled")
    ap.add_argument("--dtypes", default="bfloat16,float16", help="comma-separated, or 'all'")
    ap.add_argument("--only", default=None, help="only the groups of this sampler")
    args = ap.parse_args(argv)
    want = None if args.dtypes == "all" else set(args.dtypes.split(","))
    n_diff = 0
    for g in rb.groups():
        if args.only and g[0] != args.only:
            continue
        dts = {_dtype_name(g[2])} | {p.dtype.name for p in g[3]}
        if want is not None and not (dts & want):
            continue
        try:
            more_pj, more_jx = diff_group(g, args.stage)
        except Exception as e:  # a sampler that does not lower is reported, not skipped
            print(f"{rb.label(g):60s} ERROR {type(e).__name__}: {e}")
            n_diff += 1
            continue
        if not more_pj and not more_jx:
            print(f"{rb.label(g):60s} same")
            continue
        n_diff += 1
        fmt = lambda c: ", ".join(f"{k} x{v}" for k, v in sorted(c.items())) or "-"  # noqa: E731
        print(f"{rb.label(g):60s} DIFF purejit+[{fmt(more_pj)}] jax+[{fmt(more_jx)}]")
    print(f"{n_diff} group(s) differ ({args.stage}, {jax.default_backend()})")
    return 1 if n_diff else 0


if __name__ == "__main__":
    sys.exit(main())
