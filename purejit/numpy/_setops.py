"""Data-dependent selections and sets: nonzero, argwhere, flatnonzero, one-argument where,
unique (and the standard's unique_*), isin, searchsorted, digitize, bincount, histogram,
lexsort, partition.

As in JAX, a result whose length depends on the data needs `size=` under jit (extra slots take
`fill_value`); outside jit the length is read from the device first.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax import ops as lax
from purejit.lax.scan import fori_loop
from purejit.lax.sorting import sort as lax_sort
from purejit.lax.sorting import top_k as lax_top_k
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._creation import _eager, arange, full, linspace, zeros
from purejit.numpy._indexing import take
from purejit.numpy._reductions import any as _any
from purejit.numpy._reductions import max as _max
from purejit.numpy._reductions import min as _min
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._shape import _axis, concatenate, moveaxis, ravel, reshape, stack
from purejit.numpy._sorting import argsort, cumsum
from purejit.tracing import ConcreteArray, Tracer

_SIZE_HINT = (
    "the size of the result depends on the values of the input; pass a static `size=` "
    "(and optionally `fill_value=`) to use it under jit"
)


def _concrete_count(name: str, mask) -> int:
    """The number of True entries of `mask`, read from the device (eager only)."""
    if not _eager() or isinstance(mask, Tracer):
        raise errors.ConcretizationTypeError(
            f"{name}: {_SIZE_HINT}{errors.at(errors.user_location())}"
        )
    return int(_sum(mask).item())


def _static_size(name: str, size) -> int:
    try:
        return operator.index(size)
    except TypeError:
        raise errors.ConcretizationTypeError(
            f"{name}: size must be a static integer, got {size!r}"
            f"{errors.at(errors.user_location())}"
        ) from None


def _first_true(mask, size: int):
    """(indices of the first `size` True entries of the 1-D `mask`, in order, padded with
    0; a bool array saying which slots are real)."""
    n = mask.shape[0]
    idt = pdt.default_int()
    # a stable sort of (not mask) brings the True positions to the front, in order
    order = argsort(c.convert(c.logical_not(mask), np.int8), stable=True) if n else mask
    order = c.convert(order, idt)
    if size <= n:
        idx = order[:size]
    else:
        idx = concatenate([order, zeros((size - n,), idt)])
    count = _sum(mask, dtype=idt)
    valid = c.less(arange(size, dtype=idt), count)
    return c.where(valid, idx, c.convert(0, idt)), valid


def nonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements, one array per dimension.

    Args:
        a: an array of at least one dimension.
        size: the static length of each result (required under jit); missing entries take
            `fill_value`, extra ones are dropped.
        fill_value: a scalar, or one per dimension (default 0).
    Returns:
        a tuple of `a.ndim` integer arrays.
    """
    x = c._lift(a)
    if x.ndim == 0:
        raise ValueError("nonzero: calling nonzero on 0-d arrays is not allowed; use atleast_1d")
    mask = ravel(c.not_equal(x, c.convert(0, x.dtype)))
    size = _concrete_count("nonzero", mask) if size is None else _static_size("nonzero", size)
    flat, valid = _first_true(mask, size)
    out, rest = [], flat
    for d in reversed(range(x.ndim)):
        n = x.shape[d]
        out.append(arith.remainder(rest, n) if n else rest)
        rest = arith.floor_divide(rest, n) if n else rest
    out = out[::-1]
    if fill_value is not None:
        fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * x.ndim
        if len(fills) != x.ndim:
            raise ValueError(
                f"nonzero: fill_value must be a scalar or a tuple of length {x.ndim}, "
                f"got {fill_value!r}"
            )
        out = [c.where(valid, o, c.convert(c._lift(f), o.dtype)) for o, f in zip(out, fills)]
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of the flattened `a` (see `nonzero` for size)."""
    return nonzero(ravel(c._lift(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements, one row per element: shape (N, a.ndim)."""
    x = c._lift(a)
    if x.ndim == 0:
        count = nonzero(reshape(x, (1,)), size=size, fill_value=fill_value)[0].shape[0]
        return zeros((count, 0), pdt.default_int())
    return stack(nonzero(x, size=size, fill_value=fill_value), axis=1)


# ---- ordering -----------------------------------------------------------------------------


