"""Descriptive statistics of jax.scipy.stats: mode, rankdata, sem.

mode and rankdata sort along the axis and find runs of equal values: a run starts where a
value differs from its predecessor (NaNs count as equal to each other, as `unique` groups
them), and each element's run bounds come from a running maximum of run starts and a reversed
running minimum of run ends, so every column is handled at once, without a loop.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from purejit import dtypes as pdt
from purejit import lax
from purejit import numpy as jnp


class ModeResult(NamedTuple):
    mode: object
    count: object


def _check_nan_policy(name: str, nan_policy: str):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(
            f"Illegal nan_policy value {nan_policy!r}; expected one of "
            "{'propagate', 'omit', 'raise'}"
        )
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. "
            f"Please check if nans exist in `x` outside of the `{name}` function."
        )


def _run_bounds(s):
    """For `s` sorted along axis 0: where each element's run of equal values starts (its
    index) and ends (one past its last index), and the run-start mask."""
    n = s.shape[0]
    differ = jnp.not_equal(s[1:], s[:-1])
    if pdt.is_inexact(s.dtype):  # NaNs form one run, as unique(equal_nan=True) has them
        differ = jnp.logical_and(differ, ~(jnp.isnan(s[1:]) & jnp.isnan(s[:-1])))
    true_row = jnp.ones((1,) + s.shape[1:], np.bool_)
    starts = jnp.concatenate([true_row, differ], axis=0)
    ends = jnp.concatenate([differ, true_row], axis=0)  # the last element of a run
    pos = lax.broadcasted_iota(np.int32, s.shape, 0)
    first = lax.cummax(jnp.where(starts, pos, 0), axis=0)
    past = lax.cummin(jnp.where(ends, pos + 1, n), axis=0, reverse=True)
    return first, past, starts


def mode(a, axis=0, nan_policy: str = "propagate", keepdims: bool = False) -> ModeResult:
    """The most frequent value along `axis` (the smallest of equally frequent ones) and how
    often it occurs.

    Args:
        a: the data.
        axis: the axis (None: the flattened data).
        nan_policy: "propagate" (NaNs are values like any other); "omit" and "raise" raise
            NotImplementedError, as in JAX.
        keepdims: keep the reduced axis with size 1.
    Returns:
        ModeResult(mode, count).
    """
    x = jnp.atleast_1d(jnp.asarray(a))
    _check_nan_policy("mode", nan_policy)
    if axis is not None:
        axis = operator.index(axis)
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
        axis %= x.ndim
    shape = x.shape
    if axis is None:
        out_shape = (1,) * len(shape) if keepdims else ()
        x, axis = jnp.ravel(x), 0
    else:
        kept = [(i, d) for i, d in enumerate(shape) if keepdims or i != axis]
        out_shape = tuple(1 if i == axis else d for i, d in kept)
    x = jnp.moveaxis(x, axis, 0)
    x = jnp.reshape(x, (x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64))))
    if x.shape[0] == 0:  # JAX's answer for an empty axis: NaN, seen 0 times (floats)
        nan = jnp.full(out_shape, np.nan, pdt.default_float())
        return ModeResult(nan, jnp.zeros(out_shape, pdt.default_float()))
    s = jnp.sort(x, axis=0)
    first, past, _ = _run_bounds(s)
    counts = past - first
    at = jnp.argmax(counts, axis=0)
    vals = jnp.take_along_axis(s, at[None], axis=0)[0]
    count = jnp.max(counts, axis=0).astype(pdt.default_int())
    return ModeResult(jnp.reshape(vals, out_shape), jnp.reshape(count, out_shape))


_METHODS = ("average", "min", "max", "dense", "ordinal")


def rankdata(a, method: str = "average", *, axis=None, nan_policy: str = "propagate"):
    """The ranks (from 1) of the data, ties resolved by `method`.

    Args:
        a: the data.
        method: "average" (ties share their mean rank), "min", "max", "dense" (consecutive
            ranks for distinct values) or "ordinal" (ties in order of appearance).
        axis: rank along this axis (None: the flattened data).
        nan_policy: "propagate" (a NaN makes every rank of its slice NaN); "omit" and
            "raise" raise NotImplementedError, as in JAX.
    Returns:
        The ranks in the default float dtype (the shape of `a`, or flat for axis=None).
    """
    x = jnp.asarray(a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in _METHODS:
        raise ValueError(f"unknown method '{method}'")
    if axis is None:
        x, axis = jnp.ravel(x), 0
    x = jnp.moveaxis(x, axis, 0)
    out_dt = pdt.default_float()
    n = x.shape[0]
    if n == 0:
        return jnp.moveaxis(x.astype(out_dt), 0, axis)
    order = jnp.argsort(x, axis=0, stable=True)
    s = jnp.take_along_axis(x, order, axis=0)
    inv = jnp.argsort(order, axis=0, stable=True)  # the sorted position of each element
    first, past, starts = _run_bounds(s)
    if method == "ordinal":
        sorted_rank = lax.broadcasted_iota(np.int32, s.shape, 0) + 1
    elif method == "dense":
        sorted_rank = jnp.cumsum(starts, axis=0)
    elif method == "min":
        sorted_rank = first + 1
    elif method == "max":
        sorted_rank = past
    else:
        sorted_rank = 0.5 * (first + 1 + past).astype(out_dt)
    ranks = jnp.take_along_axis(sorted_rank.astype(out_dt), inv, axis=0)
    if pdt.is_inexact(x.dtype):
        any_nan = jnp.any(jnp.isnan(x), axis=0, keepdims=True)
        ranks = jnp.where(any_nan, jnp.asarray(np.nan, out_dt), ranks)
    return jnp.moveaxis(ranks, 0, axis)


def sem(a, axis=0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False):
    """The standard error of the mean: std(ddof) / sqrt(n) along `axis`.

    Args:
        a: the data.
        axis: the axis (None: all the data).
        ddof: delta degrees of freedom of the standard deviation.
        nan_policy: "propagate", or "omit" (NaNs left out of the std and of n).
        keepdims: keep the reduced axis with size 1.
    Returns:
        The standard errors.
    """
    b = jnp.convert_inexact(jnp.asarray(a))
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return jnp.std(b, axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = jnp.sum(~jnp.isnan(b), axis, keepdims=keepdims)
        return jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(count).astype(b.dtype)
    raise ValueError(f"{nan_policy} is not supported")
