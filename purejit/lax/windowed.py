"""Windowed reductions in `purejit.lax`: `reduce_window` (XLA's ReduceWindow).

`reduce_window(x, -inf, lax.max, ...)` is max pooling, `(x, 0, lax.add, ...)` sum pooling;
any computation works, traced into the op's region (for the monoids add, max, min, mul
with their identity as init, XLA picks its fast kernels).
"""

from __future__ import annotations

import operator
from typing import Callable, Sequence

from purejit import errors
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.lax.conv import padtype_to_pads
from purejit.lax.ops import _scalar_region
from purejit.tracing import bind
from purejit.tree_util import tree_flatten, tree_unflatten


def _ints(name: str, value, n: int, default: int = 1) -> tuple[int, ...]:
    if value is None:
        return (default,) * n
    out = tuple(operator.index(v) for v in value)
    if len(out) != n:
        raise ValueError(
            f"lax.reduce_window: {name}={list(out)} needs {n} entries (one per dimension of "
            f"the operand){errors.at(errors.user_location())}"
        )
    return out


def reduce_window(
    operand,
    init_value,
    computation: Callable,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    padding,
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
):
    """Reduce every window of `operand` with `computation`, as `jax.lax.reduce_window`.

    Args:
        operand: an array or a pytree of arrays of one shape.
        init_value: scalars in operand's structure (the computation's identity).
        computation: (acc, x) -> acc on scalars (pytrees for several operands).
        window_dimensions: the window's size per dimension.
        window_strides: the step per dimension.
        padding: "SAME", "SAME_LOWER", "VALID" or a (low, high) pair per dimension.
        base_dilation: dilation of the operand per dimension.
        window_dilation: dilation of the window per dimension.
    Returns:
        The reduced windows, in operand's structure.
    """
    xs, tree = tree_flatten(operand)
    inits, init_tree = tree_flatten(init_value)
    if init_tree != tree:
        raise TypeError(
            f"lax.reduce_window: operand {tree} and init_value {init_tree} differ in structure"
            f"{errors.at(errors.user_location())}"
        )
    xs = [_lift(x) for x in xs]
    if len({x.shape for x in xs}) != 1:
        raise errors.PurejitTypeError(
            f"lax.reduce_window: operands must have one shape, got {[x.shape for x in xs]}"
            f"{errors.at(errors.user_location())}"
        )
    inits = [convert(_lift(i), x.dtype) for i, x in zip(inits, xs)]
    for i in inits:
        if i.shape != ():
            raise errors.PurejitTypeError(
                f"lax.reduce_window: init values must be scalars, got {i.aval}"
                f"{errors.at(errors.user_location())}"
            )
    rank = xs[0].ndim
    window = _ints("window_dimensions", window_dimensions, rank)
    strides = _ints("window_strides", window_strides, rank)
    base = _ints("base_dilation", base_dilation, rank)
    wdil = _ints("window_dilation", window_dilation, rank)
    if isinstance(padding, str):
        dilated = [(w - 1) * d + 1 for w, d in zip(window, wdil)]
        pads = padtype_to_pads(xs[0].shape, dilated, strides, padding)
    else:
        pads = [tuple(operator.index(p) for p in pair) for pair in padding]
        if len(pads) != rank or any(len(p) != 2 for p in pads):
            raise ValueError(
                f"lax.reduce_window: padding={padding!r} needs a (low, high) pair per "
                f"dimension{errors.at(errors.user_location())}"
            )
    n = len(xs)

    def body(*args):
        acc = tree_unflatten(tree, args[:n])
        out = computation(acc, tree_unflatten(tree, args[n:]))
        return [convert(_lift(o), x.dtype) for o, x in zip(tree_flatten(out)[0], xs)]

    region = _scalar_region(body, [x.dtype for x in xs] * 2, "reduce_window")
    outs = bind(
        "reduce_window",
        *xs,
        *inits,
        window_dimensions=window,
        window_strides=strides,
        base_dilations=base,
        window_dilations=wdil,
        padding=tuple(pads),
        regions=[region],
        weak=tuple(x.weak_type for x in xs),
    )
    return tree_unflatten(tree, outs)


__all__ = ["reduce_window"]
