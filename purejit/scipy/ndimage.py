"""`purejit.scipy.ndimage`, as `jax.scipy.ndimage`: `map_coordinates`, interpolation of an
array at arbitrary coordinates (nearest or linear, scipy's boundary modes), computed as JAX
computes it so that results are bit for bit JAX's."""

from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

import purejit.numpy as jnp
from purejit import lax
from purejit.api import jit

__all__ = ["map_coordinates"]


def _mirror_index(index, size: int):
    # reflect about the edge samples: ... 2 1 | 0 1 2 ... n-1 | n-2 ...
    s = size - 1
    return jnp.abs((index + s) % (2 * s) - s)


def _reflect_index(index, size: int):
    # reflect about the edges: ... 1 0 | 0 1 ... n-1 | n-1 n-2 ...
    return jnp.floor_divide(_mirror_index(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror_index,
    "reflect": _reflect_index,
}


def _round_half_away_from_zero(a):
    return a if jnp.issubdtype(a.dtype, np.integer) else lax.round(a)


def _nearest_nodes(coordinate):
    index = _round_half_away_from_zero(coordinate).astype(np.int32)
    return [(index, coordinate.dtype.type(1))]


def _linear_nodes(coordinate):
    lower = jnp.floor(coordinate)
    upper_weight = coordinate - lower
    lower_weight = 1 - upper_weight
    index = lower.astype(np.int32)
    return [(index, lower_weight), (index + 1, upper_weight)]


@functools.partial(jit, static_argnums=(2, 3))
def _map_coordinates(input_arr, coordinates, order: int, mode: str, cval):
    input_arr = jnp.asarray(input_arr)
    coordinates = [jnp.asarray(c) for c in coordinates]
    cval = jnp.asarray(cval, input_arr.dtype)
    nodes_of = _nearest_nodes if order == 0 else _linear_nodes
    fix = _INDEX_FIXERS[mode]
    per_axis = []
    for coordinate, size in zip(coordinates, input_arr.shape):
        nodes = []
        for index, weight in nodes_of(coordinate):
            valid = ((0 <= index) & (index < size)) if mode == "constant" else True
            nodes.append((fix(index, size), valid, weight))
        per_axis.append(nodes)
    outputs = []
    for items in itertools.product(*per_axis):
        indices, validities, weights = zip(*items)
        if all(v is True for v in validities):
            contribution = input_arr[indices]
        else:
            all_valid = functools.reduce(operator.and_, validities)
            contribution = jnp.where(all_valid, input_arr[indices], cval)
        outputs.append(functools.reduce(operator.mul, weights) * contribution)
    result = sum(outputs[1:], outputs[0])
    if jnp.issubdtype(input_arr.dtype, np.integer):
        result = _round_half_away_from_zero(result)
    return result.astype(input_arr.dtype)


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):  # noqa: A002
    """Interpolate `input` at `coordinates`, as `scipy.ndimage.map_coordinates` (orders 0
    and 1).

    Args:
      input: the N-d array sampled.
      coordinates: a sequence of N arrays (of one shape): the fractional index along each
        axis of every output point.
      order: 0 (nearest sample, ties rounded away from zero) or 1 (linear).
      mode: the samples beyond the edges: "constant" (`cval`), "nearest", "wrap", "mirror"
        or "reflect".
      cval: the value outside the array in mode "constant".

    Returns:
      The interpolated values, of `input`'s dtype and the coordinates' shape.
    """
    ndim = np.ndim(input)
    if len(coordinates) != ndim:
        raise ValueError(
            "map_coordinates: coordinates must be a sequence of length input.ndim, but "
            f"{len(coordinates)} != {ndim}"
        )
    if mode not in _INDEX_FIXERS:
        raise NotImplementedError(
            f"map_coordinates does not support mode {mode!r} (nor does JAX's); supported "
            f"modes are {sorted(_INDEX_FIXERS)}"
        )
    if order not in (0, 1):
        raise NotImplementedError(
            f"map_coordinates supports order 0 and 1 (as JAX's), got order={order}; "
            "spline orders need scipy's prefilter, which neither implements"
        )
    return _map_coordinates(input, list(coordinates), order, mode, cval)
