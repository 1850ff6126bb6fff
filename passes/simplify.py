"""Algebraic simplification: identities, collapses of data movement, scalar broadcasts.

Guarantees: each rewrite below replaces an op by a value that the interpreter computes to
the same numbers (bit for bit, except where a rule's comment says otherwise: `x + 0 -> x`
keeps -0.0 where IEEE gives +0.0, as XLA's simplifier does). Rules are keyed by trait where
a trait says enough (`commutative`, `idempotent`, `involution`, `shape_only`,
`elementwise`) and by op name for arithmetic identities. Ops left unused are removed by DCE;
new ops a rule builds are simplified in the next round of the fixed-point group.
Never touches: ops with effects, multi-result ops, parameters, float identities that are
wrong for NaN or infinity (`x * 0`, `x - x` are only rewritten for integers).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from purejit.ir import Function, Op, TensorType, Value, dtypes, get_op
from purejit.passes.base import PassResult
from purejit.passes.constant_fold import constant_value, splat_ops, splat_scalar
from purejit.passes.cse import mergeable


class Matcher:
    """The op being rewritten, its operands, and what the function defines so far."""

    def __init__(self):
        self.defs: dict[Value, Op] = {}
        self.out: list[Op] = []
        self.op: Op | None = None

    # operands and result of the current op
    @property
    def x(self) -> Value:
        return self.op.operands[0]

    @property
    def y(self) -> Value:
        return self.op.operands[1]

    @property
    def z(self) -> Value:
        return self.op.operands[2]

    @property
    def out_type(self) -> TensorType:
        return self.op.results[0].type

    @property
    def is_integer(self) -> bool:
        return dtypes.is_integer(self.out_type.dtype)

    @property
    def is_bool(self) -> bool:
        return self.out_type.dtype == np.bool_

    # what defines a value
    def producer(self, v: Value) -> Op | None:
        return self.defs.get(v)

    def made_by(self, v: Value, name: str) -> Op | None:
        op = self.defs.get(v)
        return op if op is not None and op.name == name else None

    def splat(self, v: Value) -> np.ndarray | None:
        """The 0-d value every element of `v` equals, when known at compile time."""
        op = self.defs.get(v)
        if op is None:
            return None
        c = constant_value(op)
        if c is not None:
            return splat_scalar(c)
        if op.has_trait("shape_only") and len(op.operands) == 1 and v.type.size > 0:
            return self.splat(op.operands[0])
        return None

    def splat_is(self, v: Value, k) -> bool:
        s = self.splat(v)
        return s is not None and bool(s == k)

    def scalar_source(self, v: Value) -> Value | None:
        """`s` if `v = broadcast_in_dim(s)` with `s` a scalar."""
        op = self.made_by(v, "broadcast_in_dim")
        if op is not None and op.operands[0].type.rank == 0:
            return op.operands[0]
        return None

    # building new ops
    def new(self, name: str, operands: list[Value], **attrs) -> Value:
        types = get_op(name).infer([v.type for v in operands], attrs, [])
        results = [Value(t) for t in types]
        self.emit(Op(name, operands, attrs, results, (), self.op.loc))
        return results[0]

    def emit(self, op: Op):
        self.out.append(op)
        for r in op.results:
            self.defs[r] = op

    def broadcast(self, s: Value, type: TensorType) -> Value:
        return self.new("broadcast_in_dim", [s], shape=type.shape, broadcast_dimensions=())

    def zeros(self, type: TensorType) -> Value:
        r = Value(type)
        for op in splat_ops(np.zeros((), type.dtype), type, [r], self.op.loc):
            self.emit(op)
        return r


# ---- helpers for the collapse rules -----------------------------------------------------------


def _exact(a: np.dtype, b: np.dtype) -> bool:
    """Every value of dtype `a` is exactly representable in dtype `b`."""
    if a == b or a == np.bool_:
        return True
    if b == np.bool_:
        return False
    if dtypes.is_complex(a):
        return dtypes.is_complex(b) and b.itemsize >= a.itemsize
    b_real = np.dtype(np.float32 if b == np.complex64 else np.float64) if b.kind == "c" else b
    if dtypes.is_integer(a):
        bits = a.itemsize * 8 - (a.kind == "i")
        if dtypes.is_integer(b_real):
            if a.kind == "u":
                return b_real.itemsize > a.itemsize or (
                    b_real.kind == "u" and b_real.itemsize == a.itemsize
                )
            return b_real.kind == "i" and b_real.itemsize >= a.itemsize
        return ml_dtypes.finfo(b_real).nmant + 1 >= bits
    if dtypes.is_integer(b_real):
        return False
    fa, fb = ml_dtypes.finfo(a), ml_dtypes.finfo(b_real)
    return fb.nmant >= fa.nmant and fb.maxexp >= fa.maxexp and fb.minexp <= fa.minexp


def _reshape_of_reshape(m: Matcher):
    inner = m.made_by(m.x, "reshape")
    return m.new("reshape", [inner.operands[0]], shape=m.out_type.shape) if inner else None


def _transpose_of_transpose(m: Matcher):
    inner = m.made_by(m.x, "transpose")
    if inner is None:
        return None
    p, q = inner.attrs["permutation"], m.op.attrs["permutation"]
    perm = tuple(p[i] for i in q)
    if perm == tuple(range(len(perm))):
        return inner.operands[0]
    return m.new("transpose", [inner.operands[0]], permutation=perm)


def _broadcast_of_broadcast(m: Matcher):
    inner = m.made_by(m.x, "broadcast_in_dim")
    if inner is None:
        return None
    d1, d2 = inner.attrs["broadcast_dimensions"], m.op.attrs["broadcast_dimensions"]
    dims = tuple(d2[d] for d in d1)
    return m.new(
        "broadcast_in_dim", [inner.operands[0]], shape=m.out_type.shape, broadcast_dimensions=dims
    )


def _convert_of_convert(m: Matcher):
    inner = m.made_by(m.x, "convert")
    if inner is None:
        return None
    src = inner.operands[0]
    if not _exact(src.type.dtype, m.x.type.dtype):
        return None
    if src.type.dtype == m.out_type.dtype:
        return src
    return m.new("convert", [src], dtype=m.out_type.dtype)


def _is_identity_broadcast(m: Matcher) -> bool:
    dims = tuple(m.op.attrs["broadcast_dimensions"])
    return m.x.type == m.out_type and dims == tuple(range(m.out_type.rank))


def _is_identity_permutation(m: Matcher) -> bool:
    return tuple(m.op.attrs["permutation"]) == tuple(range(m.x.type.rank))


def _is_full_slice(m: Matcher) -> bool:
    a = m.op.attrs
    full = tuple(a["start_indices"]) == (0,) * m.x.type.rank
    return full and m.x.type == m.out_type and set(a["strides"]) <= {1}


def _move_scalar_broadcast(m: Matcher):
    if len(m.op.operands) != 1 or m.x.type.rank == 0:
        return None
    s = m.scalar_source(m.x)
    return m.broadcast(s, m.out_type) if s is not None else None


def _hoist_scalar_broadcasts(m: Matcher):
    if m.out_type.rank == 0 or len(m.op.results) != 1:
        return None
    scalars = [m.scalar_source(v) for v in m.op.operands]
    if not scalars or any(s is None for s in scalars):
        return None
    s = m.new(m.op.name, scalars, **m.op.attrs)
    return m.broadcast(s, m.out_type)


# ---- the rules: one per line, the math in the comment -----------------------------------------

BY_NAME = {
    "add": [
        lambda m: m.x if m.splat_is(m.y, 0) else None,  # x + 0 -> x   (-0.0 + 0 keeps -0.0)
    ],
    "subtract": [
        lambda m: m.x if m.splat_is(m.y, 0) else None,  # x - 0 -> x
        lambda m: m.zeros(m.out_type) if m.x is m.y and m.is_integer else None,  # x - x -> 0
    ],
    "multiply": [
        lambda m: m.x if m.splat_is(m.y, 1) else None,  # x * 1 -> x
        lambda m: m.y if m.is_integer and m.splat_is(m.y, 0) else None,  # x * 0 -> 0  (ints)
    ],
    "divide": [
        lambda m: m.x if m.splat_is(m.y, 1) else None,  # x / 1 -> x
    ],
    "power": [
        lambda m: m.x if m.splat_is(m.y, 1) else None,  # x ** 1 -> x
    ],
    "and": [
        lambda m: m.x if m.is_bool and m.splat_is(m.y, True) else None,  # x & true -> x
        lambda m: m.y if m.splat_is(m.y, 0) else None,  # x & 0 -> 0
    ],
    "or": [
        lambda m: m.x if m.splat_is(m.y, 0) else None,  # x | 0 -> x
        lambda m: m.y if m.is_bool and m.splat_is(m.y, True) else None,  # x | true -> true
    ],
    "xor": [
        lambda m: m.x if m.splat_is(m.y, 0) else None,  # x ^ 0 -> x
    ],
    "select": [
        lambda m: m.y if m.splat_is(m.x, True) else None,  # select(true, a, b) -> a
        lambda m: m.z if m.splat_is(m.x, False) else None,  # select(false, a, b) -> b
        lambda m: m.y if m.y is m.z else None,  # select(p, a, a) -> a
    ],
    "convert": [
        lambda m: m.x if m.x.type == m.out_type else None,  # convert<T>(x: T) -> x
        _convert_of_convert,  # convert<C>(convert<B>(x: A)) -> convert<C>(x)  if A ⊂ B exactly
    ],
    "reshape": [
        lambda m: m.x if m.x.type == m.out_type else None,  # reshape<s>(x: s) -> x
        _reshape_of_reshape,  # reshape<t>(reshape<s>(x)) -> reshape<t>(x)
    ],
    "transpose": [
        lambda m: m.x if _is_identity_permutation(m) else None,  # transpose<id>(x) -> x
        _transpose_of_transpose,  # transpose<q>(transpose<p>(x)) -> transpose<p∘q>(x)  (or x)
    ],
    "broadcast_in_dim": [
        lambda m: m.x if _is_identity_broadcast(m) else None,  # broadcast<s, id>(x: s) -> x
        _broadcast_of_broadcast,  # bcast<t, e>(bcast<s, d>(x)) -> bcast<t, e∘d>(x)
    ],
    "slice": [
        lambda m: m.x if _is_full_slice(m) else None,  # x[0:n:1] -> x
    ],
    "constant": [
        # splat(c)[shape] -> broadcast(c)  (a constant whose elements are equal)
        lambda m: (
            m.broadcast(m.new("constant", [], value=s), m.out_type)
            if m.out_type.size > 1 and (s := splat_scalar(m.op.attrs["value"])) is not None
            else None
        ),
    ],
}

BY_TRAIT = [
    # f(f(x)) -> x
    ("involution", lambda m: p.operands[0] if (p := m.made_by(m.x, m.op.name)) else None),
    # f(x, x) -> x
    ("idempotent", lambda m: m.x if m.x is m.y else None),
    # move(broadcast(s)) -> broadcast(s)   (reshape, transpose, slice, ... of a scalar broadcast)
    ("shape_only", _move_scalar_broadcast),
    # f(broadcast(a), broadcast(b)) -> broadcast(f(a, b))   (a, b scalars)
    ("elementwise", _hoist_scalar_broadcasts),
]


def _canonical_order(m: Matcher, op: Op) -> Op:
    """# c ⊕ x -> x ⊕ c  for commutative ⊕: known values go to the right."""
    if len(op.operands) == 2 and op.has_trait("commutative"):
        a, b = op.operands
        if m.splat(a) is not None and m.splat(b) is None:
            return Op(op.name, [b, a], op.attrs, op.results, op.regions, op.loc)
    return op


