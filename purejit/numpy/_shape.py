"""Shape functions of purejit.numpy: reshape, transpose, expand_dims, squeeze,
concatenate, stack, swapaxes, moveaxis, ravel."""

from __future__ import annotations

import operator

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.numpy._core import _lift, convert, promote_args
from purejit.tracing import bind1


def _axis(axis: int, ndim: int, name: str) -> int:
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(  # a ValueError and an IndexError, as NumPy's
            f"{name}: axis {a} is out of bounds for an array of rank {ndim}"
            f"{errors.at(errors.user_location())}"
        )
    return a % ndim


def normalize_axes(axis, ndim: int, name: str) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        out = tuple(_axis(a, ndim, name) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"{name}: repeated axis in {axis}")
        return out
    return (_axis(axis, ndim, name),)


def _describe(x) -> str:
    return f"{x.dtype.name}{list(x.shape)} ({x.size} elements)"


def reshape(a, shape=None, order: str = "C", *, newshape=None, copy=None):
    """`a` with a new shape (one dimension may be -1); `copy` is accepted for the Array API
    (arrays are immutable, so a reshape never aliases visibly). `order="F"` reads and writes
    the elements column-major (as JAX: transpose, reshape to the reversed shape, transpose
    back); `order="A"` raises as in JAX."""
    if order not in ("C", "F"):
        if order == "A":
            raise NotImplementedError(
                "reshape: order='A' is not implemented (nor in JAX: arrays have no memory "
                "layout to follow); use order='C' or order='F'"
            )
        raise ValueError(f"reshape: unexpected value for 'order': {order!r}; use 'C' or 'F'")
    x = _lift(a)
    shape = newshape if shape is None else shape
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError(
            f"reshape: can only specify one unknown dimension (-1); asked to reshape "
            f"{_describe(x)} into {shape}{errors.at(errors.user_location())}; give every "
            "dimension but one explicitly"
        )
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or x.size % known:
            raise ValueError(
                f"reshape: cannot reshape {_describe(x)} into {shape}: the known dimensions "
                f"hold {known} elements, which do not divide {x.size}"
                f"{errors.at(errors.user_location())}"
            )
        shape = tuple(x.size // known if d == -1 else d for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        raise errors.PurejitTypeError(
            f"reshape: cannot reshape {_describe(x)} into {shape}: that shape holds "
            f"{int(np.prod(shape, dtype=np.int64))} elements{errors.at(errors.user_location())}"
        )
    if order == "F":
        # column-major: reverse the axes, reshape row-major to the reversed shape, reverse back
        return transpose(reshape(transpose(x), shape[::-1]))
    if shape == x.shape:
        return x
    return bind1("reshape", x, shape=shape)


def ravel(a, order: str = "C"):
    """`a` flattened; `order="F"` column-major; `"A"` and `"K"` raise, as in JAX."""
    if order == "K":
        raise NotImplementedError("ravel: order='K' is not implemented (nor in JAX)")
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    x = _lift(a)
    if axes is None:
        perm = tuple(reversed(range(x.ndim)))
    else:
        perm = tuple(_axis(p, x.ndim, "transpose") for p in axes)
        if sorted(perm) != list(range(x.ndim)):
            raise ValueError(
                f"transpose: axes {tuple(axes)} are not a permutation of the {x.ndim} axes of "
                f"an array of shape {list(x.shape)}{errors.at(errors.user_location())}"
            )
    if perm == tuple(range(x.ndim)):
        return x
    return bind1("transpose", x, permutation=perm)


def permute_dims(a, axes):
    return transpose(a, axes)


def swapaxes(a, axis1: int, axis2: int):
    x = _lift(a)
    perm = list(range(x.ndim))
    i, j = _axis(axis1, x.ndim, "swapaxes"), _axis(axis2, x.ndim, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(x, perm)


def moveaxis(a, source, destination):
    x = _lift(a)
    src = normalize_axes(source, x.ndim, "moveaxis")
    dst = normalize_axes(destination, x.ndim, "moveaxis")
    order = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def expand_dims(a, axis):
    x = _lift(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = x.ndim + len(axes)
    axes = sorted(_axis(ax, nd, "expand_dims") for ax in axes)
    shape = list(x.shape)
    for ax in axes:
        shape.insert(ax, 1)
    return reshape(x, shape)


def squeeze(a, axis=None):
    x = _lift(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = normalize_axes(axis, x.ndim, "squeeze")
        for ax in axes:
            if x.shape[ax] != 1:
                raise ValueError(
                    f"squeeze: cannot select an axis to squeeze out which has size not equal "
                    f"to one (axis {ax} of shape {list(x.shape)})"
                    f"{errors.at(errors.user_location())}"
                )
    return reshape(x, [d for i, d in enumerate(x.shape) if i not in axes])


def concatenate(arrays, axis: int | None = 0, dtype=None):
    arrs = [_lift(a) for a in arrays]
    if not arrs:
        raise ValueError("concatenate: need at least one array")
    if axis is None:
        arrs = [ravel(a) for a in arrs]
        axis = 0
    if any(a.ndim == 0 for a in arrs):
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    ax = _axis(axis, arrs[0].ndim, "concatenate")
    if dtype is not None:
        dt, weak = pdt.canonicalize(dtype), False
    else:  # all weakly typed inputs give a weakly typed result (as in JAX)
        dt, weak = pdt.result_type_weak(*[(a.dtype, a.weak_type) for a in arrs])
    arrs = [convert(a, dt, weak=weak) for a in arrs]
    if len(arrs) == 1:
        return arrs[0]
    for a in arrs[1:]:
        if a.ndim != arrs[0].ndim or any(
            p != q for i, (p, q) in enumerate(zip(a.shape, arrs[0].shape)) if i != ax
        ):
            raise errors.PurejitTypeError(
                f"concatenate: shapes {list(arrs[0].shape)} and {list(a.shape)} differ outside "
                f"axis {ax}{errors.at(errors.user_location())}"
            )
    return bind1("concatenate", *arrs, dimension=ax)


def stack(arrays, axis: int = 0, dtype=None):
    arrs = [_lift(a) for a in arrays]
    if not arrs:
        raise ValueError("stack: need at least one array")
    shapes = {a.shape for a in arrs}
    if len(shapes) != 1:
        raise errors.PurejitTypeError(
            f"stack: all input arrays must have the same shape, got "
            f"{[list(s) for s in shapes]}{errors.at(errors.user_location())}"
        )
    ax = _axis(axis, arrs[0].ndim + 1, "stack")
    return concatenate([expand_dims(a, ax) for a in arrs], axis=ax, dtype=dtype)


__all__ = ["promote_args"]
