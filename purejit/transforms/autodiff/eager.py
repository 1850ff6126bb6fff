"""Differentiation on concrete values: forward mode and linearization of a Python function
run eagerly, as JAX's `JVPTrace` and `LinearizeTrace` do.

Outside `jit`, `grad`, `jvp`, `vjp` and `linearize` run the user's function on
`JVPTracer`s: each carries a primal value that is concrete (a `purejit.Array`, or a tracer
of an enclosing eager differentiation) and a tangent. An op bound on them reaches
`JVPTrace.process`, which calls the op's JVP rule, the same rule the IR interpreter of
`interpreter.py` calls (one rule table serves both). The rule binds the primal op in the
parent trace, so it runs at once, and Python `if`, `while`, `float(x)` on primal values
work; it binds the tangent ops on the tangents:

- forward mode (`jvp`): tangents are concrete too, so they run at once as well;
- linearization (`vjp`, `grad`, `linearize`): tangents are tracers of a `JitTrace` pushed
  between the parent and the `JVPTrace` (`Context.linearizing`), which records the linear
  program; the concrete primal values it reads become its captured inputs (residuals). The
  existing transpose rules then run that program backwards (`LinearFunction.transpose`).

An op none of whose operands carries a tangent, or whose results are not inexact, is bound
on the primals and returns them as they are (JAX's `full_lower`), so integer and boolean
values stay concrete Arrays. Transformations nest: an inner eager differentiation's parent
is the outer `JVPTrace`, and a residual it reads is an outer tracer (captured by the inner
linear trace), so `grad(grad(f))` differentiates the inner backward pass.
"""

from __future__ import annotations

from typing import Callable, Sequence

from purejit import errors
from purejit.tracing import (
    JitTrace,
    ShapedArray,
    Trace,
    Tracer,
    aval_of,
    bind,
    current_trace,
    infer_results,
    new_trace,
    set_current_trace,
)
from purejit.transforms.autodiff._core import (
    JVP_RULES,
    NOT_DIFFERENTIABLE,
    Context,
    Unsupported,
    Zero,
    is_differentiable_dtype,
    tangent_aval,
)
from purejit.transforms.autodiff.interpreter import LinearFunction, NonDifferentiableError


def is_eager() -> bool:
    """Whether a differentiation started now runs on concrete values: no `jit` (or other
    staging trace, such as a `vmap` or control-flow body being traced) is recording."""
    return not isinstance(current_trace(), JitTrace)


class JVPTracer(Tracer):
    """A primal value and its tangent (a value, a linear-trace tracer, or `Unsupported`)."""

    __slots__ = ("primal", "tangent")

    def __init__(self, trace: "JVPTrace", primal, tangent):
        super().__init__(trace, aval_of(primal))
        self.primal = primal
        self.tangent = tangent

    # Python's conversions read the primal, which is concrete, so control flow on values
    # works; as in JAX, float(), complex() and tolist() refuse (the value they give looks
    # differentiable but carries no derivative), while bool(), int() and item() answer
    def __bool__(self):
        return bool(self.primal)

    def __int__(self):
        return int(self.primal)

    def __index__(self):
        return self.primal.__index__()

    def item(self, *args):
        return self.primal.item(*args)

    def _drops_derivative(self, what: str):
        raise errors.ConcretizationTypeError(
            f"{what} of a value being differentiated by {self.trace.transform} {self.aval}"
            f"{errors.at(errors.user_location())}: the Python number would carry no "
            "derivative. Keep computing with the array, or take its value as a constant "
            "with purejit.lax.stop_gradient(x) first."
        )

    def __float__(self):
        self._drops_derivative("float()")

    def __complex__(self):
        self._drops_derivative("complex()")

    def tolist(self):
        self._drops_derivative(".tolist()")

    def __array__(self, dtype=None, copy=None):
        raise errors.TracerArrayConversionError(
            f"np.asarray() of an array being differentiated by {self.trace.transform} "
            f"{self.aval}{errors.at(errors.user_location())}: NumPy cannot carry its "
            "derivative. Use purejit.numpy instead of numpy on it, or take its value with "
            "purejit.lax.stop_gradient first."
        )

    def __repr__(self):
        return f"JVPTracer<{self.aval}>(primal={self.primal!r})"


