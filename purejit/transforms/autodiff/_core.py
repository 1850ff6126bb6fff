"""What every differentiation rule shares: symbolic zeros, undefined primals, the rule
registries and the small tangent algebra the rules are written in.

A JVP rule is `rule(ctx, primals, tangents, attrs, regions) -> (primal_outs, tangent_outs)`.
`tangents` holds a value or a `Zero` per operand (never all `Zero`: the interpreter binds the
op itself then); the rule binds the op on the primals and returns a tangent per result
(`Zero` where the result does not depend on a tangent). Tangent ops bind through `bind`, so
they go wherever their operands live: into the current trace in forward mode, into the
linear trace when linearizing (`ctx.linearizing`).

A transpose rule is `rule(cts, operands, attrs, regions) -> cts_in`: `cts` holds a
cotangent or `Zero` per result, `operands` an `UndefinedPrimal` for each linear operand and
the value of every other one; it returns a cotangent (or `Zero`) per operand, `None` for
the non-linear ones.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from purejit import dtypes as pdt
from purejit.ir import Function
from purejit.tracing import ShapedArray, aval_of, bind, bind1, trace_to_function


@dataclass(frozen=True)
class Zero:
    """A symbolic zero tangent or cotangent of abstract value `aval`."""

    aval: ShapedArray

    @staticmethod
    def from_primal_value(val) -> "Zero":
        """The symbolic zero tangent of a primal value (JAX's `ad.Zero.from_primal_value`)."""
        return Zero(tangent_aval(aval_of(val)))


@dataclass(frozen=True)
class UndefinedPrimal:
    """A linear operand of an op being transposed: its value is what transposition finds."""

    aval: ShapedArray


@dataclass(frozen=True)
class Unsupported:
    """A tangent a rule could not form; an error only if something reads it."""

    aval: ShapedArray
    message: str


class SymbolicZero:
    """A zero tangent or cotangent as a user's custom rule sees it (`custom_jvp.defjvp` /
    `custom_vjp.defvjp` with `symbolic_zeros=True`), as jax.custom_derivatives.SymbolicZero:
    the attributes of its abstract value (`shape`, `dtype`, `ndim`...) read through."""

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return "SymbolicZero"

    def __getattr__(self, name):
        if name == "aval" or name.startswith("__"):  # not yet set (copy, pickle)
            raise AttributeError(name)
        return getattr(self.aval, name)

    @staticmethod
    def from_primal_value(val) -> "SymbolicZero":
        """The symbolic zero tangent of a primal value."""
        return SymbolicZero(tangent_aval(aval_of(val)))


@dataclass(slots=True)
class CustomVJPPrimal:
    """A primal leaf as a custom_vjp's fwd sees it with `symbolic_zeros=True`: its `value`
    and whether it is `perturbed` (differentiated), as jax.custom_derivatives'."""

    value: object
    perturbed: bool


@dataclass
class Context:
    """What a rule may ask about the interpretation it runs in."""

    linearizing: bool  # tangents are recorded into a linear trace (reverse mode)
    linear_trace: object = None  # that trace, when linearizing
    # the bodies of the calls linearized in this interpretation, reused for isomorphic ones
    # (the layers of a chain: `call.py`)
    calls: dict = field(default_factory=dict)


# Python rules that ops name by a string key (custom_jvp_call, custom_vjp_call, checkpoint,
# custom_lin): `{kind} {name}#{n}`. A key is part of the IR (and so of every compile cache
# key), so a rule made for the same thing twice must get the same key: `intern_custom` keys
# rules by value. Entries are never dropped: programs kept in caches name rules by key and
# may be transformed later.
CUSTOM_RULES: dict[str, object] = {}
_INTERNED: dict = {}  # (kind, name, what the rule is made for) -> its key
_rules_lock = threading.Lock()


def register_custom(kind: str, name: str, rule) -> str:
    """Keep `rule` and return the key an op's `rule` attribute names it by."""
    with _rules_lock:
        key = f"{kind} {name}#{len(CUSTOM_RULES)}"
        CUSTOM_RULES[key] = rule
    return key


def intern_custom(kind: str, name: str, identity, make_rule: Callable[[], object]) -> str:
    """The key of the rule `make_rule()` builds for `identity` (a hashable value that decides
    the rule, such as the rule it batches, the axis size and the mapped dimensions): built
    and registered the first time, the same key after that."""
    k = (kind, name, identity)
    key = _INTERNED.get(k)
    if key is None:
        rule = make_rule()
        with _rules_lock:
            key = _INTERNED.get(k)
            if key is None:
                key = f"{kind} {name}#{len(CUSTOM_RULES)}"
                CUSTOM_RULES[key] = rule
                _INTERNED[k] = key
    return key


JVP_RULES: dict[str, Callable] = {}
# ops that may appear in a linear program (their tangent rule binds them on tangents); each
# needs a transpose rule
LINEAR_OPS: set[str] = set()
TRANSPOSE_RULES: dict[str, Callable] = {}
# op name -> why it has no JVP rule (integer/boolean results, or JAX does not differentiate it)
NOT_DIFFERENTIABLE: dict[str, str] = {}


def defjvp(*names: str):
    """Register the decorated function as the JVP rule of the ops `names`."""

    def deco(fn):
        for n in names:
            JVP_RULES[n] = fn
        return fn

    return deco


def deftranspose(*names: str):
    """Register the decorated function as the transpose rule of the ops `names`."""

    def deco(fn):
        for n in names:
            TRANSPOSE_RULES[n] = fn
        return fn

    return deco


def not_differentiable(reason: str, *names: str):
    """Mark ops as having no derivative, for `reason` (shown in errors and the table)."""
    for n in names:
        NOT_DIFFERENTIABLE[n] = reason


# ---- tangent types ------------------------------------------------------------------------


def is_differentiable_dtype(dt) -> bool:
    return pdt.is_inexact(dt)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The abstract value of a tangent of `aval`: the same for floats, float0 otherwise."""
    if is_differentiable_dtype(aval.dtype):
        return ShapedArray(aval.shape, aval.dtype, aval.weak_type)
    return ShapedArray(aval.shape, pdt.float0, False)


def aval(x) -> ShapedArray:
    if isinstance(x, (Zero, UndefinedPrimal, Unsupported)):
        return x.aval
    return aval_of(x)


def is_zero(t) -> bool:
    return isinstance(t, Zero)


def zeros(av: ShapedArray):
    """A concrete array of zeros of `av` (in the current trace)."""
    return full(av.shape, 0, av.dtype)


def instantiate(t, av: ShapedArray | None = None):
    """`t` as a value: zeros for a symbolic `Zero`."""
    if isinstance(t, Zero):
        return zeros(t.aval if av is None else av)
    return t


def full(shape, value, dtype):
    dt = np.dtype(dtype)
    v = np.array(value, dt)
    return bind1("broadcast_in_dim", v, shape=tuple(shape), broadcast_dimensions=())


def full_like(x, value):
    a = aval(x)
    return full(a.shape, value, a.dtype)


# ---- tangent algebra: thin wrappers binding IR ops on operands of equal types --------------


def add(a, b):
    """a + b where either may be a symbolic zero."""
    if isinstance(a, Zero):
        return b
    if isinstance(b, Zero):
        return a
    return bind1("add", a, b)


def sub(a, b):
    if isinstance(b, Zero):
        return a
    if isinstance(a, Zero):
        return neg(b)
    return bind1("subtract", a, b)


def neg(a):
    return a if isinstance(a, Zero) else bind1("negate", a)


def mul(a, b):
    if isinstance(a, Zero):
        return a
    if isinstance(b, Zero):
        return b
    return bind1("multiply", a, b)


def div(a, b):
    return a if isinstance(a, Zero) else bind1("divide", a, b)


def select(p, a, b):
    return bind1("select", p, a, b)


def convert(x, dtype):
    dt = np.dtype(dtype)
    if isinstance(x, Zero):
        return Zero(ShapedArray(x.aval.shape, dt))
    return x if aval(x).dtype == dt else bind1("convert", x, dtype=dt)


def op(name: str, *args, **attrs):
    return bind1(name, *args, **attrs)


def defbilinear(name: str):
    """Register the JVP rule of an op linear in each of its two operands (JAX's
    `defbilinear`): the tangent of f(x, y) is f(tx, y) + f(x, ty), a symbolic zero skipped."""

    @defjvp(name)
    def jvp(ctx, primals, tangents, attrs, regions):
        (x, y), (tx, ty) = primals, tangents
        z = op(name, x, y, **attrs)
        out = Zero(aval(z))
        if not isinstance(tx, Zero):
            out = add(out, op(name, tx, y, **attrs))
        if not isinstance(ty, Zero):
            out = add(out, op(name, x, ty, **attrs))
        return [z], [out]

    return jvp


def ops(name: str, *args, **attrs):
    return bind(name, *args, **attrs)


def real_dtype(dt) -> np.dtype:
    dt = np.dtype(dt)
    if dt.kind != "c":
        return dt
    return np.dtype(np.float64) if dt == np.complex128 else np.dtype(np.float32)


def complex_dtype(dt) -> np.dtype:
    dt = np.dtype(dt)
    if dt.kind == "c":
        return dt
    return np.dtype(np.complex128) if dt == np.float64 else np.dtype(np.complex64)


def make_complex(re, im):
    """re + i*im for real arrays of one dtype."""
    cdt = complex_dtype(aval(re).dtype)
    i = full_like(convert(im, cdt), 1j)
    return add(convert(re, cdt), mul(convert(im, cdt), i))


def conj(x):
    """The complex conjugate (the identity for real values)."""
    if isinstance(x, Zero) or aval(x).dtype.kind != "c":
        return x
    return make_complex(op("real", x), neg(op("imag", x)))


def bcast(x, shape, dims):
    """broadcast_in_dim, skipped when nothing changes."""
    shape, dims = tuple(shape), tuple(dims)
    if isinstance(x, Zero):
        return Zero(ShapedArray(shape, x.aval.dtype))
    if aval(x).shape == shape and dims == tuple(range(len(shape))):
        return x
    return op("broadcast_in_dim", x, shape=shape, broadcast_dimensions=dims)


def reshape(x, shape):
    shape = tuple(shape)
    if isinstance(x, Zero):
        return Zero(ShapedArray(shape, x.aval.dtype))
    return x if aval(x).shape == shape else op("reshape", x, shape=shape)


def transpose(x, perm):
    perm = tuple(perm)
    if isinstance(x, Zero):
        return Zero(ShapedArray(tuple(x.aval.shape[p] for p in perm), x.aval.dtype))
    return x if perm == tuple(range(len(perm))) else op("transpose", x, permutation=perm)


@functools.lru_cache(maxsize=256)  # (monoid, dtype): a few dozen
def monoid_region(kind: str, dt: np.dtype) -> Function:
    """The scalar region `(a, b) -> kind(a, b)` of a reduction."""
    s = ShapedArray((), np.dtype(dt))
    return trace_to_function(lambda a, b: [bind1(kind, a, b)], [s, s], name=kind).fn


def reduce_sum(x, dims):
    """Sum over `dims` (none: `x` itself)."""
    dims = tuple(sorted(dims))
    if isinstance(x, Zero):
        shape = tuple(d for k, d in enumerate(x.aval.shape) if k not in dims)
        return Zero(ShapedArray(shape, x.aval.dtype))
    if not dims:
        return x
    dt = aval(x).dtype
    return op("reduce", x, np.zeros((), dt), dimensions=dims, regions=[monoid_region("add", dt)])


def is_linear(x) -> bool:
    """Whether a transpose rule's operand is a linear one (an `UndefinedPrimal`)."""
    return isinstance(x, UndefinedPrimal)


def linear_jvp(name: str, linear: Callable[[int, int], bool]):
    """Register the JVP of an op that is linear in the operands where `linear(i, n)` holds
    (n operands) and takes the primal value at the others (indices, sizes): the tangent is
    the same op on the tangents, with zeros for symbolic-zero ones."""

    def rule(ctx, primals, tangents, attrs, regions):
        outs = bind(name, *primals, regions=regions, **attrs)
        n = len(primals)
        args = [
            instantiate(t, aval(p)) if linear(i, n) else p
            for i, (p, t) in enumerate(zip(primals, tangents))
        ]
        return outs, bind(name, *args, regions=regions, **attrs)

    JVP_RULES[name] = rule
    LINEAR_OPS.add(name)
    return rule