def _total_lt(x, y):
    """x < y in the order sort uses: NaN after every number; -0 == 0."""
    lt = c.less(x, y)
    if pdt.is_inexact(x.dtype):
        if x.dtype.kind == "c":
            xr, yr, xi, yi = arith.real(x), arith.real(y), arith.imag(x), arith.imag(y)
            return c.logical_or(_total_lt(xr, yr),
                                c.logical_and(_total_eq(xr, yr), _total_lt(xi, yi)))  # fmt: skip
        lt = c.logical_or(lt, c.logical_and(arith.isnan(y), c.logical_not(arith.isnan(x))))
    return lt


def _total_eq(x, y):
    eq = c.equal(x, y)
    if pdt.is_inexact(x.dtype) and x.dtype.kind != "c":
        eq = c.logical_or(eq, c.logical_and(arith.isnan(x), arith.isnan(y)))
    return eq


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str = "scan"):
    """Where to insert `v` into the sorted 1-D `a` to keep it sorted (NaNs sort last).

    Args:
        a: a sorted 1-D array (or any 1-D array with `sorter`, the indices that sort it).
        v: values to place.
        side: 'left' (first suitable index) or 'right' (last).
        method: 'scan' (a binary search, log2(len(a)) steps), 'compare_all' (one
            comparison per pair; faster for small `a`) or 'sort' (same as 'scan' here).
    Returns:
        int32 indices of v's shape.
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"searchsorted: unknown method {method!r}")
    a, v = c._lift(a), c._lift(v)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-D, got shape {list(a.shape)}")
    a, v = _promote_no_broadcast(a, v)
    if sorter is not None:
        a = take(a, c._lift(sorter))
    n = a.shape[0]
    idt = np.dtype(np.int32)

    def go_right(av, vv):  # True where the answer lies after position of av
        return c.logical_not(_total_lt(vv, av)) if side == "right" else _total_lt(av, vv)

    if n == 0:
        return zeros(v.shape, idt)
    if method == "compare_all":
        cmp = go_right(reshape(a, (1,) * v.ndim + (n,)), v[..., None])
        return _sum(cmp, axis=-1, dtype=idt)
    # binary search on [lo, hi): the answer is the number of a's elements that go_right
    steps = int(np.ceil(np.log2(n + 1)))

    def body(_, state):
        lo, hi = state
        mid = arith.floor_divide(c.add(lo, hi), 2)
        right = go_right(take(a, c.minimum(mid, n - 1)), v)
        right = c.logical_and(right, c.less(mid, hi))
        return c.where(right, c.add(mid, 1), lo), c.where(right, hi, mid)

    lo, hi = zeros(v.shape, idt), full(v.shape, np.array(n, idt))
    lo, _ = fori_loop(0, steps, body, (lo, hi))
    return lo


def _promote_no_broadcast(*xs):
    dt, weak = pdt.result_type_weak(*[(x.dtype, x.weak_type) for x in xs])
    return [c.convert(x, dt, weak=weak) for x in xs]


def digitize(x, bins, right: bool = False, *, method=None):
    """The index of the bin each value of `x` falls in (`bins` increasing or decreasing)."""
    x, b = c._lift(x), c._lift(bins)
    if b.ndim != 1:
        raise ValueError(f"digitize: bins must be 1-D, got shape {list(b.shape)}")
    if b.shape[0] == 0:
        return zeros(x.shape, np.int32)
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    inc = searchsorted(b, x, side=side, **kw)
    dec = c.subtract(b.shape[0], searchsorted(b[::-1], x, side=side, **kw))
    return c.where(c.greater_equal(b[-1], b[0]), inc, c.convert(dec, np.int32))


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element of `element` occurs in `test_elements`."""
    e, t = c._lift(element), ravel(c._lift(test_elements))
    if t.shape[0] == 0:
        out = c.full_like_bool(e, False)
    else:
        out = _any(c.equal(e[..., None], reshape(t, (1,) * e.ndim + t.shape)), axis=-1)
    return c.logical_not(out) if invert else out


def lexsort(keys, axis: int = -1):
    """Indices that sort by the last key, then the one before, ... (stable)."""
    ks = [c._lift(k) for k in keys] if not isinstance(keys, (ConcreteArray, Tracer)) else list(keys)
    if not ks:
        raise TypeError("lexsort: need at least one key")
    shapes = {k.shape for k in ks}
    if len(shapes) != 1:
        raise ValueError(f"lexsort: all keys need the same shape, got {sorted(shapes)}")
    if ks[0].ndim == 0:
        raise TypeError("lexsort: keys must be at least 1-D")
    ax = _axis(axis, ks[0].ndim, "lexsort")
    idx = lax.broadcasted_iota(pdt.default_int(), ks[0].shape, ax)
    out = lax_sort((*ks[::-1], idx), dimension=ax, is_stable=True, num_keys=len(ks))
    return out[-1]


