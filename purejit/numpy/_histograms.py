"""Multi-dimensional histograms: histogramdd and histogram2d.

Each coordinate is binned on its own (`searchsorted` into that dimension's edges, the last
bin closed on the right, as NumPy), the per-dimension bin numbers are combined into one flat
index, and `bincount` adds the weights. Bin 0 and the last bin number of each dimension
catch values outside the edges and are dropped at the end.
"""

from __future__ import annotations

import math

import numpy as np

from purejit import dtypes as pdt
from purejit.numpy import _core as c
from purejit.numpy._array_api import diff
from purejit.numpy._index_arrays import ravel_multi_index
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._setops import bincount, histogram_bin_edges, searchsorted
from purejit.numpy._shape import reshape, stack, transpose


def _inexact_pair(sample, weights):
    x = c._lift(sample)
    if weights is None:
        return c.convert_inexact(x), None
    w = c._lift(weights)
    dt = pdt.result_type_weak((x.dtype, x.weak_type), (w.dtype, w.weak_type))[0]
    dt = dt if pdt.is_inexact(dt) else pdt.default_float()
    return c.convert(x, dt), c.convert(w, dt)


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The histogram of N points in D dimensions.

    Args:
        sample: (N, D) coordinates.
        bins: a bin count for every dimension, or one per dimension (counts or edge arrays).
        range: per dimension, None or (low, high) for evenly spaced edges.
        weights: (N,) weights (default: each point counts one).
        density: normalise so the histogram integrates to 1.
    Returns:
        (hist of shape (bins_0, ..., bins_D-1), the list of edge arrays).
    """
    x, w = _inexact_pair(sample, weights)
    if w is not None and w.shape != x.shape[:1]:
        raise ValueError("should have one weight for each sample.")
    if x.ndim != 2:
        raise ValueError(f"histogramdd: sample must be (N, D), got shape {x.shape}")
    n, d = x.shape
    if range is not None and (
        len(range) != d or any(r is not None and np.shape(r)[0] != 2 for r in range)
    ):
        raise ValueError(
            f"For sample.shape={(n, d)}, range must be a sequence of {d} pairs or Nones; "
            f"got {range=}"
        )
    try:
        per_dim = list(bins)
    except TypeError:
        per_dim = d * [bins]  # one bin count for every dimension
    else:
        if len(per_dim) != d:
            raise ValueError("should be a bin for each dimension.")
    idx, edges = [], []
    for i in _dims(d):  # `range` is the argument here
        col = x[:, i]
        e = histogram_bin_edges(col, per_dim[i], None if range is None else range[i])
        k = searchsorted(e, col, side="right")
        # the last edge belongs to the last bin
        idx.append(c.where(c.equal(col, e[-1]), k - 1, k))
        edges.append(e)
    nbins = tuple(e.shape[0] + 1 for e in edges)
    flat = ravel_multi_index(tuple(idx), nbins, mode="clip")
    hist = reshape(bincount(flat, w, length=math.prod(nbins)), nbins)
    hist = hist[(slice(1, -1),) * d]
    if density:
        hist = c.convert(hist, x.dtype)
        hist = c.true_divide(hist, _sum(hist))
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = e.shape[0] - 1
            hist = c.true_divide(hist, reshape(diff(e), tuple(shape)))
    return hist, edges


def _dims(d: int) -> list[int]:
    return list(np.arange(d).tolist())


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The histogram of points (x[i], y[i]).

    Args:
        x, y: the coordinates, one array each.
        bins: a count, a pair of counts, one edge array for both, or a pair of edge arrays.
        range: None or ((xlow, xhigh), (ylow, yhigh)).
        weights: one weight per point.
        density: normalise so the histogram integrates to 1.
    Returns:
        (hist, x edges, y edges).
    """
    x, y = c._lift(x), c._lift(y)
    dt = c.result_type(x, y)
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):  # one edge array shared by both dimensions
        bins = [c.asarray(bins), c.asarray(bins)]
    sample = transpose(stack([c.convert(x, dt), c.convert(y, dt)]))
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]
