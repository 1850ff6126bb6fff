"""`purejit.scipy.interpolate`, as `jax.scipy.interpolate`: `RegularGridInterpolator`,
linear or nearest-neighbour interpolation on a rectilinear grid, computed as JAX computes it
(a pytree, so it passes through jit, grad and vmap)."""

from __future__ import annotations

from itertools import product

import numpy as np

import purejit.numpy as jnp
from purejit.numpy._grids_and_dtypes import _promote_inexact
from purejit.tree_util import register_pytree_node

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _ndim_coords_from_arrays(points, ndim: int | None = None):
    """The points as one (..., ndim) array: a tuple of coordinate arrays is broadcast and
    stacked on a last axis; a 1-d array is read as a column of (ndim-long) points."""
    if isinstance(points, tuple) and len(points) == 1:
        points = points[0]
    if isinstance(points, tuple):
        parts = jnp.broadcast_arrays(*points)
        for other in parts[1:]:
            if other.shape != parts[0].shape:
                raise ValueError("coordinate arrays do not have the same shape")
        out = jnp.empty(parts[0].shape + (len(points),), dtype=float)
        for j, item in enumerate(parts):
            out = out.at[..., j].set(item)
        return out
    points = jnp.asarray(points)
    if points.ndim == 1:
        points = points.reshape(-1, 1) if ndim is None else points.reshape(-1, ndim)
    return points


class RegularGridInterpolator:
    """Interpolation on a regular (rectilinear) grid in any number of dimensions, as
    `scipy.interpolate.RegularGridInterpolator` with methods "linear" and "nearest".

    Args:
      points: a sequence of N strictly ascending 1-d arrays, the grid along each axis.
      values: the data on the grid, of shape (len(points[0]), ..., len(points[N-1]), ...);
        trailing axes are carried through.
      method: "linear" or "nearest".
      bounds_error: must be False (a check of the points' values cannot run under jit).
      fill_value: the value of points outside the grid; None extrapolates.

    Calling it with points xi, of shape (..., N) (or a tuple of N coordinate arrays),
    returns the interpolated values, of shape xi.shape[:-1] + values.shape[N:].
    """

    def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
        if method not in _METHODS:
            raise ValueError(f"method {method!r} is not defined")
        self.method = method
        self.bounds_error = bounds_error
        if self.bounds_error:
            raise NotImplementedError(
                "RegularGridInterpolator: bounds_error=True cannot be checked under jit (nor "
                "does JAX's); pass bounds_error=False and test the points yourself"
            )
        values = jnp.asarray(values)
        if len(points) > values.ndim:
            raise ValueError(
                f"there are {len(points)} point arrays, but values has {values.ndim} dimensions"
            )
        (values,) = _promote_inexact(values)
        if fill_value is not None:
            fill_value = jnp.asarray(fill_value)
            if not jnp.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError(
                    "fill_value must be either 'None' or of a type compatible with values "
                    f"({fill_value.dtype} does not cast to {values.dtype})"
                )
        self.fill_value = fill_value
        self.grid = tuple(jnp.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi, method=None):
        method = self.method if method is None else method
        if method not in _METHODS:
            raise ValueError(f"method {method!r} is not defined")
        ndim = len(self.grid)
        xi = _ndim_coords_from_arrays(xi, ndim=ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(
                f"the requested sample points xi have dimension {xi.shape[-1]}, but this "
                f"RegularGridInterpolator has dimension {ndim}"
            )
        xi_shape = xi.shape
        xi = xi.reshape(-1, xi_shape[-1])
        indices, norm_distances, out_of_bounds = self._find_indices(xi.T)
        if method == "linear":
            result = self._evaluate_linear(indices, norm_distances)
        else:
            result = self._evaluate_nearest(indices, norm_distances)
        if not self.bounds_error and self.fill_value is not None:
            bc_shape = result.shape[:1] + (1,) * (result.ndim - 1)
            result = jnp.where(out_of_bounds.reshape(bc_shape), self.fill_value, result)
        return result.reshape(xi_shape[:-1] + self.values.shape[ndim:])

    def _evaluate_linear(self, indices, norm_distances):
        # the sum over the 2**N corners of each cell, each weighted by its distances
        vslice = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        values = jnp.asarray(0.0)
        for corner in product(*[[i, i + 1] for i in indices]):
            weight = jnp.asarray(1.0)
            for ei, i, yi in zip(corner, indices, norm_distances):
                weight = weight * jnp.where(ei == i, 1 - yi, yi)
            values = values + self.values[corner] * weight[vslice]
        return values

    def _evaluate_nearest(self, indices, norm_distances):
        nearest = [jnp.where(yi <= 0.5, i, i + 1) for i, yi in zip(indices, norm_distances)]
        return self.values[tuple(nearest)]

    def _find_indices(self, xi):
        indices, norm_distances = [], []
        out_of_bounds = jnp.zeros((xi.shape[1],), dtype=bool)
        for x, g in zip(xi, self.grid):
            i = jnp.searchsorted(g, x) - 1
            i = jnp.where(i < 0, 0, i)
            i = jnp.where(i > g.size - 2, g.size - 2, i)
            indices.append(i)
            norm_distances.append((x - g[i]) / (g[i + 1] - g[i]))
            if not self.bounds_error:
                out_of_bounds = out_of_bounds | (x < g[0])
                out_of_bounds = out_of_bounds | (x > g[-1])
        return indices, norm_distances, out_of_bounds


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, children: RegularGridInterpolator(*children[:2], *aux, *children[2:]),
)
