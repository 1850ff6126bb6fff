"""Host callbacks: ops that call a Python function on the host while the program runs.

host_callback(args...) {callback, ordered, result_shapes, result_dtypes} -> results...
    Calls the Python function registered under `callback` with the operands as NumPy
    arrays; its results (NumPy-convertible, of the declared shapes and dtypes) are the op's.
    It has the `side_effect` trait: passes never remove, merge, fold or reorder it
    (`debug.print`, `debug.callback`). With `ordered`, operand 0 and result 0 are an order
    token (`pred[]`): each ordered callback reads the token the previous one returned, so
    XLA runs them in program order.

pure_callback(args...) {callback, result_shapes, result_dtypes} -> results...
    The same call for a function without side effects (`pure_callback`): passes may remove
    it when unused, merge two identical ones, and fold it on constants (running it at
    compile time), as JAX may.

The functions live in a process-wide table keyed by a name that `register_callback` hands
out (`cb<N>:<name>`); the IR holds only the name, so IR text prints, parses and pickles,
and a compiled program receives the functions again when it is loaded from a cache.
"""

from __future__ import annotations

import itertools
import threading
from typing import Callable

import numpy as np
from purejit.ir.core import TensorType
from purejit.ir.ops._util import dtype_attr, shape_attr
from purejit.ir.registry import OpDef, fail, register

ORDER_TOKEN = TensorType((), np.dtype(np.bool_))

_CALLBACKS: dict[str, Callable] = {}
_counter = itertools.count()
_lock = threading.Lock()


def register_callback(fn: Callable, name: str = "") -> str:
    """Keep `fn` for the callback ops that name it; returns its key (unique in this process).

    Keys count up from 0 in each process, so a program traced the same way in a fresh
    process names its callbacks the same way (its cached passes and executables apply).
    """
    label = "".join(c if c.isalnum() or c in "_." else "_" for c in (name or "fn"))[:40]
    with _lock:
        key = f"cb{next(_counter)}:{label}"
        _CALLBACKS[key] = fn
    return key


def lookup_callback(key: str) -> Callable:
    """The function registered under `key`; KeyError names the key if it is unknown."""
    try:
        return _CALLBACKS[key]
    except KeyError:
        raise KeyError(
            f"host callback {key!r} is not registered in this process (IR text that names a "
            "callback can only run where the callback was traced)"
        ) from None


def result_types(op: str, attrs) -> list[TensorType]:
    """The declared result types of a callback op."""
    shapes, dts = attrs.get("result_shapes", ()), attrs.get("result_dtypes", ())
    if len(shapes) != len(dts):
        fail(op, f"result_shapes {list(shapes)} and result_dtypes {list(dts)} differ in length")
    return [
        TensorType(shape_attr(op, "result_shapes", s), dtype_attr(op, "result_dtypes", d))
        for s, d in zip(shapes, dts)
    ]


def call_checked(op: str, attrs, args: list) -> list[np.ndarray]:
    """Run the callback of an op on host arrays; its results checked against the declared
    types (the token of an ordered callback passed through)."""
    want = result_types(op, attrs)
    ordered = bool(attrs.get("ordered", False))
    token, args = (args[:1], args[1:]) if ordered else ([], args)
    outs = lookup_callback(attrs["callback"])(*args)
    outs = [] if outs is None else list(outs)
    if len(outs) != len(want):
        raise RuntimeError(
            f"{op} {attrs['callback']!r}: the callback returned {len(outs)} values, "
            f"{len(want)} were declared ({', '.join(map(str, want))})"
        )
    checked = []
    for k, (o, t) in enumerate(zip(outs, want)):
        a = np.asarray(o)
        if a.shape != t.shape or a.dtype != t.dtype:
            raise RuntimeError(
                f"{op} {attrs['callback']!r}: result {k} is {a.dtype}{list(a.shape)}, "
                f"declared {t} (return arrays of the declared shape and dtype)"
            )
        checked.append(a)
    return [np.asarray(x) for x in token] + checked


def _infer(op: str, ordered_ok: bool):
    def infer(types, attrs, regions):
        if not isinstance(attrs.get("callback"), str):
            fail(op, f"callback must be the key of a registered function, got {attrs!r}")
        outs = result_types(op, attrs)
        if attrs.get("ordered", False):
            if not ordered_ok:
                fail(op, "cannot be ordered (only host_callback has an order token)")
            if not types or types[0] != ORDER_TOKEN:
                fail(op, f"an ordered callback takes the order token {ORDER_TOKEN} first")
            return [ORDER_TOKEN, *outs]
        return outs

    return infer


def _reference(op: str):
    def ref(args, attrs, regions, run):
        return call_checked(op, attrs, [np.asarray(a) for a in args])

    return ref


_ATTRS = ("callback", "result_shapes", "result_dtypes")

register(
    OpDef(
        "host_callback",
        _infer("host_callback", True),
        _reference("host_callback"),
        frozenset({"side_effect"}),
        attrs=(*_ATTRS, "ordered"),
        doc="host_callback(args...) {callback, ordered, result types}: a Python call with effects",
    )
)
register(
    OpDef(
        "pure_callback",
        _infer("pure_callback", False),
        _reference("pure_callback"),
        frozenset({"pure"}),
        attrs=_ATTRS,
        doc="pure_callback(args...) {callback, result types}: a Python call without effects",
    )
)
