"""Partial evaluation, as `jax.interpreters.partial_eval`'s `trace_to_jaxpr_nounits`: trace
a function whose inputs are partly known (`PartialVal.known(value)`) and partly unknown
(`PartialVal.unknown(aval)`), and compute now the outputs that do not depend on an unknown
input (Flax's `nn.scan` finds its broadcast variables this way).

purejit traces the whole function into IR, follows data dependence from the unknown inputs,
and evaluates the slice of the program that gives the known outputs in the current trace
(so a value of an enclosing `jit` stays a tracer of it). The returned jaxpr is the whole
traced program (JAX's holds only the unknown part); its outputs are all of the function's.
"""

from __future__ import annotations

from purejit.ir import Function
from purejit.tracing import ShapedArray, aval_of
from purejit.transforms import trace_closed
from purejit.transforms._ir_eval import eval_function

from purejit.extend.jaxpr import closed_jaxpr
from purejit.extend.linear_util import WrappedFun


class PartialVal(tuple):
    """`(aval, None)` for an unknown value, `(None, value)` for a known one."""

    def __new__(cls, xs):
        aval, const = xs
        if (aval is None) == (const is None) and not (aval is None and const is None):
            raise ValueError("a PartialVal is either unknown (an aval) or known (a value)")
        return tuple.__new__(cls, xs)

    @classmethod
    def known(cls, const) -> "PartialVal":
        return PartialVal((None, const))

    @classmethod
    def unknown(cls, aval: ShapedArray) -> "PartialVal":
        return PartialVal((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self):
        return self[1] if self[0] is None else None

    def get_aval(self) -> ShapedArray:
        return aval_of(self[1]) if self[0] is None else self[0]


def _dependent(fn: Function, unknown: set) -> set:
    dep = set(unknown)
    for op in fn.ops:
        if any(v in dep for v in op.operands):
            dep.update(op.results)
    return dep


def _slice(fn: Function, results) -> Function:
    """The ops of `fn` that `results` need, as a function of all of `fn`'s parameters."""
    need, ops = set(results), []
    for op in reversed(fn.ops):
        if any(r in need for r in op.results):
            ops.append(op)
            need.update(op.operands)
    return Function(fn.name, fn.params, list(reversed(ops)), list(results))


def trace_to_jaxpr_nounits(fun: WrappedFun, pvals, instantiate=False):
    """Trace `fun` (flat inputs to flat outputs) at `pvals`; returns `(jaxpr, out_pvals,
    consts)`: the traced program, each output as a `PartialVal` (known: its value,
    computed now), and the jaxpr's constants. `instantiate` (a bool, or one per output)
    makes outputs unknown even when they could be known."""
    pvals = [p if isinstance(p, PartialVal) else PartialVal(p) for p in pvals]
    avals = [p.get_aval() for p in pvals]
    closed = trace_closed(lambda *xs: list(fun.call_wrapped(*xs)), avals, name=fun.__name__)
    fn = closed.fn
    n = len(pvals)
    unknown = {p for p, pv in zip(fn.params[:n], pvals) if not pv.is_known()}
    dep = _dependent(fn, unknown)
    outs = fn.results
    inst = [instantiate] * len(outs) if isinstance(instantiate, bool) else list(instantiate)
    known = [i for i, v in enumerate(outs) if v not in dep and not inst[i]]
    values = {}
    if known:
        part = _slice(fn, [outs[i] for i in known])
        if any(op.has_trait("side_effect") for op in part.walk()):
            raise NotImplementedError(
                "trace_to_jaxpr_nounits: the known outputs are computed by an op with "
                "effects (a callback); partial evaluation would run it twice"
            )
        args = [pv.get_known() for pv in pvals] + list(closed.captures)
        values = dict(zip(known, eval_function(part, args)))
    out_pvals = [
        PartialVal.known(values[i]) if i in values else PartialVal.unknown(a)
        for i, a in enumerate(closed.out_avals)
    ]
    view = closed_jaxpr(fn)
    return view.jaxpr, out_pvals, view.consts


__all__ = ["PartialVal", "trace_to_jaxpr_nounits"]
