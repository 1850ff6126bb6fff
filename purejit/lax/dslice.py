"""`ds(start, size, stride)`: a slice whose start may be traced (JAX's `jax.ds`, a `Slice`),
for indexing arrays: `x[ds(i, 2)]` is `x[i:i + 2]` with `i` known only when the program runs.

As in JAX, a unit-stride slice reads as `dynamic_slice` does (the start is clamped so the
whole window fits), a strided one reads each index `start + k * stride` clamped into range.
`purejit.numpy` indexing resolves these entries first (`resolve`), then indexes as usual.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from purejit import errors
from purejit.lax.elementwise import (
    add,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    ge,
    le,
    lt,
    max,
    min,
    mul,
)
from purejit.lax.ops import (
    broadcast_in_dim,
    broadcasted_iota,
    convert_element_type,
    dynamic_slice_in_dim,
    full,
    select,
)
from purejit.lax.slicing import GatherDimensionNumbers, gather
from purejit.tracing import ConcreteArray, Tracer


@dataclass(frozen=True)
class Slice:
    """A slice of `size` elements from `start` (an int or a traced scalar) every `stride`."""

    start: object
    size: int
    stride: int = 1


def ds(start, size=None, stride=None):
    """A `Slice` from `start` and `size` (as `jax.ds`): `ds(None)` is `:`, `ds(j)` is `:j`,
    `ds(i, j)` is `i:i+j`, `ds(i, j, s)` takes j elements from i every s. The size and the
    stride are static; the start may be traced."""
    if start is None:
        return slice(None)
    if stride is None:
        stride = 1
    if not isinstance(stride, int):
        raise ValueError("Non-static stride in `dslice`")
    if size is None:
        start, size = 0, start
    return Slice(start, size, stride)


def _consumed(e) -> int:
    """How many dimensions of the array an index entry consumes (a boolean mask: its rank)."""
    if e is None or e is Ellipsis:
        return 0
    dt = getattr(e, "dtype", None)
    if dt is not None and np.dtype(dt) == np.bool_:
        return e.ndim if isinstance(e, (ConcreteArray, Tracer)) else int(np.ndim(e))
    return 1


def _dims(ndim: int, idx: tuple) -> list:
    """The dimension each entry of `idx` starts at (None for None and Ellipsis)."""
    used = sum(_consumed(e) for e in idx)
    out, d = [], 0
    for e in idx:
        if e is Ellipsis:
            out.append(None)
            d += ndim - used
        elif e is None:
            out.append(None)
        else:
            out.append(d)
            d += _consumed(e)
    return out


def _size_stride(s: Slice):
    size, stride = operator.index(s.size), operator.index(s.stride)
    if size < 0 or stride < 1:
        raise IndexError(f"ds: size must be >= 0 and stride >= 1, got {s}")
    return size, stride


def _wrapped_start(start, n: int):
    """The start as int32, a negative one counted from the end once (JAX's unit-stride
    reads)."""
    i = convert_element_type(start, np.int32)
    # still negative after one wrap: the window starts at 0 (dynamic_slice would wrap again)
    return max(select(lt(i, np.int32(0)), add(i, np.int32(n)), i), np.int32(0))


def _strided(x, start, size: int, stride: int, d: int):
    """x's entries start + k * stride (k < size) along d, each clamped into range."""
    n = x.shape[d]
    k = broadcasted_iota(np.int32, (size, 1), 0)
    pos = add(mul(k, np.int32(stride)), start)
    pos = max(min(pos, np.int32(n - 1)), np.int32(0))
    dn = GatherDimensionNumbers(
        offset_dims=tuple(i for i in range(x.ndim) if i != d),
        collapsed_slice_dims=(d,),
        start_index_map=(d,),
    )
    sizes = tuple(1 if i == d else m for i, m in enumerate(x.shape))
    return gather(x, pos, dn, sizes)


def resolve(x, idx):
    """`(x', idx')` with x' sliced along every dimension a `Slice` of `idx` indexes and that
    entry replaced by `:`, so that `x'[idx']` is `x[idx]` (read semantics of JAX)."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    if not any(isinstance(e, Slice) for e in entries):
        return x, idx
    out = list(entries)
    for k, (e, d) in enumerate(zip(entries, _dims(x.ndim, entries))):
        if not isinstance(e, Slice):
            continue
        if d is None or d >= x.ndim:
            raise errors.PurejitTypeError(f"too many indices for an array of rank {x.ndim}")
        size, stride = _size_stride(e)
        if stride == 1:  # a negative start counts from the end; the window is clamped in
            x = dynamic_slice_in_dim(x, _wrapped_start(e.start, x.shape[d]), size, axis=d)
        else:  # each position clamped into range, a negative start not wrapped (as JAX's)
            x = _strided(x, convert_element_type(e.start, np.int32), size, stride, d)
        out[k] = slice(None)
    return x, tuple(out)


def as_update_index(shape: tuple, idx):
    """`idx` for an indexed update, each `Slice` replaced by the integer array of the
    positions it reads; refused when another integer index is present, where NumPy's
    placement of advanced-index dimensions would differ from JAX's slice semantics."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    if not any(isinstance(e, Slice) for e in entries):
        return idx
    others = [e for e in entries if not isinstance(e, (Slice, slice)) and e is not None
              and e is not Ellipsis]  # fmt: skip
    if others:
        raise NotImplementedError(
            "an indexed update (.at[]) mixing ds() with integer or array indices; use "
            "lax.dynamic_update_slice, or index with ds() and slices only"
        )
    out = list(entries)
    for k, (e, d) in enumerate(zip(entries, _dims(len(shape), entries))):
        if isinstance(e, Slice):
            size, stride = _size_stride(e)
            n = shape[d]
            start = convert_element_type(e.start, np.int32)
            pos = add(mul(broadcasted_iota(np.int32, (size,), 0), np.int32(stride)), start)
            # as JAX's scatter: a unit-stride window that does not fit is dropped whole, a
            # strided one element by element; starts are not wrapped
            if stride == 1:
                fits = bitwise_and(ge(start, np.int32(0)), le(start, np.int32(n - size)))
                bad = bitwise_not(broadcast_in_dim(fits, (size,), ()))
            else:
                bad = bitwise_or(lt(pos, np.int32(0)), ge(pos, np.int32(n)))
            out[k] = select(bad, full((size,), np.int32(n)), pos)
    return tuple(out)
