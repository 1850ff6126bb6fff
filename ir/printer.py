"""The text form of the IR. `parse(print_function(fn))` rebuilds an equal function.

    func @main(%0: f32[3,4], %1: f32[4]) -> (f32[3,4]) {
      %2 = broadcast_in_dim(%1) {shape=[3, 4], broadcast_dimensions=[1]} : f32[3,4]
      %3 = add(%0, %2) : f32[3,4]
      %4 = reduce(%3, %c) {dimensions=[1]} : f32[3] region(%5: f32[], %6: f32[]) {
        %7 = add(%5, %6) : f32[]
        return %7
      }
      return %3
    }

Values are numbered in order of definition; regions are printed inline after the op's types.

The printer sits below `core` (whose `Function.__str__` prints through it), so it reads
functions, ops and values by their fields and imports none of their classes.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from purejit.ir import dtypes

_INLINE_ELEMENTS = 16
_SIMPLE_NAME = re.compile(r"[A-Za-z0-9_.]+")


def format_attr(v) -> str:
    t = type(v)
    if t is int:  # the commonest attributes first: an int, a list of ints
        return str(v)
    if (t is list or t is tuple) and all(type(x) is int for x in v):
        return "[" + ", ".join(map(str, v)) + "]"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, np.dtype):
        return dtypes.dtype_name(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    if isinstance(v, np.ndarray):
        return _format_array(v)
    if v is None:
        return "none"
    if isinstance(v, type) and issubclass(v, np.generic):
        return dtypes.dtype_name(np.dtype(v))
    raise TypeError(f"cannot print attribute value {v!r} of type {type(v).__name__}")


def _format_array(a: np.ndarray) -> str:
    head = f"{dtypes.dtype_name(a.dtype)}[{','.join(map(str, a.shape))}]"
    if a.size <= _INLINE_ELEMENTS and not dtypes.is_complex(a.dtype):
        if a.dtype == np.bool_ or dtypes.is_integer(a.dtype):
            return f"array<{head}: {format_attr(a.reshape(-1).tolist())}>"
        with np.errstate(invalid="ignore"):
            flat = [float(x) for x in a.reshape(-1)]
            # what the parser will read back: "nan" is the canonical NaN
            back = np.array([float(format_attr(f)) for f in flat], np.float64).astype(a.dtype)
            exact = back.tobytes() == a.tobytes()
        if exact:  # NaNs with a sign or payload are kept bit for bit in hex instead
            return f"array<{head}: {format_attr(flat)}>"
    return f"array<{head}: 0x{np.ascontiguousarray(a).tobytes().hex()}>"


class _Namer:
    def __init__(self):
        self.names: dict[object, str] = {}  # Value -> name
        self.count = 0

    def define(self, v) -> str:
        # a counter, not len(names): a region object shared by two ops defines its values
        # twice, and each definition needs a fresh name
        name = f"%{self.count}"
        self.count += 1
        self.names[v] = name
        return name

    def __call__(self, v) -> str:
        try:
            return self.names[v]
        except KeyError:
            return f"%<undefined #{v.id}>"


def _print_op(op, namer: _Namer, indent: str, out: list[str]):
    operands = ", ".join(namer(v) for v in op.operands)
    lhs = ", ".join(namer.define(r) for r in op.results)
    attrs = ""
    if op.attrs:
        attrs = " {" + ", ".join(f"{k}={format_attr(v)}" for k, v in op.attrs.items()) + "}"
    types = ", ".join(str(r.type) for r in op.results)
    head = f"{lhs} = " if op.results else ""
    line = f"{indent}{head}{op.name}({operands}){attrs} : ({types})"
    if not op.regions:
        out.append(line)
        return
    for region in op.regions:
        params = ", ".join(f"{namer.define(p)}: {p.type}" for p in region.params)
        out.append(f"{line} region({params}) {{")
        _print_body(region, namer, indent + "  ", out)
        line = f"{indent}}}"
    out.append(line)


def _print_body(fn, namer: _Namer, indent: str, out: list[str]):
    for op in fn.ops:
        _print_op(op, namer, indent, out)
    out.append(f"{indent}return " + ", ".join(namer(v) for v in fn.results))


def print_function(fn) -> str:
    """The text form of the `Function` `fn` (see the module docstring)."""
    namer = _Namer()
    params = ", ".join(f"{namer.define(p)}: {p.type}" for p in fn.params)
    results = ", ".join(str(t) for t in fn.result_types)
    name = fn.name if _SIMPLE_NAME.fullmatch(fn.name) else json.dumps(fn.name)
    out = [f"func @{name}({params}) -> ({results}) {{"]
    _print_body(fn, namer, "  ", out)
    out.append("}")
    return "\n".join(line.rstrip() for line in out)
