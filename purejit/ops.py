"""`purejit.ops`, as `jax.ops`: segment reductions.

`segment_sum(data, segment_ids, num_segments)` adds the rows of `data` whose segment id is k
into row k of the result, by one scatter. Ids outside [0, num_segments) are dropped (negative
ones too: they do not count from the end). `num_segments` must be static under jit; outside
jit it defaults to max(segment_ids) + 1, read from the device.
"""

from __future__ import annotations

import operator

import numpy as np

from purejit import errors
from purejit import numpy as jnp
from purejit.tracing import Tracer

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _identity(kind: str, dt: np.dtype):
    if kind == "add":
        return 0
    if kind == "multiply":
        return 1
    big = kind == "min"
    if dt == np.bool_:
        return big
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.max if big else info.min
    return np.inf if big else -np.inf


def _segment(name, kind, data, segment_ids, num_segments, indices_are_sorted, unique_indices,
             mode):  # fmt: skip
    data, ids = jnp.asarray(data), jnp.asarray(segment_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{name}: segment_ids must be integers, got {ids.dtype}")
    if ids.shape != data.shape[: ids.ndim]:
        raise ValueError(
            f"{name}: segment_ids of shape {list(ids.shape)} must match the leading dims of "
            f"data {list(data.shape)}"
        )
    if num_segments is None:
        if isinstance(ids, Tracer):
            raise errors.ConcretizationTypeError(
                f"{name}: num_segments must be given under jit (the result's length)"
                f"{errors.at(errors.user_location())}"
            )
        num_segments = int(np.max(np.asarray(ids), initial=-1)) + 1
    n = operator.index(num_segments)
    ids = jnp.where(ids < 0, n, ids)  # a negative id is out of range, not counted from the end
    out = jnp.full((n, *data.shape[ids.ndim :]), _identity(kind, data.dtype), data.dtype)
    ref = out.at[ids]
    kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
              mode="drop" if mode is None else mode)  # fmt: skip
    return {"add": ref.add, "multiply": ref.multiply, "max": ref.max, "min": ref.min}[kind](
        data, **kw
    )


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):  # fmt: skip
    """The sum of the rows of `data` in each segment (0 for an empty segment)."""
    return _segment("segment_sum", "add", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, mode)  # fmt: skip


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):  # fmt: skip
    """The product of the rows of `data` in each segment (1 for an empty segment)."""
    return _segment("segment_prod", "multiply", data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, mode)  # fmt: skip


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):  # fmt: skip
    """The maximum of each segment (the dtype's lowest value, -inf, for an empty one)."""
    return _segment("segment_max", "max", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, mode)  # fmt: skip


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):  # fmt: skip
    """The minimum of each segment (the dtype's highest value, inf, for an empty one)."""
    return _segment("segment_min", "min", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, mode)  # fmt: skip
