"""More array manipulation helpers of jax.numpy: append, delete, insert, block, choose,
compress, extract, place, put, put_along_axis, fill_diagonal, diagflat, apply_over_axes,
argpartition, dsplit, resize, trim_zeros and rollaxis (index arrays: `_index_arrays`).

As in jax.numpy, arrays are immutable: `place`, `put`, `put_along_axis` and `fill_diagonal`
need `inplace=False` and return the updated array; arguments that decide a result's shape
(`delete`'s and `insert`'s indices, `compress`'s condition without `size=`, `trim_zeros`'s
input) must be concrete, and raise ConcretizationTypeError under jit.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from purejit import dtypes as pdt
from purejit.lax._lift import convert
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._creation import arange, ones, zeros
from purejit.numpy._manip import _split, tile
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._setops import where as _where_size
from purejit.numpy._shape import (
    _axis,
    concatenate,
    expand_dims,
    moveaxis,
    ravel,
    reshape,
    swapaxes,
)
from purejit.numpy._sorting import argsort, sort
from purejit.numpy._index_arrays import (
    _concrete,
    _here,
    diag_indices,
    indices,
    unravel_index,
)
from purejit.tracing import ConcreteArray, Tracer


def _along(axis: int, idx):
    return (slice(None),) * axis + (idx,)


# ---- append, delete, insert, block ------------------------------------------------------------


def append(arr, values, axis: int | None = None):
    """`values` appended to `arr` along `axis` (flattened when axis is None)."""
    a, v = c._lift(arr), c._lift(values)
    if axis is None:
        return concatenate([ravel(a), ravel(v)])
    return concatenate([a, v], axis=axis)


def delete(arr, obj, axis: int | None = None, *, assume_unique_indices: bool = False):
    """`arr` without the entries `obj` (an int, a slice, or an array of indices or a boolean
    mask) along `axis` (flattened when None). Traced indices need assume_unique_indices=True."""
    a = c._lift(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim, "delete")
    n = a.shape[axis]
    if not isinstance(obj, (slice, ConcreteArray, Tracer, np.ndarray, list, tuple)):
        try:
            i = operator.index(obj)
        except TypeError:
            pass
        else:
            if not -n <= i < n:
                raise ValueError(f"delete: index {i} is out of bounds for axis of size {n}")
            i %= n
            return concatenate([a[_along(axis, slice(0, i))], a[_along(axis, slice(i + 1, None))]],
                               axis=axis)  # fmt: skip
    if isinstance(obj, slice):
        obj, assume_unique_indices = np.arange(n)[obj], True
    if isinstance(obj, Tracer) and assume_unique_indices and obj.dtype.kind in "iu":
        # unique traced indices: keep position i + (number of deleted indices <= it)
        o = ravel(obj)
        o = sort(arith.clip(c.where(c.less(o, 0), c.add(o, n), o), 0, n))
        o = c.subtract(o, arange(o.shape[0], dtype=o.dtype))
        i = arange(n - o.shape[0], dtype=o.dtype)
        i = c.add(i, _sum(c.greater_equal(i[None, :], o[:, None]), axis=0, dtype=i.dtype))
        return a[_along(axis, i)]
    o = _concrete(obj, "delete: the indices `obj`")
    if o.dtype.kind in "iu" or (o.size == 0 and o.dtype.kind == "f"):
        keep = np.ones(n, dtype=bool)
        keep[o.astype(np.int64)] = False
    elif o.dtype == np.bool_:
        if o.shape != (n,):
            raise ValueError("delete: a boolean obj must be one-dimensional with the axis' length")
        keep = ~o
    else:
        raise ValueError(f"delete: obj must be integer or bool, got {o.dtype}{_here()}")
    return a[_along(axis, np.flatnonzero(keep))]


def insert(arr, obj, values, axis: int | None = None):
    """`values` inserted into `arr` before the indices `obj` along `axis` (flattened when
    None); `obj` is an int, a slice or a 1-D integer array."""
    if isinstance(obj, (list, tuple)):
        raise TypeError(f"insert requires ndarray or scalar arguments, got {type(obj).__name__}")
    a = c._lift(arr)
    v = c.asarray(values)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim, "insert")
    n_input = a.shape[axis]
    if isinstance(obj, slice):
        idx = arange(*obj.indices(n_input))
    else:
        idx = c._lift(obj)
    if idx.ndim > 1:
        raise ValueError("insert: obj must be a slice, a one-dimensional array, or a scalar")
    if idx.dtype.kind not in "iu":
        if math.prod(idx.shape) == 0 and not isinstance(obj, (ConcreteArray, Tracer)):
            idx = convert(idx, pdt.default_int())
        else:
            raise ValueError(f"insert: the index array must be integer typed, got {idx.dtype}")
    v = convert(v, a.dtype)
    while v.ndim < a.ndim:
        v = expand_dims(v, 0)
    if math.prod(idx.shape) == 1:
        index = ravel(idx)[0]
        if idx.ndim == 0:
            v = moveaxis(v, 0, axis)
        idx = c.broadcast_to(index, (v.shape[axis],))
    n_insert = c.broadcast_shapes(idx.shape, (v.shape[axis],))[0]
    out_shape = list(a.shape)
    out_shape[axis] += n_insert
    out = zeros(tuple(out_shape), a.dtype)
    idx = arith.clip(c.where(c.less(idx, 0), c.add(idx, n_input), idx), 0, n_input)
    idx = c.broadcast_to(idx, (n_insert,))
    values_at = idx.at[argsort(idx)].add(arange(n_insert, dtype=idx.dtype))
    keep = ones((n_input + n_insert,), np.bool_).at[values_at].set(False)
    (arr_at,) = _where_size(keep, size=n_input)
    v = c.broadcast_to(v, tuple(out_shape[:axis]) + (n_insert,) + tuple(out_shape[axis + 1 :]))
    out = out.at[_along(axis, values_at)].set(v)
    return out.at[_along(axis, arr_at)].set(a)


def _block(xs):
    if isinstance(xs, tuple):
        raise ValueError(f"block does not allow tuples, got {xs}")
    if isinstance(xs, list):
        if not xs:
            raise ValueError("block does not allow empty list arguments")
        parts, depths = zip(*[_block(x) for x in xs])
        if any(d != depths[0] for d in depths[1:]):
            raise ValueError("block: mismatched list depths")
        rank = max(depths[0], max(p.ndim for p in parts))
        parts = [reshape(p, (1,) * (rank - p.ndim) + p.shape) for p in parts]
        return concatenate(parts, axis=-depths[0]), depths[0] + 1
    return c.asarray(xs), 1


def block(arrays):
    """An array assembled from nested lists of blocks (the innermost lists join along the last
    axis)."""
    return _block(arrays)[0]


# ---- choose, compress, extract ----------------------------------------------------------------


def choose(a, choices, out=None, mode: str = "raise"):
    """choices[a[i]][i] for each i; mode 'raise' needs a concrete `a`, 'wrap' and 'clip'
    bring indices into range."""
    if out is not None:
        raise NotImplementedError("choose: the out argument is not supported")
    a = c._lift(a)
    chs = [c._lift(ch) for ch in choices]
    if a.dtype.kind not in "iu":
        raise ValueError(f"choose: the `a` array must be integer typed, got {a.dtype}")
    n = len(chs)
    if mode == "raise":
        v = _concrete(a, "choose with mode='raise': `a` (use mode='wrap' or 'clip' under jit)")
        if np.any((v < 0) | (v >= n)):
            raise ValueError("choose: invalid entry in choice array")
        idx = a
    elif mode == "wrap":
        idx = arith.remainder(a, n)
    elif mode == "clip":
        idx = arith.clip(a, 0, n - 1)
    else:
        raise ValueError(f"choose: mode={mode!r} not understood; use 'raise', 'wrap' or 'clip'")
    idx, *chs = c.broadcast_arrays(idx, *chs)
    stacked = c.asarray(chs)
    grid = indices(idx.shape, sparse=True)
    return stacked[(idx,) + tuple(grid)]


def compress(condition, a, axis: int | None = None, *, size=None, fill_value=0, out=None):
    """The slices of `a` along `axis` where `condition` is true; under jit pass `size=` (the
    extra slots take `fill_value`)."""
    if out is not None:
        raise NotImplementedError("compress: the out argument is not supported")
    cond = convert(c._lift(condition), np.dtype(np.bool_))
    arr = c._lift(a)
    if cond.ndim != 1:
        raise ValueError("compress: condition must be a 1D array")
    if axis is None:
        axis, arr = 0, ravel(arr)
    else:
        arr = moveaxis(arr, axis, 0)
    m = arr.shape[0]
    cond, extra = cond[:m], cond[m:]
    arr = arr[: cond.shape[0]]
    if size is None:
        cv = _concrete(cond, "compress without size=: the condition")
        ev = _concrete(extra, "compress without size=: the condition")
        if ev.any():
            raise ValueError("compress: condition contains entries that are out of bounds")
        result = arr[np.flatnonzero(cv)]
    else:
        size = operator.index(size)
        if not 0 <= size <= arr.shape[0]:
            raise ValueError(
                f"compress: size must be positive and not greater than the size of the array "
                f"axis; got size={size} for a.shape[axis]={arr.shape[0]}"
            )
        mask = reshape(cond, cond.shape + (1,) * (arr.ndim - 1))
        arr = c.where(mask, arr, c.asarray(fill_value, dtype=arr.dtype))
        result = arr[argsort(cond, stable=True, descending=True)][:size]
    return moveaxis(result, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of `arr` where `condition` is true, flattened (`size=` under jit)."""
    return compress(ravel(c._lift(condition)), ravel(c._lift(arr)), size=size,
                    fill_value=fill_value)  # fmt: skip


