"""Reads the text form written by `purejit.ir.printer` back into a `Function`."""

from __future__ import annotations

import json
import re

import numpy as np

from purejit.ir import dtypes
from purejit.ir.core import Function, Op, TensorType, Value
from purejit.ir.registry import get_op

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<value>%[A-Za-z0-9_.]+)
  | (?P<symbol>@(?:[A-Za-z0-9_.]+|"(?:[^"\\]|\\.)*"))
  | (?P<hex>0x[0-9a-fA-F]*)
  | (?P<number>-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+|inf\b))
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<arrow>->)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[()\[\]{},:=<>])
    """,
    re.VERBOSE,
)


class ParseError(ValueError):
    """Malformed IR text; the message starts with `line N:`."""


def _describe(kind: str, val: str) -> str:
    return "end of input" if kind == "eof" else repr(val)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise self._error(pos, f"unexpected character {text[pos]!r}")
            if m.lastgroup != "ws":
                self.toks.append((m.lastgroup, m.group(), pos))
            pos = m.end()
        self.i = 0
        self.scopes: list[dict[str, Value]] = [{}]

    def _error(self, pos, msg):
        line = self.text.count("\n", 0, pos) + 1
        return ParseError(f"line {line}: {msg}")

    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("eof", "", len(self.text))

    def next(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, text):
        kind, val, pos = self.next()
        if val != text or kind in ("eof", "string"):
            raise self._error(pos, f"expected {text!r}, got {_describe(kind, val)}")

    def accept(self, text) -> bool:
        if self.peek()[1] == text:
            self.i += 1
            return True
        return False

    # types and values ----------------------------------------------------------------

    def type(self) -> TensorType:
        kind, name, pos = self.next()
        if kind != "ident" or not dtypes.is_dtype_name(name):
            raise self._error(pos, f"expected a type, got {_describe(kind, name)}")
        self.expect("[")
        dims = []
        while not self.accept("]"):
            kind, val, dpos = self.next()
            if kind != "number" or not val.isdigit():
                raise self._error(dpos, f"bad dimension {_describe(kind, val)} in a {name} type")
            dims.append(int(val))
            self.accept(",")
        return TensorType(tuple(dims), dtypes.dtype_from_name(name))

    def define(self, name: str, type: TensorType, pos: int) -> Value:
        if any(name in scope for scope in self.scopes):
            raise self._error(pos, f"redefinition of value {name}")
        v = Value(type)
        self.scopes[-1][name] = v
        return v

    def use(self) -> Value:
        kind, name, pos = self.next()
        if kind != "value":
            raise self._error(pos, f"expected a value, got {_describe(kind, name)}")
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise self._error(pos, f"use of undefined value {name}")

    def params(self) -> list[Value]:
        self.expect("(")
        out = []
        while not self.accept(")"):
            kind, name, pos = self.next()
            if kind != "value":
                raise self._error(pos, f"expected a parameter name, got {_describe(kind, name)}")
            self.expect(":")
            out.append(self.define(name, self.type(), pos))
            self.accept(",")
        return out

    # attributes ----------------------------------------------------------------------

    def attr(self):
        kind, val, pos = self.peek()
        if val == "[":
            self.next()
            items = []
            while not self.accept("]"):
                items.append(self.attr())
                self.accept(",")
            return tuple(items)
        self.next()
        if kind == "number":
            if val in ("inf", "-inf"):
                return float(val)
            return float(val) if any(c in val for c in ".eE") else int(val)
        if kind == "string":
            return json.loads(val)
        if kind == "ident":
            if val in ("true", "false"):
                return val == "true"
            if val == "nan":
                return float("nan")
            if val == "none":
                return None
            if val == "array":
                return self.array()
            if dtypes.is_dtype_name(val):
                return dtypes.dtype_from_name(val)
        raise self._error(pos, f"bad attribute value {_describe(kind, val)}")

    def array(self) -> np.ndarray:
        self.expect("<")
        t = self.type()
        self.expect(":")
        kind, val, pos = self.peek()
        if kind == "hex":
            self.next()
            if len(val) % 2 or (len(val) - 2) // 2 != t.nbytes:
                got = f"{len(val) / 2 - 1:g}"
                raise self._error(pos, f"array<{t}> needs {t.nbytes} bytes, got {got}")
            arr = np.frombuffer(bytes.fromhex(val[2:]), dtype=t.dtype).reshape(t.shape).copy()
        else:
            flat = self.attr()
            if not isinstance(flat, tuple) or len(flat) != t.size:
                n = len(flat) if isinstance(flat, tuple) else 1
                raise self._error(pos, f"array<{t}> needs {t.size} values, got {n}")
            try:
                if dtypes.is_inexact(t.dtype):  # via float64: bf16 has no parser of its own
                    arr = np.array(flat, dtype=np.float64).astype(t.dtype)
                else:  # exactly, also for u64 values beyond the int64 range
                    arr = np.array(flat, dtype=t.dtype)
            except (TypeError, ValueError, OverflowError) as e:
                raise self._error(pos, f"bad value in array<{t}>: {e}") from None
            arr = arr.reshape(t.shape)
        self.expect(">")
        return arr

    # ops and functions ---------------------------------------------------------------

    def op(self) -> Op:
        names = []
        if self.peek()[0] == "value":
            names.append(self.next()[1:])
            while self.accept(","):
                kind, val, vpos = self.next()
                if kind != "value":
                    raise self._error(vpos, f"expected a result name, got {_describe(kind, val)}")
                names.append((val, vpos))
            self.expect("=")
        kind, opname, pos = self.next()
        if kind != "ident":
            raise self._error(pos, f"expected an op name, got {_describe(kind, opname)}")
        try:
            get_op(opname)
        except NotImplementedError:
            raise self._error(pos, f"unknown op {opname!r}") from None
        self.expect("(")
        operands = []
        while not self.accept(")"):
            operands.append(self.use())
            self.accept(",")
        attrs = {}
        if self.accept("{"):
            while not self.accept("}"):
                kkind, key, kpos = self.next()
                if kkind != "ident":
                    got = _describe(kkind, key)
                    raise self._error(kpos, f"expected an attribute name, got {got}")
                self.expect("=")
                attrs[key] = self.attr()
                self.accept(",")
        self.expect(":")
        self.expect("(")
        types = []
        while not self.accept(")"):
            types.append(self.type())
            self.accept(",")
        if len(types) != len(names):
            raise self._error(pos, f"{opname}: {len(names)} results but {len(types)} types")
        regions = []
        while self.peek()[1] == "region":
            self.next()
            self.scopes.append({})
            params = self.params()
            self.expect("{")
            ops, results = self.body()
            self.scopes.pop()
            regions.append(Function("region", params, ops, results))
        results = [self.define(n, t, npos) for (n, npos), t in zip(names, types)]
        return Op(opname, operands, attrs, results, regions)

    def body(self):
        ops = []
        while self.peek()[1] != "return":
            ops.append(self.op())
        self.expect("return")
        results = []
        if self.peek()[0] == "value":
            results.append(self.use())
            while self.accept(","):
                results.append(self.use())
        self.expect("}")
        return ops, results

    def function(self) -> Function:
        self.expect("func")
        kind, sym, pos = self.next()
        if kind != "symbol":
            raise self._error(pos, "expected @name after func")
        name = json.loads(sym[1:]) if sym[1] == '"' else sym[1:]
        params = self.params()
        self.expect("->")
        self.expect("(")
        declared, tpos = [], self.peek()[2]
        while not self.accept(")"):
            declared.append(self.type())
            self.accept(",")
        self.expect("{")
        ops, results = self.body()
        if [v.type for v in results] != declared:
            got = ", ".join(str(v.type) for v in results)
            raise self._error(
                tpos,
                f"@{name} declares results ({', '.join(map(str, declared))}) but returns ({got})",
            )
        return Function(name, params, ops, results)


def parse(text: str) -> Function:
    """Parse one function in the text form. Raises ParseError with the line on bad input."""
    p = _Parser(text)
    fn = p.function()
    if p.peek()[0] != "eof":
        raise p._error(p.peek()[2], "trailing text after function")
    return fn
