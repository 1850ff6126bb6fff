"""The jit trace: records primitives into an IR function.

`trace_to_function(fun, in_avals)` runs `fun` on tracers and returns the IR function with
its output avals. Values that `fun` closes over are lifted: concrete arrays become
`constant` ops; tracers of an enclosing JitTrace (control flow bodies) become extra
parameters, listed in `captures` so the caller passes them as explicit operands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from purejit import errors
from purejit.tracing.core import (
    ShapedArray,
    Trace,
    Tracer,
    aval_of,
    current_trace,
    infer_results,
    new_trace,
    trace_is_active,
)
from purejit.tracing.host import ConcreteArray, host_value
from purejit.ir import Builder, Function, Op, Value


class JitTracer(Tracer):
    __slots__ = ("value",)

    def __init__(self, trace, aval: ShapedArray, value: Value):
        super().__init__(trace, aval)
        self.value = value


class JitTrace(Trace):
    """Records ops into an IR function.

    Args:
        name: the function's name.
        capture_concrete: lift concrete device arrays (`ConcreteArray`s) as captured inputs
            instead of constants. Reverse-mode differentiation records its linear program this
            way, so the residuals it reads from an eager forward pass stay inputs on the device
            rather than being copied into the program as constants.
    """

    def __init__(
        self, name: str = "main", *, capture_concrete: bool = False, transform: str | None = None
    ):
        self.builder = Builder(name)
        # errors name the transformation being traced: `transform`, else the enclosing
        # staging trace's (a control-flow body inside vmap is traced under purejit.vmap)
        outer = current_trace()
        self.transform = transform or (
            outer.transform if isinstance(outer, JitTrace) else Trace.transform
        )
        self.capture_concrete = capture_concrete
        self.captures: list[tuple[object, Value]] = []
        self._consts: dict[int, tuple[object, Value]] = {}
        self._captured: dict[int, Value] = {}

    def new_arg(self, aval: ShapedArray) -> JitTracer:
        return JitTracer(self, aval, self.builder.param(aval.type))

    def lift(self, x) -> Value:
        if isinstance(x, JitTracer):
            if x.trace is self:
                return x.value
            if isinstance(x.trace, JitTrace) and x.trace.level < self.level:
                return self._capture(x)
            raise errors.UnexpectedTracerError(
                f"a traced value {x.aval} from a finished trace was used"
                f"{errors.at(errors.user_location())}; it leaked out of the function that "
                "made it (stored in a global or a closure)."
            )
        if isinstance(x, Tracer):
            # a tracer of an enclosing transformation (eager differentiation) that a body
            # traced here closes over: an input, like an enclosing jit's tracer
            if x.trace.level < self.level and trace_is_active(x.trace):
                return self._capture(x)
            raise NotImplementedError(f"lifting a {type(x).__name__} into a jit trace")
        if self.capture_concrete and isinstance(x, ConcreteArray):
            return self._capture(x)
        return self._constant(x)

    def _capture(self, x) -> Value:
        v = self._captured.get(id(x))
        if v is None:
            v = self.builder.param(x.aval.type)
            self._captured[id(x)] = v
            self.captures.append((x, v))
        return v

    def _constant(self, x) -> Value:
        hit = self._consts.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        (v,) = self.builder.op("constant", [], {"value": host_value(x)[0]})
        self._consts[id(x)] = (x, v)
        return v

    def process(self, name, args, attrs, regions, weak):
        loc = errors.user_location()
        values = [self.lift(a) for a in args]
        avals = [aval_of(a) for a in args]
        out_avals = infer_results(name, avals, attrs, regions, weak, loc)
        results = [Value(a.type) for a in out_avals]
        self.builder.ops.append(Op(name, values, attrs, results, regions, loc))
        return [JitTracer(self, a, v) for a, v in zip(out_avals, results)]


@dataclass
class Traced:
    fn: Function
    out_avals: list[ShapedArray]
    captures: list  # outer values the function reads (tracers, captured arrays); trailing params
    out: object  # whatever fun returned (flattened by the caller)


def trace_to_function(
    fun: Callable, in_avals: Sequence[ShapedArray], name: str = "main", transform: str | None = None
) -> Traced:
    """Trace `fun(*tracers)`; `fun` must return a flat list of array-likes. `transform` names
    the user-facing transformation in errors (default: the enclosing one, else purejit.jit)."""
    trace = JitTrace(name, transform=transform)
    with new_trace(trace):
        args = [trace.new_arg(a) for a in in_avals]
        outs = fun(*args)
        values, out_avals = [], []
        for o in outs:
            values.append(trace.lift(o))
            out_avals.append(aval_of(o))
    fn = trace.builder.finish(values)
    return Traced(fn, out_avals, [t for t, _ in trace.captures], outs)