class JVPTrace(Trace):
    """Applies each op's JVP rule to primal values computed in `parent`.

    Args:
        parent: the trace the primal ops go to (the eager trace, or an enclosing `JVPTrace`).
        ctx: the rules' context (`linearizing`, and the linear trace when it is set).
        transform: the user-facing name, for error messages ("purejit.grad").
    """

    def __init__(self, parent: Trace, ctx: Context, transform: str):
        self.parent = parent
        self.ctx = ctx
        self.transform = transform

    def process(self, name, args, attrs, regions, weak):
        primals, tangents, live = [], [], False
        for a in args:
            if isinstance(a, JVPTracer) and a.trace is self:
                primals.append(a.primal)
                tangents.append(a.tangent)
                live = True
            else:
                primals.append(a)
                tangents.append(Zero(tangent_aval(aval_of(a))))
        with set_current_trace(self.parent):
            if not live:
                return bind(name, *primals, regions=regions, weak=weak, **attrs)
            loc = errors.user_location()
            avals = [aval_of(p) for p in primals]
            out_avals = infer_results(name, avals, attrs, regions, weak, loc)
            if not any(is_differentiable_dtype(a.dtype) for a in out_avals):
                return bind(name, *primals, regions=regions, weak=weak, **attrs)
            outs, touts = self._apply_rule(name, primals, tangents, attrs, regions, loc)
            outs = [_with_weak(o, a) for o, a in zip(outs, out_avals)]
        result = []
        for o, t, a in zip(outs, touts, out_avals):
            if isinstance(t, Zero) or not is_differentiable_dtype(a.dtype):
                result.append(o)
            elif isinstance(t, Unsupported) and loc and loc not in t.message:
                result.append(JVPTracer(self, o, Unsupported(t.aval, t.message + errors.at(loc))))
            else:
                result.append(JVPTracer(self, o, t))
        return result

    def _apply_rule(self, name, primals, tangents, attrs, regions, loc):
        for t in tangents:
            if isinstance(t, Unsupported):
                raise NonDifferentiableError(t.message)
        rule = JVP_RULES.get(name)
        if rule is None:
            why = NOT_DIFFERENTIABLE.get(name, "it has no differentiation rule")
            raise NonDifferentiableError(
                f"{self.transform}: cannot differentiate through op `{name}`{errors.at(loc)}: {why}"
            )
        try:
            return rule(self.ctx, primals, tangents, attrs, regions)
        except NonDifferentiableError:
            raise
        except (NotImplementedError, errors.PurejitTypeError) as e:
            if loc and loc in str(e):
                raise
            raise type(e)(f"{e} (differentiating `{name}`{errors.at(loc)})") from None


def _with_weak(x, aval: ShapedArray):
    """`x` with the weak-type flag the op's own type rule gives (rules bind without one)."""
    if aval_of(x).weak_type == aval.weak_type:
        return x
    return bind("convert", x, dtype=aval.dtype, weak=aval.weak_type)[0]


def _unpack(trace: JVPTrace, x):
    """(primal, tangent) of an output of the traced function."""
    if isinstance(x, JVPTracer) and x.trace is trace:
        return x.primal, x.tangent
    return x, Zero(tangent_aval(aval_of(x)))


def primal_of(trace: JVPTrace, x):
    """The primal value of `x` (auxiliary outputs leave the trace undifferentiated)."""
    return _unpack(trace, x)[0]


def _check_supported(touts):
    for t in touts:
        if isinstance(t, Unsupported):
            raise NonDifferentiableError(t.message)


def jvp(fun: Callable, primals: Sequence, tangents: Sequence, transform: str, num_out=None):
    """Run `fun(*tracers) -> flat list` on concrete `primals`, pushing `tangents` (values or
    `Zero`) forward.

    Args:
        fun: a function of flat arrays returning a flat list.
        primals, tangents: one value each per input.
        transform: the user-facing name for messages.
        num_out: only the first `num_out` outputs are differentiated (the rest, auxiliary
            data, come back as primal values); None: all.
    Returns:
        (primal outputs, tangent outputs: a value or `Zero` per differentiated output).
    """
    parent = current_trace()
    trace = JVPTrace(parent, Context(linearizing=False), transform)
    with new_trace(trace):
        ins = [
            p if isinstance(t, Zero) else JVPTracer(trace, p, t) for p, t in zip(primals, tangents)
        ]
        outs = fun(*ins)
        n = len(outs) if num_out is None else num_out
        pairs = [_unpack(trace, o) for o in outs[:n]]
        aux = [primal_of(trace, o) for o in outs[n:]]
    touts = [t for _, t in pairs]
    _check_supported(touts)
    return [p for p, _ in pairs] + aux, touts


def linearize(
    fun: Callable, primals: Sequence, nonzero: Sequence[bool], transform: str, num_out=None
):
    """Run `fun(*tracers) -> flat list` on concrete `primals` and record its linear map.

    Args:
        fun: a function of flat arrays returning a flat list.
        primals: one value per input.
        nonzero: which inputs vary (the others get zero tangents).
        transform: the user-facing name for messages.
        num_out: as in `jvp`.
    Returns:
        (primal outputs, `LinearFunction` of the first `num_out` outputs), as
        `interpreter.linearize_function`.
    """
    parent = current_trace()
    in_avals = [tangent_aval(aval_of(p)) for p in primals]
    lin = JitTrace(f"{transform.rpartition('.')[2]}_linear", capture_concrete=True)
    with new_trace(lin):
        trace = JVPTrace(parent, Context(True, lin), transform)
        with new_trace(trace):
            tangents = [
                lin.new_arg(a) if nz and is_differentiable_dtype(a.dtype) else Zero(a)
                for a, nz in zip(in_avals, nonzero)
            ]
            ins = [
                p if isinstance(t, Zero) else JVPTracer(trace, p, t)
                for p, t in zip(primals, tangents)
            ]
            outs = fun(*ins)
            n = len(outs) if num_out is None else num_out
            pairs = [_unpack(trace, o) for o in outs[:n]]
            aux = [primal_of(trace, o) for o in outs[n:]]
        touts = [t for _, t in pairs]
        _check_supported(touts)
        results = [lin.lift(t) for t in touts if not isinstance(t, Zero)]
    lfn = lin.builder.finish(results)
    in_nonzero = [not isinstance(t, Zero) for t in tangents]
    out_avals = [tangent_aval(aval_of(p)) for p, _ in pairs]
    out_nonzero = [not isinstance(t, Zero) for t in touts]
    residuals = [x for x, _ in lin.captures]
    lf = LinearFunction(lfn, residuals, in_avals, in_nonzero, out_avals, out_nonzero)
    return [p for p, _ in pairs] + aux, lf


__all__ = ["JVPTrace", "JVPTracer", "is_eager", "jvp", "linearize", "primal_of"]
