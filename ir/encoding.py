"""A compact, data-only encoding of a `Function`: JSON-ready lists, no code, no pickle.

The persistent pass cache stores optimised IR in this form: reading it back is a
`json.loads` plus one pass that rebuilds values and ops, several times faster than parsing
the text form (`purejit.ir.parser`), and like the text form it can describe only IR: op
names must be registered, dtypes known, every operand defined before its use and in scope.

    {"version": 1, "types": [["f32", [3, 4]], ...], "fn": FN}
    FN = [name, [param type index, ...], [OP, ...], [result value number, ...]]
    OP = [name, [operand value number, ...], {attr: ATTR} or 0, [result type index, ...],
          [FN, ...] (regions), loc or null]

Values are numbered in order of definition, as the printer names them (a region's
parameters and values are visible only inside it). Attribute values are what the printer
accepts: bool, int, float, str, None, tuples (lists here), dtypes `{"dtype": name}` and
arrays `{"array": [dtype, shape, hex bytes]}`.
"""

from __future__ import annotations

import math

import numpy as np

from purejit.ir import dtypes
from purejit.ir.core import Function, Op, TensorType, Value
from purejit.ir.registry import get_op

VERSION = 1


class DecodeError(ValueError):
    """Encoded IR that does not describe a well-formed function."""


# --- encoding -------------------------------------------------------------------------------


def encode_function(fn: Function) -> dict:
    """`fn` as JSON-ready data (see the module docstring).

    Raises:
        TypeError: an attribute value the encoding cannot hold (as the printer would).
    """
    enc = _Encoder()
    return {"version": VERSION, "types": enc.type_list, "fn": enc.function(fn)}


class _Encoder:
    def __init__(self):
        self.types: dict[TensorType, int] = {}
        self.type_list: list = []
        self.numbers: dict[int, int] = {}  # id(Value) -> number
        self.count = 0

    def type(self, t: TensorType) -> int:
        i = self.types.get(t)
        if i is None:
            i = self.types[t] = len(self.type_list)
            self.type_list.append([dtypes.dtype_name(t.dtype), list(t.shape)])
        return i

    def define(self, v: Value) -> int:
        n = self.numbers[id(v)] = self.count
        self.count += 1
        return n

    def use(self, v: Value) -> int:
        try:
            return self.numbers[id(v)]
        except KeyError:
            raise TypeError(f"value {v!r} is used before it is defined") from None

    def function(self, fn: Function) -> list:
        params = []
        for p in fn.params:
            self.define(p)
            params.append(self.type(p.type))
        ops = [self.op(op) for op in fn.ops]
        return [fn.name, params, ops, [self.use(v) for v in fn.results]]

    def op(self, op: Op) -> list:
        operands = [self.use(v) for v in op.operands]
        attrs = {k: _attr(v) for k, v in op.attrs.items()} if op.attrs else 0
        regions = [self.function(r) for r in op.regions]
        results = []
        for r in op.results:
            self.define(r)
            results.append(self.type(r.type))
        return [op.name, operands, attrs, results, regions, op.loc]


def _attr(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, str):
        return v
    if v is None:
        return None
    if isinstance(v, (tuple, list)):
        return [_attr(x) for x in v]
    if isinstance(v, np.dtype):
        return {"dtype": dtypes.dtype_name(v)}
    if isinstance(v, type) and issubclass(v, np.generic):
        return {"dtype": dtypes.dtype_name(np.dtype(v))}
    if isinstance(v, np.ndarray):
        # tobytes() is C order whatever the layout (np.ascontiguousarray would make 0-d 1-d)
        return {"array": [dtypes.dtype_name(v.dtype), list(v.shape), v.tobytes().hex()]}
    raise TypeError(f"cannot encode attribute value {v!r} of type {type(v).__name__}")


# --- decoding -------------------------------------------------------------------------------


def decode_function(data) -> Function:
    """Rebuild the `Function` that `encode_function` described.

    Raises:
        DecodeError: the data is not a well-formed encoding (wrong version, unknown op or
            dtype, a value used before it is defined or outside its region, ...).
    """
    try:
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise DecodeError(f"not version {VERSION} of the IR encoding")
        dec = _Decoder(data["types"])
        return dec.function(data["fn"])
    except DecodeError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, OverflowError, AttributeError) as e:
        raise DecodeError(f"malformed IR encoding ({type(e).__name__}: {e})") from None


class _Decoder:
    def __init__(self, types):
        self.types = []
        for name, shape in types:
            if not isinstance(name, str) or not dtypes.is_dtype_name(name):
                raise DecodeError(f"unknown dtype {name!r}")
            if not isinstance(shape, list) or not all(type(d) is int for d in shape):
                raise DecodeError(f"bad shape {shape!r}")
            self.types.append(TensorType(tuple(shape), dtypes.dtype_from_name(name)))
        self.values: list[Value | None] = []  # by number; None once out of scope

    def define(self, t: int) -> Value:
        if type(t) is not int or t < 0:
            raise DecodeError(f"bad type index {t!r}")
        v = Value(self.types[t])
        self.values.append(v)
        return v

    def use(self, n) -> Value:
        if type(n) is not int or not 0 <= n < len(self.values) or self.values[n] is None:
            raise DecodeError(f"value %{n} is used where it is not defined")
        return self.values[n]

    def function(self, f) -> Function:
        name, params, ops, results = f
        if not isinstance(name, str):
            raise DecodeError("a function name must be a string")
        ps = [self.define(t) for t in params]
        body = [self.op(o) for o in ops]
        return Function(name, ps, body, [self.use(n) for n in results])

    def op(self, o) -> Op:
        name, operands, attrs, results, regions, loc = o
        if not isinstance(name, str):
            raise DecodeError(f"bad op name {name!r}")
        try:
            get_op(name)
        except NotImplementedError:
            raise DecodeError(f"unknown op {name!r}") from None
        args = [self.use(n) for n in operands]
        if attrs == 0:
            attrs = {}
        elif isinstance(attrs, dict):
            attrs = {str(k): _value(v) for k, v in attrs.items()}
        else:
            raise DecodeError(f"{name}: bad attributes")
        inner = []
        for r in regions:
            start = len(self.values)
            inner.append(self.function(r))
            for i in range(start, len(self.values)):  # a region's values stay inside it
                self.values[i] = None
        if loc is not None and not isinstance(loc, str):
            raise DecodeError(f"{name}: bad location")
        outs = [self.define(t) for t in results]
        return Op(name, args, attrs, outs, inner, loc)


def _value(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, list):
        return tuple(_value(x) for x in v)
    if isinstance(v, dict) and len(v) == 1:
        if "dtype" in v:
            name = v["dtype"]
            if not isinstance(name, str) or not dtypes.is_dtype_name(name):
                raise DecodeError(f"unknown dtype {name!r}")
            return dtypes.dtype_from_name(name)
        if "array" in v:
            name, shape, hexbytes = v["array"]
            if not isinstance(name, str) or not dtypes.is_dtype_name(name):
                raise DecodeError(f"unknown dtype {name!r}")
            dt = dtypes.dtype_from_name(name)
            if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
                raise DecodeError(f"bad array shape {shape!r}")
            raw = bytes.fromhex(hexbytes)
            if len(raw) != math.prod(shape) * dt.itemsize:
                raise DecodeError(f"array {name}{shape}: {len(raw)} bytes")
            return np.frombuffer(raw, dtype=dt).reshape(tuple(shape)).copy()
    raise DecodeError(f"bad attribute value {v!r}")