def partition(a, kth: int, axis: int = -1):
    """`a` with its kth element in sorted position, smaller ones before and larger ones
    after (as jax.numpy: the kth smallest, then the rest, each part in sorted order)."""
    x = c._lift(a)
    ax = _axis(axis, x.ndim, "partition")
    kth = operator.index(kth)
    n = x.shape[ax]
    if not -n <= kth < n:
        raise ValueError(f"partition: kth={kth} out of bounds for axis of length {n}")
    kth %= n
    x = moveaxis(x, ax, -1)
    if x.dtype.kind == "c":
        raise NotImplementedError("partition of complex arrays (as in jax.numpy)")
    # as JAX: the k+1 smallest in ascending order, then the rest in descending order
    bottom, _ = lax_top_k(_negate_order(x), kth + 1)
    top, _ = lax_top_k(x, n - kth - 1)
    out = concatenate([_negate_order(bottom), top], axis=-1)
    return moveaxis(out, -1, ax)


def _negate_order(x):
    if x.dtype == np.bool_:
        return c.logical_not(x)
    if x.dtype.kind == "u":
        return c.subtract(c.convert(np.iinfo(x.dtype).max, x.dtype), x)
    return c.negative(x)


# ---- unique ---------------------------------------------------------------------------------


class UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):  # noqa: A002  # fmt: skip
    """The sorted unique elements of `ar` (flattened unless `axis` is given).

    Args:
        return_index / return_inverse / return_counts: also return the index of each unique
            value's first occurrence, the index of each input's value in the result, and how
            often each unique value occurs.
        axis: unique slices along this axis (rows of a 2-D array for axis=0).
        equal_nan: count all NaNs as one value.
        size, fill_value: a static result length (required under jit), as in `nonzero`.
    """
    x = c._lift(ar)
    shape = x.shape
    if axis is None:
        x, ax = ravel(x), 0
    else:
        ax = _axis(axis, x.ndim, "unique")
    if x.shape[ax] == 0 and size and fill_value is None:
        raise ValueError("unique: for an empty input with a nonzero size, give fill_value")
    aux = moveaxis(x, ax, 0)
    m = aux.shape[0]
    rows = reshape(aux, (m, -1))
    if rows.shape[1] == 0 or m == 0:
        perm = arange(m, dtype=pdt.default_int())
    else:
        perm = lexsort([rows[:, j] for j in range(rows.shape[1])][::-1])
    aux = take(aux, perm, axis=0) if m else aux
    srt = reshape(aux, (m, -1))
    if m:
        eq = _total_eq if equal_nan else c.equal
        diff = c.logical_not(eq(srt[1:], srt[:-1]))
        diff = _any(diff, axis=1) if srt.shape[1] else c.full_like_bool(srt[1:, 0], False)
        mask = concatenate([c.full_like_bool(zeros((1,)), True), diff])
    else:
        mask = zeros((0,), np.bool_)
    n = _concrete_count("unique", mask) if size is None else _static_size("unique", size)
    ind, valid = _first_true(mask, n) if m else (zeros((n,), pdt.default_int()), None)
    result = take(aux, ind, axis=0, mode="clip") if m else aux
    if size is not None and fill_value is not None:
        fv = c.convert(c._lift(fill_value), result.dtype)
        if m:
            vshape = (n,) + (1,) * (result.ndim - 1)
            result = c.where(reshape(valid, vshape), result, fv)
        else:
            result = full((n, *result.shape[1:]), fv)
    result = moveaxis(result, 0, ax)
    out = [result]
    idt = pdt.default_int()
    if return_index:
        out.append(take(perm, ind, mode="clip") if m else perm)
    if return_inverse:
        if m:
            imask = c.subtract(cumsum(mask, dtype=idt), 1)
            inv = zeros((m,), idt).at[perm].set(imask)
        else:
            inv = zeros((m,), idt)
        if axis is None:
            inv = reshape(inv, shape)
        out.append(inv)
    if return_counts:
        if m:
            starts, _ = _first_true(mask, n + 1)
            starts = c.where(c.greater(arange(n + 1, dtype=idt), 0),
                             c.where(c.equal(starts, 0), m, starts), 0)  # fmt: skip
            out.append(c.subtract(starts[1:], starts[:-1]))
        else:
            out.append(zeros((0,), idt))
    return out[0] if len(out) == 1 else tuple(out)


def unique_values(x, /, *, size=None, fill_value=None):
    """The standard's unique_values: sorted unique elements (each NaN distinct)."""
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    """The standard's unique_counts: (values, counts)."""
    v, n = unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
    return UniqueCountsResult(v, n)


