"""Index arrays of jax.numpy: indices, ix_, diag_indices(_from), tril/triu_indices(_from),
mask_indices, unravel_index and ravel_multi_index. Arguments that decide a result's shape
must be concrete (ConcretizationTypeError under jit, as in JAX)."""

from __future__ import annotations

import math
import operator

import numpy as np

from purejit import dtypes as pdt
from purejit.lax._lift import convert
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._creation import arange, ones
from purejit.numpy._setops import nonzero
from purejit.numpy._shape import (
    reshape,
    stack,
)
from purejit import errors
from purejit.runtime.array import Array
from purejit.tracing import ConcreteArray, Tracer


def _here() -> str:
    return errors.at(errors.user_location())


def _concrete(x, what: str) -> np.ndarray:
    """The value of `x` on the host; ConcretizationTypeError for a traced value."""
    if isinstance(x, Tracer):
        raise errors.ConcretizationTypeError(
            f"{what} must be concrete (its value decides the result's shape), got a traced "
            f"value of shape {x.shape}{_here()}; pass a NumPy array or a static value"
        )
    return np.asarray(x.host if type(x) is Array else x)


def _static_int(v, what: str) -> int:
    if isinstance(v, Tracer):
        raise errors.ConcretizationTypeError(f"{what} must be a static integer{_here()}")
    return operator.index(v)


# ---- index arrays -----------------------------------------------------------------------------


def indices(dimensions, dtype=None, sparse: bool = False):
    """The index grid of an array of shape `dimensions` (stacked, or sparse broadcastable
    pieces)."""
    dt = pdt.canonicalize(np.dtype(dtype)) if dtype is not None else pdt.default_int()
    dims = tuple(_static_int(d, "indices: dimensions") for d in dimensions)
    out = []
    for i, d in enumerate(dims):
        shape = (1,) * i + (d,) + (1,) * (len(dims) - i - 1)
        piece = reshape(arange(d, dtype=dt), shape)
        out.append(piece if sparse else c.broadcast_to(piece, dims))
    if sparse:
        return tuple(out)
    return stack(out, 0) if out else c.asarray(np.zeros((0,), dt))


def ix_(*args):
    """Open-mesh index arrays: the i-th 1-D argument reshaped to lie along axis i."""
    out = []
    for i, a in enumerate(args):
        a = c._lift(a) if not isinstance(a, (list, tuple)) else c.asarray(a)
        if a.ndim != 1:
            raise ValueError(f"Arguments to ix_ must be 1-dimensional, got shape {a.shape}")
        if a.dtype == np.bool_:
            raise NotImplementedError("Boolean arguments to ix_ are not implemented")
        shape = [1] * len(args)
        shape[i] = a.shape[0]
        if a.shape[0] == 0:
            a = c.asarray(np.zeros((0,), pdt.default_int()))
        out.append(reshape(a, tuple(shape)))
    return tuple(out)


def diag_indices(n, ndim: int = 2):
    """The indices of the main diagonal of an n x ... x n array (`ndim` copies of
    arange(n))."""
    n, ndim = _static_int(n, "diag_indices: n"), _static_int(ndim, "diag_indices: ndim")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (arange(n, dtype=pdt.default_int()),) * ndim


