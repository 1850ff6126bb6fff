"""Programs as data, and the Hypothesis strategy that draws them.

A `Program` is its inputs (shape, dtype), a list of op applications (a `SPECS` name, the
numbers of the values it takes, its static parameters) and the values it returns. The same
program runs against purejit (`PJ`) and JAX (`JX`) through `run`; it is JSON, so a failing
program is kept as a regression file and replayed exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import jax
import jax.ad_checkpoint
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import purejit
import purejit.ad_checkpoint
import purejit.debug
import purejit.lax.linalg
import purejit.numpy as pjnp

from .ops import DTYPES, SPECS, kind

SHAPES = [(), (3,), (4,), (2, 3), (3, 1), (2, 2, 2)]
# A share of programs (LARGE_SHARE) runs on one large shape: reductions over 10^4-10^5
# elements show accumulation errors (a float16 sum accumulated in float16) that 8 elements
# never do. Leading dimensions stay small, so that scan/vmap bodies over axis 0 stay cheap.
LARGE_SHAPES = [(2, 50000), (3, 32768), (8, 12288), (4, 128, 192), (16, 4096), (100000,)]
LARGE_SHARE = 0.1
MAX_ELEMENTS = 100_000


class Lib:
    """A NumPy-like library: `lax`, `np` and the transformations, under the names JAX and
    purejit share."""

    def __init__(self, top, lax, np_, linalg, checkpoint_name):
        self.lax, self.np, self.linalg = lax, np_, linalg
        self.checkpoint_name = checkpoint_name
        self.random = top.random
        self.nn = top.nn
        for name in (
            "jit",
            "vmap",
            "grad",
            "checkpoint",
            "custom_jvp",
            "custom_vjp",
            "pure_callback",
        ):
            setattr(self, name, getattr(top, name))
        self.ShapeDtypeStruct = top.ShapeDtypeStruct
        self.debug_callback = top.debug.callback


PJ = Lib(purejit, purejit.lax, pjnp, purejit.lax.linalg, purejit.ad_checkpoint.checkpoint_name)
JX = Lib(jax, jax.lax, jjnp, jax.lax.linalg, jax.ad_checkpoint.checkpoint_name)


@dataclass
class Program:
    inputs: list  # [(shape, dtype)]
    ops: list  # [(spec name, arg numbers, params)]
    outputs: list  # value numbers
    seed: int = 0
    exact: list | None = None  # per output: bit-exact across implementations
    values: list | None = None  # explicit input values (nested lists) instead of the seed's

    def to_json(self) -> str:
        d = {"inputs": self.inputs, "ops": self.ops, "outputs": self.outputs, "seed": self.seed}
        return json.dumps({**d, "exact": self.exact, "values": self.values})

    @staticmethod
    def from_json(text: str) -> Program:
        d = json.loads(text)
        return Program(
            [(tuple(s), dt) for s, dt in d["inputs"]],
            [(n, tuple(a), _tuples(p)) for n, a, p in d["ops"]],
            list(d["outputs"]),
            d.get("seed", 0),
            d.get("exact"),
            d.get("values"),
        )

    def source(self) -> str:
        """The program as Python, for reports: `v3 = tanh(v1) {...}`."""
        lines = [f"v{i}: {dt}{list(s)}" for i, (s, dt) in enumerate(self.inputs)]
        n = len(self.inputs)
        for k, (name, args, params) in enumerate(self.ops):
            a = ", ".join(f"v{j}" for j in args)
            lines.append(f"v{n + k} = {name}({a}){' ' + repr(params) if params else ''}")
        lines.append("return " + ", ".join(f"v{j}" for j in self.outputs))
        return "\n".join(lines)

    def args(self) -> list[np.ndarray]:
        """The input arrays: exact small values (k/8 for floats), ties and extremes."""
        if self.values is not None:
            return [np.asarray(v, np.float64 if kind(dt) == "f" else None).astype(np_dtype(dt))
                    .reshape(s) for v, (s, dt) in zip(self.values, self.inputs)]  # fmt: skip
        rng = np.random.default_rng(self.seed)
        out = []
        for shape, dt in self.inputs:
            out.append(make_input(rng, shape, dt))
        return out


def _tuples(x):
    if isinstance(x, list):
        return tuple(_tuples(v) for v in x)
    if isinstance(x, dict):
        return {k: _tuples(v) for k, v in x.items()}
    return x


def np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def make_input(rng, shape, dt: str) -> np.ndarray:
    k = kind(dt)
    if k == "f" and int(np.prod(shape)) > 4096:
        # large inputs: values with full mantissas and a positive mean, so that a sum grows
        # and its rounding (float16 and bfloat16 accumulation) shows
        v = rng.uniform(-2.0, 3.0, size=shape)
    elif k == "f":
        v = rng.integers(-24, 25, size=shape) / 8.0
    elif k == "b":
        v = rng.integers(0, 2, size=shape).astype(bool)
    else:
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -20), 41 if k == "u" else 21, size=shape)
        extreme = rng.random(size=shape) < 0.1
        v = np.where(extreme, rng.choice([info.min, info.max], size=shape), v)
    return np.asarray(v).astype(np_dtype(dt))


def run(prog: Program, lib: Lib, args, all_values: bool = False):
    """Apply the program's ops with `lib`; its outputs (or every value)."""
    vals = list(args)
    for name, refs, params in prog.ops:
        vals.append(SPECS[name].apply(lib, params, *[vals[r] for r in refs]))
    return vals if all_values else [vals[j] for j in prog.outputs]


