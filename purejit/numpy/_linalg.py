"""Products: matmul (`@`), dot, vdot, inner, outer, tensordot."""

from __future__ import annotations

from purejit import errors
from purejit.numpy._core import _lift, broadcast_to, convert, multiply, result_type
from purejit.numpy._shape import expand_dims, reshape, squeeze, transpose
from purejit.tracing import bind1


def _promote2(a, b):
    x, y = _lift(a), _lift(b)
    dt = result_type(x, y)
    return convert(x, dt), convert(y, dt)


def matmul(a, b, /, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules: 1-D operands are promoted, batch dims broadcast."""
    x, y = _promote2(a, b)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("matmul: operands must be at least 1-D (use * for scalars)")
    x1, y1 = x.ndim == 1, y.ndim == 1
    if x1:
        x = expand_dims(x, 0)
    if y1:
        y = expand_dims(y, -1)
    if x.shape[-1] != y.shape[-2]:
        raise errors.PurejitTypeError(
            f"matmul: contracting dimensions differ: {list(_lift(a).shape)} @ "
            f"{list(_lift(b).shape)} ({x.shape[-1]} != {y.shape[-2]})"
            f"{errors.at(errors.user_location())}"
        )
    import numpy as np

    batch = tuple(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))

    if y.ndim == 2 and x.ndim > 2:
        # (..., n, k) @ (k, m): contract without batch dims; never broadcast the weights
        out = bind1(
            "dot_general",
            x,
            y,
            lhs_batching_dimensions=(),
            rhs_batching_dimensions=(),
            lhs_contracting_dimensions=(x.ndim - 1,),
            rhs_contracting_dimensions=(0,),
        )
        return _squeeze_vectors(out, x1, y1)
    if x.ndim == 2 and y.ndim > 2:
        # (n, k) @ (..., k, m): the result comes out (n, ..., m); move n next to m
        out = bind1(
            "dot_general",
            x,
            y,
            lhs_batching_dimensions=(),
            rhs_batching_dimensions=(),
            lhs_contracting_dimensions=(1,),
            rhs_contracting_dimensions=(y.ndim - 2,),
        )
        nb = y.ndim - 2

        out = transpose(out, tuple(range(1, nb + 1)) + (0, nb + 1))
        return _squeeze_vectors(out, x1, y1)
    x = broadcast_to(x, batch + x.shape[-2:])
    y = broadcast_to(y, batch + y.shape[-2:])
    nb = len(batch)
    out = bind1(
        "dot_general",
        x,
        y,
        lhs_batching_dimensions=tuple(range(nb)),
        rhs_batching_dimensions=tuple(range(nb)),
        lhs_contracting_dimensions=(nb + 1,),
        rhs_contracting_dimensions=(nb,),
    )
    return _squeeze_vectors(out, x1, y1)


def _squeeze_vectors(out, x1: bool, y1: bool):
    """Drop the unit dims that matmul added to 1-D operands."""
    if x1:
        out = squeeze(out, -2)
    if y1:
        out = squeeze(out, -1)
    return out


def dot(a, b, *, precision=None, preferred_element_type=None):
    x, y = _promote2(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return multiply(x, y)
    if y.ndim == 1 or x.ndim == 1 or (x.ndim == 2 and y.ndim == 2):
        return matmul(x, y)
    return tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 2]))


def tensordot(a, b, axes=2):
    x, y = _promote2(a, b)
    if isinstance(axes, int):
        la = tuple(range(x.ndim - axes, x.ndim))
        lb = tuple(range(axes))
    else:
        la, lb = axes
        la = (la,) if isinstance(la, int) else tuple(la)
        lb = (lb,) if isinstance(lb, int) else tuple(lb)
    la = tuple(d % x.ndim for d in la)
    lb = tuple(d % y.ndim for d in lb)
    return bind1(
        "dot_general",
        x,
        y,
        lhs_batching_dimensions=(),
        rhs_batching_dimensions=(),
        lhs_contracting_dimensions=la,
        rhs_contracting_dimensions=lb,
    )


def vdot(a, b):
    return dot(reshape(a, (-1,)), reshape(b, (-1,)))


def inner(a, b):
    x, y = _promote2(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return dot(x, y)
    return tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 1]))


def outer(a, b):
    x, y = _promote2(a, b)
    return tensordot(reshape(x, (-1,)), reshape(y, (-1,)), axes=0)