def diag_indices_from(arr):
    """diag_indices for an array whose dimensions are all equal."""
    shape = np.shape(arr) if not isinstance(arr, (ConcreteArray, Tracer)) else arr.shape
    if len(shape) < 2:
        raise ValueError("diag_indices_from: input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("diag_indices_from: all dimensions of input must be of equal length")
    return diag_indices(shape[0], ndim=len(shape))


def _tri_indices(n, k, m, lower: bool, name: str):
    n = _static_int(n, f"{name}: n")
    k = _static_int(k, f"{name}: k")
    m = n if m is None else _static_int(m, f"{name}: m")
    mask = np.tril(np.ones((n, m), bool), k) if lower else np.triu(np.ones((n, m), bool), k)
    i, j = np.nonzero(mask)
    idt = pdt.default_int()
    return c.asarray(i.astype(idt)), c.asarray(j.astype(idt))


def tril_indices(n, k=0, m=None):
    """The row and column indices of the lower triangle of an (n, m) array (k-th diagonal
    and below)."""
    return _tri_indices(n, k, m, True, "tril_indices")


def triu_indices(n, k=0, m=None):
    """The row and column indices of the upper triangle of an (n, m) array."""
    return _tri_indices(n, k, m, False, "triu_indices")


def _shape_of(arr, name: str):
    shape = arr.shape if hasattr(arr, "shape") else np.shape(arr)
    if len(shape) != 2:
        raise ValueError(f"{name}: only 2-D inputs are accepted")
    return shape


def tril_indices_from(arr, k: int = 0):
    """tril_indices for the shape of the 2-D `arr`."""
    n, m = _shape_of(arr, "tril_indices_from")
    return tril_indices(n, k=k, m=m)


def triu_indices_from(arr, k: int = 0):
    """triu_indices for the shape of the 2-D `arr`."""
    n, m = _shape_of(arr, "triu_indices_from")
    return triu_indices(n, k=k, m=m)


def mask_indices(n: int, mask_func, k: int = 0, *, size=None):
    """The indices where mask_func(ones((n, n)), k) is nonzero (`size=` under jit)."""
    return tuple(nonzero(mask_func(ones((n, n)), k), size=size))


def unravel_index(indices, shape):
    """The multi-index of each flat index in an array of `shape` (out-of-range indices are
    clamped, as jax.numpy does)."""
    idx = c._lift(indices)
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if any(np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence")
    out = [None] * len(shape)
    for i, s in reversed(list(enumerate(shape))):
        idx, out[i] = arith.floor_divide(idx, s), arith.remainder(idx, s)
    oob_pos = c.greater(idx, 0)
    if idx.dtype.kind == "u":
        return tuple(c.where(oob_pos, s - 1, o) for s, o in zip(shape, out))
    oob_neg = c.less(idx, -1)
    return tuple(c.where(oob_pos, s - 1, c.where(oob_neg, 0, o)) for s, o in zip(shape, out))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C", *, dtype=None):
    """The flat index of each multi-index in an array of shape `dims`; mode 'raise' needs
    concrete indices, 'clip' and 'wrap' bring them into range, 'ignore' trusts them."""
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: len(multi_index)={len(multi_index)} != "
                         f"len(dims)={len(dims)}")  # fmt: skip
    dims = tuple(_static_int(d, "ravel_multi_index: dims") for d in dims)
    idxs = [c._lift(i) for i in multi_index]
    if dtype is None:
        dt = c.result_type(*idxs, 1) if idxs else pdt.default_int()
    else:
        dt = pdt.canonicalize(np.dtype(dtype))
    if dt.kind not in "iu":
        raise ValueError(f"ravel_multi_index: dtype={dt} is not an integer type")
    if math.prod(dims) - 1 > np.iinfo(dt).max:
        raise ValueError(f"ravel_multi_index: dtype={dt} not large enough to hold the flat "
                         f"index for dims={dims}; pass a larger dtype=")  # fmt: skip
    for i in idxs:
        if i.dtype.kind not in "iu":
            raise TypeError("ravel_multi_index: only int indices permitted")
    if mode == "raise":
        for i, d in zip(idxs, dims):
            v = _concrete(i, "ravel_multi_index with mode='raise': the indices (use mode="
                             "'wrap' or 'clip' under jit)")  # fmt: skip
            if np.any((v < 0) | (v >= d)):
                raise ValueError("ravel_multi_index: invalid entry in coordinates array")
    elif mode == "clip":
        idxs = [arith.clip(i, 0, d - 1) for i, d in zip(idxs, dims)]
    elif mode == "wrap":
        idxs = [arith.remainder(i, d) for i, d in zip(idxs, dims)]
    elif mode != "ignore":
        raise ValueError(f"ravel_multi_index: invalid mode={mode!r}; expected 'raise', 'wrap', "
                         "'clip' or 'ignore'")  # fmt: skip
    if order == "F":
        strides = np.cumprod((1,) + dims[:-1])
    elif order == "C":
        strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
    else:
        raise ValueError(f"ravel_multi_index: invalid order={order!r}; expected 'C' or 'F'")
    out = c.asarray(np.array(0, dt))
    for i, s in zip(idxs, strides):
        out = c.add(out, c.multiply(convert(i, dt), int(s)))
    return out


__all__ = [
    "diag_indices",
    "diag_indices_from",
    "indices",
    "ix_",
    "mask_indices",
    "ravel_multi_index",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
    "unravel_index",
]