# ---- functional updates -----------------------------------------------------------------------


def _immutable(name: str):
    raise ValueError(
        f"{name} cannot modify arrays in place, because purejit arrays are immutable (as JAX's)"
        f"{_here()}; pass inplace=False to get the updated array instead"
    )


def _tile_to_size(v, size: int):
    if v.shape[0] < size:
        v = tile(v, -(-size // v.shape[0]))
    return v[:size] if v.shape[0] > size else v


def place(arr, mask, vals, *, inplace: bool = True):
    """`arr` with the entries where `mask` is true replaced by `vals` in order (repeated as
    needed); needs inplace=False."""
    data, m, v = c._lift(arr), c._lift(mask), ravel(c._lift(vals))
    if inplace:
        _immutable("place")
    size = math.prod(data.shape)
    if size != math.prod(m.shape):
        raise ValueError("place: arr and mask must be the same size")
    if not v.shape[0]:
        raise ValueError("place: cannot place values from an empty array")
    if not size:
        return data
    (idx,) = _where_size(ravel(m), size=size, fill_value=size)
    v = _tile_to_size(v, idx.shape[0])
    return reshape(ravel(data).at[idx].set(v, mode="drop"), data.shape)


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
    """`a` with the flat positions `ind` set to `v` (repeated as needed); out-of-range indices
    are dropped, or brought into range with mode 'clip' or 'wrap'; needs inplace=False."""
    if inplace:
        _immutable("put")
    arr, idx, val = c._lift(a), ravel(c._lift(ind)), ravel(c._lift(v))
    size = math.prod(arr.shape)
    if not size or not idx.shape[0] or not val.shape[0]:
        return arr
    val = _tile_to_size(val, idx.shape[0])
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        idx, scatter_mode = arith.clip(idx, 0, size - 1), None
    elif mode == "wrap":
        idx, scatter_mode = arith.remainder(idx, size), None
    elif mode == "raise":
        raise NotImplementedError("put: mode='raise' is not supported (as in jax.numpy)")
    else:
        raise ValueError(f"put: mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    return arr.at[unravel_index(idx, arr.shape)].set(val, mode=scatter_mode)


def put_along_axis(arr, indices, values, axis, inplace: bool = True, *, mode=None):
    """`arr` with values written at `indices` along `axis` (take_along_axis's inverse);
    needs inplace=False."""
    if inplace:
        _immutable("put_along_axis")
    a, idx, v = c._lift(arr), c._lift(indices), c._lift(values)
    shape0 = a.shape
    if axis is None:
        a, axis = ravel(a), 0
    if a.ndim != idx.ndim:
        raise ValueError(
            f"put_along_axis: 'arr' and 'indices' must have the same ndim, got {a.ndim} and "
            f"{idx.ndim}"
        )
    axis = _axis(axis, a.ndim, "put_along_axis")
    try:
        v = c.broadcast_to(v, idx.shape)
    except ValueError:
        raise ValueError(
            f"put_along_axis: 'values' must broadcast to 'indices', got {v.shape} and {idx.shape}"
        ) from None
    index = []
    for d in range(a.ndim):
        if d == axis:
            index.append(c.where(c.less(idx, 0), c.add(idx, a.shape[d]), idx))
        else:
            shape = [1] * a.ndim
            shape[d] = idx.shape[d]
            index.append(reshape(arange(idx.shape[d]), tuple(shape)))
    out = a.at[tuple(index)].set(v, mode=mode)
    return reshape(out, shape0) if out.shape != shape0 else out


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """`a` with its main diagonal set to `val` (repeated as needed); needs inplace=False."""
    if inplace:
        raise NotImplementedError(
            "fill_diagonal: purejit arrays are immutable (as JAX's); pass inplace=False"
        )
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not implemented (as in jax.numpy)")
    a, v = c._lift(a), c._lift(val)
    if a.ndim < 2:
        raise ValueError("fill_diagonal: array must be at least 2-d")
    if a.ndim > 2 and not all(n == a.shape[0] for n in a.shape[1:]):
        raise ValueError("fill_diagonal: all dimensions of input must be of equal length")
    n = min(a.shape)
    idx = diag_indices(n, a.ndim)
    return a.at[idx].set(v if v.ndim == 0 else _tile_to_size(ravel(v), n))


# ---- shapes -----------------------------------------------------------------------------------


def diagflat(v, k: int = 0):
    """A 2-D array with the flattened `v` on its k-th diagonal."""
    x = ravel(c._lift(v))
    n = x.shape[0] + abs(k)
    i = np.arange(n - abs(k))
    flat = i + k + i * n if k >= 0 else i + (i - k) * n
    return reshape(zeros((n * n,), x.dtype).at[flat].set(x), (n, n))


def apply_over_axes(func, a, axes):
    """func(a, axis) applied over each axis in turn, keeping the number of dimensions."""
    arr = c._lift(a)
    for axis in axes:
        b = func(arr, axis)
        if b.ndim == arr.ndim:
            arr = b
        elif b.ndim == arr.ndim - 1:
            arr = expand_dims(b, axis)
        else:
            raise ValueError("apply_over_axes: function is not returning an array of the "
                             "correct shape")  # fmt: skip
    return arr


def argpartition(a, kth: int, axis: int = -1):
    """Indices that partition `a` around its kth smallest element (as jax.numpy: the kth+1
    smallest in sorted order, then the other indices in increasing order)."""
    x = c._lift(a)
    if x.dtype.kind == "c":
        raise NotImplementedError("argpartition of complex arrays (as in jax.numpy)")
    axis = _axis(axis, x.ndim, "argpartition")
    n = x.shape[axis]
    kth = operator.index(kth)
    if not -n <= kth < n:
        raise ValueError(f"argpartition: kth={kth} out of bounds for axis of length {n}")
    kth %= n
    x = swapaxes(x, axis, -1)
    bottom = argsort(x, axis=-1, stable=True)[..., : kth + 1]
    bottom = convert(bottom, np.dtype(np.int32))
    # the remaining indices in increasing order: those not chosen, by a stable sort of a mask
    chosen = zeros(x.shape, np.int32)
    flat_rows = reshape(chosen, (-1, n))
    rows = reshape(arange(flat_rows.shape[0]), (-1, 1))
    chosen = reshape(flat_rows.at[rows, reshape(bottom, (-1, kth + 1))].set(1), x.shape)
    top = convert(argsort(chosen, axis=-1, stable=True)[..., : n - kth - 1], np.dtype(np.int32))
    return swapaxes(concatenate([bottom, top], axis=-1), -1, axis)


def dsplit(ary, indices_or_sections):
    """Split along the third axis (arrays of at least 3 dimensions)."""
    x = c._lift(ary)
    if x.ndim < 3:
        raise ValueError(f"dsplit only works on arrays of 3 or more dimensions, got {x.ndim}")
    return _split(x, indices_or_sections, 2, "dsplit", even=True)


def resize(a, new_shape):
    """`a` flattened, repeated as needed and reshaped to `new_shape`."""
    shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    shape = tuple(operator.index(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError("resize: all elements of `new_shape` must be non-negative")
    x = ravel(c._lift(a))
    size = math.prod(shape)
    if x.shape[0] == 0 or size == 0:
        return zeros(shape, x.dtype)
    return reshape(tile(x, -(-size // x.shape[0]))[:size], shape)


def trim_zeros(filt, trim: str = "fb", axis=None):
    """`filt` without its leading ('f') and/or trailing ('b') zeros (along `axis`, every
    axis when None); the input must be concrete."""
    x = c._lift(filt)
    v = _concrete(x, "trim_zeros: the input")
    picked = range(v.ndim) if axis is None else (axis,) if np.ndim(axis) == 0 else axis
    axes = {_axis(ax, v.ndim, "trim_zeros") for ax in picked}
    t = trim.lower()
    if not axes or ("f" not in t and "b" not in t):
        return x
    index = []
    for ax in range(v.ndim):
        if ax not in axes:
            index.append(slice(None))
            continue
        mask = np.any(v != 0, axis=tuple(i for i in range(v.ndim) if i != ax))
        if not mask.any():
            index.append(slice(0, 0))
            continue
        start = int(mask.argmax()) if "f" in t else None
        stop = v.shape[ax] - int(mask[::-1].argmax()) if "b" in t else None
        index.append(slice(start, stop))
    return x[tuple(index)]


def rollaxis(a, axis: int, start: int = 0):
    """`a` with `axis` moved to lie before position `start` (NumPy's older moveaxis)."""
    x = c._lift(a)
    n = x.ndim
    axis = _axis(axis, n, "rollaxis")
    if not -n <= start <= n:
        raise ValueError(f"rollaxis: start={start} must satisfy {-n} <= start <= {n}")
    if start < 0:
        start += n
    if axis < start:
        start -= 1
    if axis == start:
        return x
    return moveaxis(x, axis, start)


__all__ = [
    "append",
    "apply_over_axes",
    "argpartition",
    "block",
    "choose",
    "compress",
    "delete",
    "diagflat",
    "dsplit",
    "extract",
    "fill_diagonal",
    "insert",
    "place",
    "put",
    "put_along_axis",
    "resize",
    "rollaxis",
    "trim_zeros",
]
