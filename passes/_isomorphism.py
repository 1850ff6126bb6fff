"""Isomorphism of IR functions, proved op by op (what `roll_layers` relies on).

Two functions are isomorphic when they take the same parameter types and run the same ops
in the same order (names, attributes, result types, regions, each recursively), every
operand of one reading the value at the same place in the other (the same parameter, or the
same result of the same earlier op), and they return the values at the same places. Such
functions compute the same results from the same arguments. Two traces of one Python
function with equal types give functions like these; the order of ops is part of the test,
so a reordered but equivalent function is reported as different (never the other way round).

`bucket_key` is a cheap key that is equal for isomorphic functions: it only groups
candidates, `compare` proves each pair. Copies of one function (`Function.copy`, which
marks them with one `copy_class`) are isomorphic, constants included, by construction:
`compare` answers for them without walking their ops (a layer traced once and called 48
times, with its linearized and transposed functions, is 47 such pairs per function).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass, field

import numpy as np
from purejit.ir import Function, Value


def attr_key(v):
    """A hashable key for an attribute value, equal for equal values (arrays by bytes)."""
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.dtype.name, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(attr_key(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, attr_key(x)) for k, x in v.items()))
    if isinstance(v, float) and math.isnan(v):
        return ("nan",)
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    return (type(v).__name__, v)


def same_attr(a, b) -> bool:
    """Whether two attribute values are equal (as `attr_key` says, without building keys for
    the common case of equal plain values)."""
    if a is b:
        return True
    if not isinstance(a, np.ndarray) and type(a) is type(b):
        try:
            if a == b:
                return True
        except (ValueError, TypeError):  # a list holding arrays
            pass
    return attr_key(a) == attr_key(b)


def bucket_key(fn: Function) -> tuple:
    """Parameter and result types and the names of the top-level ops: equal for isomorphic
    functions (not a proof: `compare` is). Made once per copy class (its members' are equal)."""
    cls = fn.copy_class
    if cls is not None and cls.bucket is not None:
        return cls.bucket
    key = (
        tuple(fn.param_types),
        tuple(fn.result_types),
        tuple([op.name for op in fn.ops]),
    )
    if cls is not None:
        cls.bucket = key
    return key


@dataclass
class Comparison:
    """What `compare` found. `reason` is None when the functions are isomorphic up to the
    values of the top-level `constant` ops listed in `constants` (their indices in `ops`)."""

    reason: str | None = None
    constants: list[int] = field(default_factory=list)

    @property
    def same(self) -> bool:
        """Isomorphic, constants included."""
        return self.reason is None and not self.constants


def _where(op, k: int) -> str:
    return f"op {k} `{op.name}`" + (f" ({op.loc})" if op.loc else "")


# (id(a), id(b), constants_may_differ) -> (a, b, Comparison) inside `remembering`
_remembered: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "purejit_isomorphism_answers", default=None
)


@contextlib.contextmanager
def remembering():
    """`compare` keeps its answers while inside (for this thread): the pass cache's key
    (`pass_cache.key_text`) proves each layer's function isomorphic to the first, and
    `roll_layers` proves the same pairs again just after (47 proofs, 20 ms, for the 48-layer
    bench transformer). Only for functions nothing changes meanwhile: an answer is kept
    for the two objects compared, and passes make new functions rather than change them."""
    token = _remembered.set({})
    try:
        yield
    finally:
        _remembered.reset(token)


def compare(a: Function, b: Function, *, constants_may_differ: bool = True) -> Comparison:
    """Prove `a` and `b` isomorphic (see the module docstring), or say where they differ.

    Args:
        a, b: the functions.
        constants_may_differ: whether a top-level `constant` op whose value differs (same
            type) is listed in `Comparison.constants` instead of being a difference.
    Returns:
        A `Comparison`: `reason` names the first difference (op index, names, types).
    """
    memo = _remembered.get()
    if memo is None:
        return _compare(a, b, constants_may_differ)
    key = (id(a), id(b), constants_may_differ)
    kept = memo.get(key)
    if kept is None or kept[0] is not a or kept[1] is not b:
        kept = memo[key] = (a, b, _compare(a, b, constants_may_differ))
    return kept[2]


def _compare(a: Function, b: Function, constants_ok: bool) -> Comparison:
    if a is b or (a.copy_class is not None and a.copy_class is b.copy_class):
        # one function, or copies of one (`Function.copy`): the same ops, attributes and
        # types by construction; the layers of a chain made by reusing a trace are these
        return Comparison(None, [])
    return _prove(a, b, constants_ok)


def _prove(a: Function, b: Function, constants_ok: bool) -> Comparison:
    """`_compare` op by op."""
    if len(a.params) != len(b.params):
        return Comparison(f"{len(a.params)} vs {len(b.params)} parameters")
    for k, (p, q) in enumerate(zip(a.params, b.params)):
        if p.type != q.type:
            return Comparison(f"parameter {k} is {p.type} vs {q.type} (different shapes)")
    if len(a.ops) != len(b.ops):
        return Comparison(f"{len(a.ops)} vs {len(b.ops)} ops")
    to_b: dict[Value, Value] = dict(zip(a.params, b.params))
    seen_b: set[Value] = set(b.params)
    constants: list[int] = []
    for k, (x, y) in enumerate(zip(a.ops, b.ops)):
        if x.name != y.name:
            return Comparison(f"op {k} is `{x.name}` vs `{y.name}`")
        if len(x.operands) != len(y.operands):
            return Comparison(f"{_where(x, k)}: {len(x.operands)} vs {len(y.operands)} operands")
        for j, (u, v) in enumerate(zip(x.operands, y.operands)):
            if to_b.get(u) is not v:
                return Comparison(f"{_where(x, k)}: operand {j} reads a different value")
        tx, ty = [r.type for r in x.results], [r.type for r in y.results]
        if tx != ty:
            got = ", ".join(map(str, tx)) + " vs " + ", ".join(map(str, ty))
            return Comparison(f"{_where(x, k)}: results {got} (different shapes)")
        if set(x.attrs) != set(y.attrs):
            return Comparison(f"{_where(x, k)}: attributes {sorted(x.attrs)} vs {sorted(y.attrs)}")
        for key in x.attrs:
            if same_attr(x.attrs[key], y.attrs[key]):
                continue
            if constants_ok and x.has_trait("constant") and not x.operands and key == "value":
                constants.append(k)
                continue
            what = "a constant differs" if x.has_trait("constant") else f"attribute {key} differs"
            return Comparison(f"{_where(x, k)}: {what}")
        if len(x.regions) != len(y.regions):
            return Comparison(f"{_where(x, k)}: {len(x.regions)} vs {len(y.regions)} regions")
        for i, (r, s) in enumerate(zip(x.regions, y.regions)):
            inner = _compare(r, s, False)
            if inner.reason is not None:
                return Comparison(f"{_where(x, k)}, region {i}: {inner.reason}")
        for u, v in zip(x.results, y.results):
            if v in seen_b:  # an SSA value defined twice in `b`: never isomorphic
                return Comparison(f"{_where(x, k)}: result defined twice")
            to_b[u] = v
            seen_b.add(v)
    if len(a.results) != len(b.results):
        return Comparison(f"{len(a.results)} vs {len(b.results)} results")
    for k, (u, v) in enumerate(zip(a.results, b.results)):
        if to_b.get(u) is not v:
            return Comparison(f"result {k} is a different value")
    return Comparison(None, constants)