def _rules_for(op: Op) -> tuple:
    return _rules_by_name(op.name)


@functools.lru_cache(maxsize=1024)  # one entry per registered op name (traits are fixed)
def _rules_by_name(name: str) -> tuple:
    traits = get_op(name).traits
    return (*BY_NAME.get(name, ()), *(rule for trait, rule in BY_TRAIT if trait in traits))


def _rewrite(m: Matcher, op: Op) -> Value | None:
    m.op = op
    for rule in _rules_for(op):
        new = rule(m)
        if new is not None and new is not op.results[0]:
            if new.type != op.results[0].type:
                raise AssertionError(f"simplify: rule for {op.name} changed {op.results[0].type}")
            return new
    return None


def _simplify(fn: Function, done: dict) -> tuple[Function, int]:
    """Simplify `fn`; `done` maps regions already simplified (by identity: one region
    object is often shared by many ops) to their result."""
    m = Matcher()
    replace: dict[Value, Value] = {}
    rewrites = 0
    for op in fn.ops:
        operands = [replace.get(v, v) for v in op.operands]
        regions = []
        for r in op.regions:
            if id(r) not in done:
                done[id(r)] = (r, *_simplify(r, done))  # keep r alive: ids stay unique
            _, new_r, n = done[id(r)]
            rewrites += n
            regions.append(new_r if n else r)
        op = op.rebuilt(operands, regions)
        if len(op.results) == 1 and mergeable(op):
            swapped = _canonical_order(m, op)
            rewrites += swapped is not op
            new = _rewrite(m, swapped)
            if new is not None:
                replace[op.results[0]] = new
                rewrites += 1
                continue
            op = swapped
        m.emit(op)
    results = [replace.get(v, v) for v in fn.results]
    return Function(fn.name, fn.params, m.out, results), rewrites


@dataclass(frozen=True)
class Simplify:
    """Apply the algebraic rules above once over the function (the pipeline iterates)."""

    name: str = "simplify"

    def __call__(self, fn: Function) -> PassResult:
        new, n = _simplify(fn, {})
        return PassResult(new, n > 0, {"rewrites": n})
