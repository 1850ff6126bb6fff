"""Tracing: abstract values, tracers, the trace stack and `bind`.

Every primitive (an IR op) is applied with `bind(name, *args, **attrs)`. `bind` hands it to
the innermost active trace, which either runs it (the eager `EvalTrace` at the bottom of the
stack) or records it (`JitTrace`, building an IR function). Transformations nest as JAX's do:
each trace has a level; values from outer traces met by an inner trace are lifted into it
(a `JitTrace` turns a concrete array into a constant and an outer tracer into an explicit
captured input), so `jit(grad(f))`, control flow inside jit and jit inside jit compose.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.ir import Function, IRTypeError, TensorType, get_op
from purejit.tracing import context
from purejit.tracing.host import ConcreteArray, host_value


@dataclass(frozen=True)
class ShapedArray:
    """The abstract value a tracer carries: shape, dtype and JAX's weak-type flag."""

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @functools.cached_property
    def type(self) -> TensorType:
        return TensorType(self.shape, self.dtype)

    @property
    def sharding(self):
        """None: purejit's abstract values carry no sharding (arrays and jit's in/out
        shardings do), JAX's "unspecified"."""
        return None

    def to_tangent_aval(self) -> "ShapedArray":
        """The abstract value of this one's tangents, as JAX's: the same for inexact
        dtypes, float0 (no data) for integers and booleans."""
        if pdt.is_inexact(self.dtype):
            return ShapedArray(self.shape, self.dtype, self.weak_type)
        return ShapedArray(self.shape, pdt.float0)

    def at_least_vspace(self) -> "ShapedArray":
        """`to_tangent_aval()`, under the name older JAX and libraries use."""
        return self.to_tangent_aval()

    def str_short(self) -> str:
        s = str(self.type)
        return s + ("{weak}" if self.weak_type else "")

    def __str__(self):
        return self.str_short()


# ---- the trace stack ---------------------------------------------------------------------


class Trace:
    """Base class of traces. Subclasses implement `process` and `lift`."""

    level: int = 0
    # the user-facing transformation whose tracers these are, for error messages
    transform: str = "purejit.jit"

    def process(self, name: str, args: Sequence, attrs: dict, regions: Sequence[Function], weak):
        raise NotImplementedError

    # JAX's `trace.main` and `tracer._trace`: libraries (Equinox's `filter_jvp`) tell a
    # transformation's own tracers by `tracer._trace.main is trace.main`
    main = property(lambda self: self)


# the trace stack lives in this thread's `TraceContext` (`purejit.tracing.context`): each
# thread has its own stack of traces over the shared base trace, so one thread tracing a
# function never captures another thread's ops (eager or traced). `stack` holds every active
# trace by level; `current` the trace an op with no tracer operands goes to (the innermost,
# unless `set_current_trace` chose a lower one).
_state = context.ctx
_changed = context.changed


def on_trace_change(listener) -> None:
    """Call `listener()` after a trace is pushed or popped, the current trace changes or an
    axis is bound, in the thread where it happened (the C++ dispatch keys on them)."""
    context.on_change(listener)


def trace_depth() -> int:
    """How many traces are on this thread's stack, the base trace included."""
    return len(_state.stack)


def current_trace() -> Trace:
    """The trace that receives ops whose operands are not tracers of a deeper trace: the
    innermost active trace of this thread, unless `set_current_trace` chose a lower one."""
    return _state.current[-1]


def trace_is_active(trace: Trace) -> bool:
    """Whether `trace` is on this thread's stack (not finished)."""
    stack = _state.stack
    return trace.level < len(stack) and stack[trace.level] is trace


@contextlib.contextmanager
def set_current_trace(trace: Trace):
    """Within this block ops without deeper tracer operands go to `trace`.

    Reverse-mode differentiation pushes its linear trace (so that it has a level above the
    trace it linearizes in) and then makes the lower trace current again: primal ops keep
    going there, and only ops that read a tangent (a tracer of the linear trace) are
    recorded by it, as JAX's `find_top_trace` does."""
    current = _state.current
    current.append(trace)
    _changed()
    try:
        yield trace
    finally:
        popped = current.pop()
        _changed()
        assert popped is trace, "current trace stack corrupted"


def set_base_trace(trace: Trace) -> None:
    """Install the trace at the bottom of the stack: the one that runs ops on a device.

    The runtime installs its eager trace when imported; tracing itself never executes."""
    stack = _state.stack
    if context.base() is trace and stack and stack[0] is trace:
        return
    if len(stack) > 1:
        raise RuntimeError("the base trace cannot change while a trace is active")
    context.set_base(trace)


@contextlib.contextmanager
def new_trace(trace: Trace):
    stack, current = _state.stack, _state.current
    trace.level = len(stack)
    stack.append(trace)
    current.append(trace)
    _changed()
    try:
        yield trace
    finally:
        current.pop()
        popped = stack.pop()
        _changed()
        assert popped is trace, "trace stack corrupted"


def aval_of(x) -> ShapedArray:
    """The abstract value of a tracer, purejit.Array, NumPy array or Python scalar."""
    if isinstance(x, (Tracer, ConcreteArray)):
        return x.aval
    v, weak = host_value(x)
    return ShapedArray(v.shape, v.dtype, weak)