# --- the strategy ------------------------------------------------------------------------------


def _exact_rule(spec, out_dtype: str) -> bool:
    if isinstance(spec.exact, str):
        return kind(out_dtype) in spec.exact
    return bool(spec.exact)


def _abstract(spec, params, types, max_elements: int = 4096):
    """The (shape, dtype) of the op's result, from JAX's abstract evaluation (None: JAX
    rejects this application, or the result is larger than `max_elements`)."""
    structs = [jax.ShapeDtypeStruct(s, np_dtype(d)) for s, d in types]
    try:
        out = jax.eval_shape(lambda *a: spec.apply(JX, params, *a), *structs)
    except Exception:  # noqa: BLE001 - an invalid combination: draw another
        return None
    if not hasattr(out, "shape") or 0 in out.shape or out.size > max_elements:
        return None
    dt = str(out.dtype)
    if dt not in DTYPES:
        return None
    return tuple(out.shape), dt


@st.composite
def programs(draw, max_ops: int = 6, first: str | None = None):
    """Random well-typed programs over `SPECS`; with `first`, one that starts by applying
    that op to its first input (so that every op gets its share of programs)."""
    pick = lambda label, options: draw(st.sampled_from(list(options)), label=label)  # noqa: E731
    first_spec = SPECS[first] if first is not None else None
    # an op taking indices (take, scatter, dynamic_slice...) starts its programs with an
    # integer second input, so that each of these ops is drawn as often as the others
    index_first = first_spec is not None and "index" in first_spec.tags
    n_in = draw(st.integers(2 if index_first else 1, 3), label="inputs")
    # the large share: Hypothesis shrinks a failure towards the small shapes (False)
    large = draw(st.integers(0, int(round(1 / LARGE_SHARE)) - 1), label="large") == 1
    all_shapes = [pick("large shape", LARGE_SHAPES), ()] if large else SHAPES
    max_elements = MAX_ELEMENTS if large else 4096
    types = []
    for k in range(n_in):
        shapes, dtypes = all_shapes, DTYPES
        if first is not None and k == 0:
            spec = SPECS[first]
            dtypes = [d for d in DTYPES if kind(d) in spec.kinds]
            shapes = [s for s in all_shapes if s or "needs_rank1" not in spec.tags]
        if index_first and k == 1:
            dtypes = ["int32", "uint8"]
        types.append((pick("shape", shapes), pick("dtype", dtypes)))
    exact = [True] * n_in
    ops = []
    n_ops = draw(st.integers(1, max_ops), label="ops")
    pool = sorted(SPECS)
    attempts = 0
    while len(ops) < n_ops and attempts < 12 * n_ops:
        attempts += 1
        forced = first is not None and attempts <= 4 and not ops
        spec = SPECS[first if forced else pick("op", pool)]
        x = 0 if forced else draw(st.integers(0, len(types) - 1), label="arg0")
        sx, dx = types[x]
        if kind(dx) not in spec.kinds:
            continue
        if "needs_rank1" in spec.tags and not sx:
            continue
        refs = [x]
        if forced and index_first:
            refs.append(1)
        elif spec.arity == 2:
            if spec.same_type:
                same = [j for j, t in enumerate(types) if t == types[x]]
                refs.append(same[draw(st.integers(0, len(same) - 1), label="arg1")])
            else:
                refs.append(draw(st.integers(0, len(types) - 1), label="arg1"))
        in_types = [types[j] for j in refs]
        if spec.needs_exact and any(kind(types[j][1]) == "f" and not exact[j] for j in refs):
            continue
        if "second_exact" in spec.tags and not exact[refs[1]]:
            continue
        if "index" in spec.tags and kind(types[refs[1]][1]) not in "iu":
            continue
        params = spec.params(pick, in_types) if spec.params else {}
        out = _abstract(spec, params, in_types, max_elements)
        if out is None:
            continue
        ops.append((spec.name, tuple(refs), params))
        types.append(out)
        exact.append(all(exact[j] for j in refs) and _exact_rule(spec, out[1]))
    if not ops:
        ops.append(("abs" if kind(types[0][1]) == "f" else "max", (0,) * 1, {}))
        if SPECS[ops[0][0]].arity == 2:
            ops[0] = (ops[0][0], (0, 0), {})
        types.append(types[0])
        exact.append(True)
    outputs = [len(types) - 1]
    if len(types) - 2 >= n_in and draw(st.booleans(), label="second output"):
        outputs.insert(0, draw(st.integers(n_in, len(types) - 2), label="output"))
    seed = draw(st.integers(0, 2**16), label="seed")
    return Program(list(types[:n_in]), ops, outputs, seed, [exact[j] for j in outputs])