def unique_inverse(x, /, *, size=None, fill_value=None):
    """The standard's unique_inverse: (values, inverse_indices of x's shape)."""
    v, i = unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
    return UniqueInverseResult(v, i)


def unique_all(x, /, *, size=None, fill_value=None):
    """The standard's unique_all: (values, indices, inverse_indices, counts)."""
    v, i, inv, n = unique(x, return_index=True, return_inverse=True, return_counts=True,
                          equal_nan=False, size=size, fill_value=fill_value)  # fmt: skip
    return UniqueAllResult(v, i, inv, n)


# ---- counting -------------------------------------------------------------------------------


def bincount(x, weights=None, minlength: int = 0, *, length=None):
    """How often each non-negative integer occurs in `x` (weighted by `weights`).

    `length` (static) fixes the result's length, as jit needs; otherwise it is
    max(minlength, max(x) + 1), read from the device."""
    x = c._lift(x)
    if x.dtype == np.bool_:
        x = c.convert(x, np.int32)
    if x.dtype.kind not in "iu":
        raise TypeError(f"bincount: x must have an integer type, got {x.dtype}")
    if x.ndim != 1:
        raise ValueError(f"bincount: only 1-D input is supported, got shape {list(x.shape)}")
    minlength = operator.index(minlength)
    if length is None:
        if not _eager() or isinstance(x, Tracer):
            raise errors.ConcretizationTypeError(
                f"bincount: the length of the result depends on max(x); pass a static "
                f"length= to use it under jit{errors.at(errors.user_location())}"
            )
        length = max(minlength, int(np.max(x.host, initial=-1)) + 1 if x.size else 0)
    else:
        length = _static_size("bincount", length)
    if weights is None:
        w = c.convert(1, pdt.default_int())
    else:
        w = c._lift(weights)
        if w.shape != x.shape:
            raise ValueError(f"bincount: weights shape {w.shape} differs from x's {x.shape}")
    return zeros((length,), w.dtype).at[c.maximum(x, c.convert(0, x.dtype))].add(w, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The bin edges `histogram` uses: `bins + 1` evenly spaced edges over `range`
    (default: the data's min and max), or `bins` itself when it is an array."""
    if isinstance(bins, str):
        raise NotImplementedError("histogram_bin_edges: string values for bins")
    x = c.convert_inexact(c._lift(a))
    dt = x.dtype
    if np.ndim(bins) == 1:
        return c.asarray(bins, dtype=dt)
    nbins = operator.index(bins)
    if range is None:
        lo, hi = _min(x), _max(x)
    else:
        if np.shape(range) != (2,):
            raise ValueError(f"histogram: range must be None or two scalars, got {range!r}")
        lo, hi = c.convert(c._lift(range[0]), dt), c.convert(c._lift(range[1]), dt)
    lo, hi = c.convert(lo, dt), c.convert(hi, dt)
    same = c.equal(hi, lo)
    lo = c.where(same, c.subtract(lo, 0.5), lo)
    hi = c.where(same, c.add(hi, 0.5), hi)
    return linspace(lo, hi, nbins + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """(counts per bin, bin edges); the last bin includes its right edge (NumPy's rule)."""
    x = c._lift(a)
    if weights is None:
        x = c.convert_inexact(x)
        w = c.convert(c.full_like_bool(x, True), x.dtype)
    else:
        w = c._lift(weights)
        if w.shape != x.shape:
            raise ValueError("histogram: weights should have the same shape as a")
        dt = pdt.result_type_weak((x.dtype, x.weak_type), (w.dtype, w.weak_type))[0]
        dt = dt if pdt.is_inexact(dt) else pdt.default_float()
        x, w = c.convert(x, dt), c.convert(w, dt)
    edges = histogram_bin_edges(x, bins, range)
    idx = searchsorted(edges, x, side="right")
    idx = c.where(c.equal(x, edges[-1]), edges.shape[0] - 1, idx)
    counts = zeros((edges.shape[0],), w.dtype).at[idx].add(w)[1:]
    if density:
        widths = c.subtract(edges[1:], edges[:-1])
        counts = c.true_divide(c.true_divide(counts, widths), _sum(counts))
    return counts, edges


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """`x` where `condition` else `y`; with the condition alone, `nonzero(condition)` (which
    needs `size=` under jit)."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y must be given")
    if size is not None or fill_value is not None:
        raise ValueError("where: size and fill_value apply to the one-argument form only")
    return c.where(condition, x, y)
