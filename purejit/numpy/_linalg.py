"""Products: matmul (`@`), dot, vdot, inner, outer, tensordot."""

from __future__ import annotations

from purejit import errors
import numpy as np

from purejit.backend import versions
from purejit.lax.ops import dot_general as lax_dot_general
from purejit.numpy._core import _lift, broadcast_to, convert, multiply, result_type
from purejit.numpy._arithmetic import conj as _conj
from purejit.numpy._shape import expand_dims, moveaxis, reshape, squeeze, stack, transpose
from purejit.runtime.eager_fn import eager_function


def _promote2(a, b):
    x, y = _lift(a), _lift(b)
    dt = result_type(x, y)
    return convert(x, dt), convert(y, dt)


def matmul(a, b, /, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules: 1-D operands are promoted, batch dims broadcast."""
    x, y = _promote2(a, b)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("matmul: operands must be at least 1-D (use * for scalars)")
    prec = {"precision": precision, "preferred_element_type": preferred_element_type}
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
    batch = tuple(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))

    if y.ndim == 2 and x.ndim > 2:
        # (..., n, k) @ (k, m): contract without batch dims; never broadcast the weights
        out = lax_dot_general(x, y, (((x.ndim - 1,), (0,)), ((), ())), **prec)
        return _squeeze_vectors(out, x1, y1)
    if x.ndim == 2 and y.ndim > 2:
        # (n, k) @ (..., k, m): the result comes out (n, ..., m); move n next to m
        out = lax_dot_general(x, y, (((1,), (y.ndim - 2,)), ((), ())), **prec)
        nb = y.ndim - 2

        out = transpose(out, tuple(range(1, nb + 1)) + (0, nb + 1))
        return _squeeze_vectors(out, x1, y1)
    x = broadcast_to(x, batch + x.shape[-2:])
    y = broadcast_to(y, batch + y.shape[-2:])
    nb = len(batch)
    bdims = tuple(range(nb))
    out = lax_dot_general(x, y, (((nb + 1,), (nb,)), (bdims, bdims)), **prec)
    return _squeeze_vectors(out, x1, y1)


# outside jit, a cached jit of itself dispatched in C++ (as jax.numpy's is)
matmul = eager_function(matmul)


def _squeeze_vectors(out, x1: bool, y1: bool):
    """Drop the unit dims that matmul added to 1-D operands."""
    if x1:
        out = squeeze(out, -2)
    if y1:
        out = squeeze(out, -1)
    return out


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's dot: scalars multiply, vectors and matrices go through matmul, higher ranks
    contract a's last axis with b's second-to-last."""
    prec = {"precision": precision, "preferred_element_type": preferred_element_type}
    x, y = _promote2(a, b)
    if x.ndim == 0 or y.ndim == 0:
        out = multiply(x, y)
        return out if preferred_element_type is None else convert(out, preferred_element_type)
    if y.ndim == 1 or x.ndim == 1 or (x.ndim == 2 and y.ndim == 2):
        return matmul(x, y, **prec)
    return tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 2]), **prec)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Contract the `axes` of a with those of b (an int: a's last n with b's first n)."""
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
    return lax_dot_general(x, y, ((la, lb), ((), ())), precision, preferred_element_type)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """The dot product of the flattened operands, conjugating the first."""
    x, y = _promote2(a, b)
    if x.dtype.kind == "c":
        x = _conj(x)
    return dot(reshape(x, (-1,)), reshape(y, (-1,)), precision=precision,
               preferred_element_type=preferred_element_type)  # fmt: skip


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Contract the last axes of a and b."""
    prec = {"precision": precision, "preferred_element_type": preferred_element_type}
    x, y = _promote2(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return dot(x, y, **prec)
    return tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 1]), **prec)


def outer(a, b, out=None):
    """Every product of a's and b's elements (both flattened)."""
    if out is not None:
        raise NotImplementedError("outer: out= is not supported (arrays are immutable)")
    x, y = _promote2(a, b)
    return multiply(reshape(x, (-1, 1)), reshape(y, (1, -1)))


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None):
    """The cross product of 2- or 3-vectors: along `axisa` of a and `axisb` of b, the result's
    vectors along `axisc` (`axis` sets all three). Two 2-vectors give the z component alone;
    a 2-vector with a 3-vector is taken with z = 0. From jax 0.12 on, as jax.numpy there
    (and NumPy 2, which deprecated them), 2-vectors are an error.

    Args:
        a, b: the arrays of vectors (broadcast against each other).
        axisa, axisb, axisc: where the vectors lie in a, b and the result.
        axis: overrides the three.
    Returns:
        The cross products.
    """
    a, b = _lift(a), _lift(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if versions.jax_release(2) >= (0, 12) and (a.shape[-1] != 3 or b.shape[-1] != 3):
        raise ValueError(
            f"cross: vectors of {a.shape[-1]} and {b.shape[-1]} elements; the dimension must "
            "be 3 for cross product (jax >= 0.12 and NumPy 2 take 3-vectors only)"
        )
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    a2 = a[..., 2] if a.shape[-1] == 3 else broadcast_to(convert(0, a0.dtype), a0.shape)
    b2 = b[..., 2] if b.shape[-1] == 3 else broadcast_to(convert(0, b0.dtype), b0.shape)
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
    return moveaxis(c, 0, axisc)