def bind(
    name: str,
    *args,
    regions: Sequence[Function] = (),
    weak: bool | tuple[bool, ...] | None = None,
    **attrs,
) -> list:
    """Apply IR op `name` to `args` in the current trace; returns the list of results.

    `weak` overrides the weak-type flag of the results, one bool for all or a tuple with one
    per result (default: weak iff every operand is weak and the op keeps the dtype, for
    elementwise and shape-only ops).
    """
    return find_top_trace(args).process(name, args, attrs, regions, weak)


def find_top_trace(args) -> Trace:
    """The trace an op on `args` goes to: the deepest among the current trace and the traces
    of the tracers in `args` (JAX's `find_top_trace`)."""
    top = _state.current[-1]
    for a in args:
        if isinstance(a, Tracer):
            t = a.trace
            if t is not top and t.level > top.level:
                if not trace_is_active(t):
                    raise errors.UnexpectedTracerError(
                        f"a traced value {a.aval} escaped from the trace that made it (it was "
                        f"stored outside the function){errors.at(errors.user_location())}. "
                        "Return it from the function instead."
                    )
                top = t
    return top


def bind1(name: str, *args, **kw):
    (out,) = bind(name, *args, **kw)
    return out


def infer_results(name, avals: list[ShapedArray], attrs, regions, weak, loc):
    """Apply the op's type rule, turning IR errors into user-facing ones with the line."""
    opdef = get_op(name)
    try:
        types = opdef.infer([a.type for a in avals], attrs, list(regions))
    except IRTypeError as e:
        raise errors.PurejitTypeError(f"{e}{errors.at(loc)}") from None
    if weak is not None:  # an explicit flag (or a tuple of one per result) from the caller wins
        flags = weak if isinstance(weak, tuple) else (weak,) * len(types)
        return [_with_type(t, bool(w)) for t, w in zip(types, flags)]
    keeps = "elementwise" in opdef.traits or "shape_only" in opdef.traits
    weak = bool(avals) and keeps and all(a.weak_type for a in avals)
    # as in JAX, this holds for dtype-changing elementwise ops too: `1.0 < 2.0` is a weak bool
    return [_with_type(t, weak) for t in types]


def _with_type(t: TensorType, weak: bool) -> ShapedArray:
    """`ShapedArray(t.shape, t.dtype, weak)` whose `type` is `t` itself (the value the
    cached property would make anew: the result's IR value takes it)."""
    a = ShapedArray(t.shape, t.dtype, weak)
    a.__dict__["type"] = t
    return a


# ---- tracers ------------------------------------------------------------------------------


class Tracer:
    """A stand-in for an array during tracing. Python operators dispatch to purejit.numpy."""

    __array_priority__ = 1000
    __slots__ = ("trace", "aval")

    def __init__(self, trace: Trace, aval: ShapedArray):
        self.trace = trace
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    _trace = property(lambda self: self.trace)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.shape[0]

    def _concretization_error(self, what: str, advice: str | None = None, kind=None):
        loc = errors.user_location()
        advice = advice or (
            "Use purejit.lax.cond / purejit.numpy.where for data-dependent choices, or mark "
            "the argument static with static_argnums / static_argnames."
        )
        raise (kind or errors.ConcretizationTypeError)(
            f"{what} of a traced array {self.aval}{errors.at(loc)}: its value is not known "
            f"while tracing under {self.trace.transform}. {advice}"
        )

    def item(self, *args):
        self._concretization_error(
            ".item()",
            "Return the array from the jitted function and call .item() on the result, keep "
            "computing with the array itself (x[()] or x.reshape(()) for a 0-d array), or "
            "mark the argument static with static_argnums / static_argnames.",
        )

    def tolist(self):
        self._concretization_error(
            ".tolist()",
            "Return the array from the jitted function and call .tolist() on the result.",
        )

    def __bool__(self):
        self._concretization_error(
            "bool() (an `if` or `while` on a condition)", kind=errors.TracerBoolConversionError
        )

    def __int__(self):
        self._concretization_error("int()", kind=errors.TracerIntegerConversionError)

    def __float__(self):
        self._concretization_error("float()")

    def __complex__(self):
        self._concretization_error("complex()")

    def __index__(self):
        self._concretization_error(
            "using as an index (__index__)", kind=errors.TracerIntegerConversionError
        )

    def __array__(self, dtype=None, copy=None):
        loc = errors.user_location()
        raise errors.TracerArrayConversionError(
            f"np.asarray() of a traced array {self.aval}{errors.at(loc)}: NumPy cannot see "
            f"values traced by {self.trace.transform}. Use purejit.numpy instead of numpy in "
            "traced code."
        )

    def __repr__(self):
        return f"Tracer<{self.aval}>"

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval}")


__all__ = [
    "Any",
    "ConcreteArray",
    "ShapedArray",
    "Trace",
    "Tracer",
    "aval_of",
    "bind",
    "bind1",
    "current_trace",
    "find_top_trace",
    "infer_results",
    "new_trace",
    "set_base_trace",
    "set_current_trace",
    "trace_is_active",
]
