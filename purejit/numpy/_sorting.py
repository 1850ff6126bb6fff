"""Sorting and cumulative reductions of purejit.numpy: sort, argsort, cumsum, cumprod."""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit.lax import ops as lax
from purejit.lax.sorting import sort as lax_sort
from purejit.numpy._core import _lift, convert


def _flat_axis(x, axis, name: str = ""):
    """(array, axis): axis=None flattens, as NumPy does."""
    if axis is None:
        return lax.reshape(x, (x.size,)), 0
    return x, lax.canonical_axis(axis, x.ndim, name)


def sort(
    a,
    axis: int | None = -1,
    *,
    kind=None,
    order=None,
    stable: bool = True,
    descending: bool = False,
):
    """A sorted copy of `a` along `axis` (None: flattened); NaNs go last (first if
    `descending`), as in jax.numpy.sort."""
    if order is not None:
        raise NotImplementedError("sort(order=...) for structured arrays is not supported")
    x, ax = _flat_axis(_lift(a), axis)
    if x.ndim == 0:
        raise ValueError("sort: cannot sort a 0-d array along an axis")
    out = lax_sort(x, dimension=ax, is_stable=stable)
    return lax.rev(out, (ax,)) if descending else out


def argsort(
    a,
    axis: int | None = -1,
    *,
    kind=None,
    order=None,
    stable: bool = True,
    descending: bool = False,
):
    """Indices that sort `a` along `axis` (default int dtype); equal values keep their
    order when `stable`, also when `descending`."""
    if order is not None:
        raise NotImplementedError("argsort(order=...) for structured arrays is not supported")
    x, ax = _flat_axis(_lift(a), axis)
    if x.ndim == 0:
        raise ValueError("argsort: cannot sort a 0-d array along an axis")
    idx = lax.broadcasted_iota(pdt.default_int(), x.shape, ax)
    if descending:  # sort the reversed array, then reverse back: ties keep their order
        x, idx = lax.rev(x, (ax,)), lax.rev(idx, (ax,))
    _, out = lax_sort((x, idx), dimension=ax, is_stable=stable, num_keys=1)
    return lax.rev(out, (ax,)) if descending else out


def _cumulative(reduction, name: str, a, axis, dtype, out):
    """As jax.numpy: bools accumulate in the default int, other dtypes in their own (no
    integer promotion); an explicit bool dtype accumulates `a != 0` and converts back."""
    if out is not None:
        raise NotImplementedError(f"{name}(out=...) is not supported: arrays are immutable")
    x, ax = _flat_axis(_lift(a), axis, name)
    if dtype is None:
        result = pdt.default_int() if x.dtype == np.bool_ else x.dtype
        compute = result
    else:
        result = pdt.canonicalize(np.dtype(dtype))
        compute = pdt.default_int() if result == np.bool_ else result
        if result == np.bool_ and x.dtype != np.bool_:
            x = convert(x, np.bool_)
    return convert(reduction(convert(x, compute), axis=ax), result)


def cumsum(a, axis: int | None = None, dtype=None, out=None):
    """Cumulative sum along `axis` (None: flattened), as jax.numpy.cumsum."""
    return _cumulative(lax.cumsum, "cumsum", a, axis, dtype, out)


def cumprod(a, axis: int | None = None, dtype=None, out=None):
    """Cumulative product along `axis` (None: flattened), as jax.numpy.cumprod."""
    return _cumulative(lax.cumprod, "cumprod", a, axis, dtype, out)
