"""Ops that carry differentiation structure: what autodiff must see in a traced program.

stop_gradient(x) -> x
    The identity whose derivative is zero (`lax.stop_gradient`).

optimization_barrier(xs...) -> xs...
    The identity that no compiler pass may look through: values computed from its results
    are never merged with (CSE) or moved across values computed from its operands. The
    backward pass of `checkpoint` recomputes its forward from residuals passed through a
    barrier, so the recomputation is not merged back into the forward pass.
"""

from __future__ import annotations

from purejit.ir.ops._util import nargs
from purejit.ir.registry import OpDef, register


def _stop_gradient_infer(types, attrs, regions):
    nargs("stop_gradient", types, 1)
    return [types[0]]


register(
    OpDef(
        "stop_gradient",
        _stop_gradient_infer,
        lambda args, attrs, regions, run: [args[0]],
        frozenset({"pure", "elementwise", "cheap"}),
        doc="stop_gradient(x) -> x, with zero derivative",
    )
)


def _barrier_infer(types, attrs, regions):
    return list(types)


register(
    OpDef(
        "optimization_barrier",
        _barrier_infer,
        lambda args, attrs, regions, run: list(args),
        frozenset({"pure"}),
        doc="optimization_barrier(xs...) -> xs...: the identity no pass looks through",
    )
)
