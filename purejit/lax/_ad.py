"""lax functions that exist for differentiation: `stop_gradient`, `optimization_barrier`."""

from __future__ import annotations

from purejit import dtypes as pdt
from purejit.lax._lift import lift as _lift
from purejit.tracing import bind, bind1
from purejit.tree_util import tree_flatten, tree_unflatten


def stop_gradient(x):
    """`x` (a pytree), with a derivative of zero: gradients do not flow through it.

    Integer and boolean leaves are returned unchanged, as in JAX."""
    leaves, tree = tree_flatten(x)
    out = []
    for v in leaves:
        v = _lift(v)
        out.append(bind1("stop_gradient", v, weak=v.weak_type) if pdt.is_inexact(v.dtype) else v)
    return tree_unflatten(tree, out)


def optimization_barrier(operand):
    """The identity on a pytree of arrays that compiler passes (purejit's and XLA's) do not
    look through: no computation is merged or moved across it."""
    leaves, tree = tree_flatten(operand)
    xs = [_lift(v) for v in leaves]
    if not xs:
        return operand
    outs = bind("optimization_barrier", *xs, weak=tuple(v.weak_type for v in xs))
    return tree_unflatten(tree, outs)
