"""The two halves every transformation shares: trace a Python function into a closed IR
function, and evaluate an IR function by binding its ops into the current trace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from purejit.ir import Function
from purejit.tracing import ShapedArray, bind, trace_to_function


@dataclass
class ClosedFunction:
    """A traced function and the outer values it reads.

    `fn`'s parameters are the traced inputs followed by one parameter per capture; calling
    `eval_function(fn, [*inputs, *captures])` reproduces the traced computation.
    """

    fn: Function
    in_avals: list[ShapedArray]
    out_avals: list[ShapedArray]
    captures: list  # values of enclosing traces the function closes over
    out: object  # what the Python function returned (flat list of leaves)


def trace_closed(
    fun: Callable, in_avals: Sequence[ShapedArray], name: str = "f", transform: str | None = None
) -> ClosedFunction:
    """Trace `fun(*tracers)` (which returns a flat list of array-likes) at a new level.

    Args:
        fun: the function; it receives one tracer per aval.
        in_avals: abstract values of the inputs.
        name: the IR function's name.
        transform: the user-facing transformation, named in errors (default: the
            enclosing one, else purejit.jit).
    Returns:
        the closed function; values of enclosing traces that `fun` reads are `captures`.
    """
    t = trace_to_function(fun, list(in_avals), name, transform)
    return ClosedFunction(t.fn, list(in_avals), t.out_avals, t.captures, t.out)


def eval_function(fn: Function, args: Sequence) -> list:
    """Run `fn` on `args` by binding each op into the current trace.

    Args:
        fn: an IR function.
        args: one value (array, tracer or scalar) per parameter of `fn`.
    Returns:
        the values of `fn`'s results, in the current trace.
    """
    if len(args) != len(fn.params):
        raise TypeError(f"eval_function: {fn.name} takes {len(fn.params)} values, got {len(args)}")
    env = dict(zip(fn.params, args))
    for op in fn.ops:
        outs = bind(op.name, *[env[v] for v in op.operands], regions=op.regions, **op.attrs)
        env.update(zip(op.results, outs))
    return [env[v] for v in fn.results]
