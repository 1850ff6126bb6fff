"""`x.at[idx]`: functional updates with NumPy's indexing rules and JAX's bounds rules.

The index is parsed as for reading (`_indexing._parse`). A static box (static ints and
unit-step slices) is written with `dynamic_update_slice`; anything else (arrays, strided
slices, traced scalars) becomes one `scatter` whose dimension numbers follow the index:
unit-step slices are update windows, the broadcast integer arrays and strided slices are
scatter dims. Out-of-range updates are dropped (mode="clip" clamps them instead).
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax import dslice
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._indexing import (
    _err,
    _index_columns,
    _index_dtype,
    _indexing_getitem,
    _layout,
    _parse,
    _scalar_const,
    _slice_bounds,
    _stack_columns,
)
from purejit.numpy._shape import reshape
from purejit.tracing import ShapedArray, bind1, trace_to_function


class _IndexUpdateHelper:
    """`x.at`: `x.at[idx]` returns a reference with `.get()`, `.set(v)`, `.add(v)`, ..."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """Functional updates of `x[index]`; each method returns a new array (as in JAX)."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        """`x[index]`; mode='fill' returns fill_value where an index is out of range."""
        return _indexing_getitem(self.array, self.index, mode=mode, fill_value=fill_value)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[index] replaced by values (out-of-range updates are dropped)."""
        return _update(self.array, self.index, values, "set", mode, indices_are_sorted,
                       unique_indices)  # fmt: skip

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with values added at index; repeated indices accumulate."""
        return _update(self.array, self.index, values, "add", mode, indices_are_sorted,
                       unique_indices)  # fmt: skip

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with values subtracted at index; repeated indices accumulate."""
        return self.add(c.negative(c._lift(values)), indices_are_sorted=indices_are_sorted,
                        unique_indices=unique_indices, mode=mode)  # fmt: skip

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[index] multiplied by values; repeated indices accumulate."""
        return _update(self.array, self.index, values, "multiply", mode, indices_are_sorted,
                       unique_indices)  # fmt: skip

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[index] divided by values (x must have an inexact dtype)."""
        x = c._lift(self.array)
        if not pdt.is_inexact(x.dtype):
            raise TypeError(f"at[].divide() needs an inexact dtype, got {x.dtype}")
        return self.multiply(arith.reciprocal(c.convert(c._lift(values), x.dtype)),
                             indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=mode)  # fmt: skip

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[index] = minimum(x[index], values)."""
        return _update(self.array, self.index, values, "minimum", mode, indices_are_sorted,
                       unique_indices)  # fmt: skip

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[index] = maximum(x[index], values)."""
        return _update(self.array, self.index, values, "maximum", mode, indices_are_sorted,
                       unique_indices)  # fmt: skip

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[index] = func(x[index]); `func` is a unary elementwise function, applied
        once per occurrence of an index (as in JAX)."""
        if not callable(func):
            raise TypeError(f"at[].apply() needs a function, got {func!r}")
        return _update(self.array, self.index, 0, func, mode, indices_are_sorted,
                       unique_indices)  # fmt: skip

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"


def _target_shape(x, entries) -> tuple[int, ...]:
    """The shape of x[idx], computed without tracing anything."""
    dims = {}
    for e in entries:
        if e.kind == "slice":
            dims[e.dim] = _slice_bounds(e.value, x.shape[e.dim])[2]
    adv = [e for e in entries if e.advanced]
    batch = tuple(np.broadcast_shapes(*[np.shape(e.value) for e in adv])) if adv else ()
    if any(e.kind == "array" for e in entries):
        slots = _layout(entries)
    else:
        slots = [("new",) if e.kind in ("new", "bool") else ("d", e.dim)
                 for e in entries if e.kind in ("new", "bool", "slice")]  # fmt: skip
    shape = []
    for s in slots:
        if s[0] == "B":
            shape.extend(batch)
        else:
            shape.append(1 if s[0] == "new" else dims[s[1]])
    return tuple(shape)


def _combiner_region(kind: str, dt: np.dtype):

    def body(old, new):
        return [_apply(kind, old, new)]

    return trace_to_function(body, [ShapedArray((), dt)] * 2, name="region").fn


def _apply(kind, old, new):
    """The combined value: `new` (set), `kind(old, new)` for an op name, `kind(old)` (apply)."""
    if kind == "set":
        return new
    if callable(kind):
        out = c._lift(kind(old))
        if out.shape != old.shape:
            raise ValueError(f"at[].apply(): the function changed the shape {old.shape} -> "
                             f"{out.shape}; it must be elementwise")  # fmt: skip
        return c.convert(out, old.dtype, weak=old.weak_type)
    return bind1(kind, old, new)


def _update(x, idx, values, kind, mode, indices_are_sorted, unique_indices):
    x = c._lift(x)
    if mode not in (None, "clip", "promise_in_bounds", "fill", "drop"):
        raise ValueError(f"invalid update mode {mode!r}")
    idx = dslice.as_update_index(x.shape, idx)  # jax.ds entries as position arrays
    entries = _parse(x.shape, idx)
    if any(e.kind == "bool" for e in entries) and any(e.kind == "array" for e in entries):
        raise _err("boolean scalar indices combined with integer arrays", NotImplementedError)
    if any(e.kind == "bool" and not e.value for e in entries):
        return x  # x[False] selects nothing
    target = _target_shape(x, entries)
    v = c.convert(c._lift(values), x.dtype)
    try:
        v = c.broadcast_to(v, target)
    except errors.PurejitTypeError:
        what = getattr(kind, "__name__", kind)
        raise _err(
            f"at[].{what}: values of shape {list(v.shape)} cannot broadcast to the indexed "
            f"shape {list(target)}",
            ValueError,
        ) from None
    basic = all(
        e.kind in ("new", "bool", "int")
        or (e.kind == "slice" and _slice_bounds(e.value, x.shape[e.dim])[1] == 1)
        for e in entries
    )
    if basic:
        return _update_box(x, entries, v, kind, mode)
    return _update_scatter(x, entries, v, kind, mode, indices_are_sorted, unique_indices)


def _update_box(x, entries, v, kind, mode):
    """Static ints and unit-step slices: a box, written with dynamic_update_slice."""
    starts, sizes = [0] * x.ndim, list(x.shape)
    for e in entries:
        n = x.shape[e.dim] if e.dim >= 0 else 0
        if e.kind == "int":
            i = e.value + n if e.value < 0 else e.value
            if mode == "clip":
                i = min(max(i, 0), n - 1)
            if not 0 <= i < n:
                return x  # out of range: the update is dropped
            starts[e.dim], sizes[e.dim] = i, 1
        elif e.kind == "slice":
            start, _, count = _slice_bounds(e.value, n)
            if count == 0:
                return x
            starts[e.dim], sizes[e.dim] = start, count
    v = reshape(v, sizes)
    if sizes == list(x.shape):
        return c.convert(_apply(kind, x, v), x.dtype, weak=x.weak_type)
    if kind != "set":
        old = bind1("slice", x, start_indices=tuple(starts),
                    limit_indices=tuple(s + n for s, n in zip(starts, sizes)),
                    strides=(1,) * x.ndim)  # fmt: skip
        v = _apply(kind, old, v)
    idt = _index_dtype(x.shape)
    st = [_scalar_const(s, idt) for s in starts]
    return bind1("dynamic_update_slice", x, v, *st, weak=x.weak_type)


def _update_scatter(x, entries, v, kind, mode, indices_are_sorted, unique_indices):
    """The general case: one scatter whose dimension numbers follow the index entries."""
    idt = _index_dtype(x.shape)
    adv = [e for e in entries if e.advanced]
    for e in adv:
        if x.shape[e.dim] == 0:
            return x
    has_array = any(e.kind == "array" for e in entries)
    if adv:
        cols, bshape = _index_columns(x, adv, idt, clip=mode == "clip")
    else:
        cols, bshape = [], ()
    if has_array:
        slots = _layout(entries)
    else:  # traced scalars only: their block B has rank 0, its place does not matter
        slots = [("new",) if e.kind in ("new", "bool") else ("d", e.dim)
                 for e in entries if not e.advanced] + [("B",)]  # fmt: skip
    # update dims: windows (unit-step slices) and batch dims (strided slices, the B block)
    batch, col_specs, window_pos, inserted = [], [], [], []
    p = 0
    for s in slots:
        if s[0] == "new":
            continue
        if s[0] == "B":
            col_specs.extend(("adv", i, len(batch)) for i in range(len(adv)))
            batch.extend(bshape)
            p += len(bshape)
            continue
        d = s[1]
        e = next(en for en in entries if en.kind == "slice" and en.dim == d)
        start, step, count = _slice_bounds(e.value, x.shape[d])
        if step == 1:
            window_pos.append(p)
            if start:
                col_specs.append(("start", d, start))
        else:
            col_specs.append(("strided", d, len(batch), start + step * np.arange(count)))
            batch.append(count)
            inserted.append(d)
        p += 1
    batch = tuple(batch)
    inserted += [e.dim for e in adv]
    columns, smap = [], []
    for spec in col_specs:
        if spec[0] == "adv":
            col = cols[spec[1]]
            at = tuple(range(spec[2], spec[2] + len(bshape)))
            smap.append(adv[spec[1]].dim)
        elif spec[0] == "strided":
            col, at = spec[3].astype(idt), (spec[2],)
            smap.append(spec[1])
        else:
            col, at = np.array(spec[2], idt), ()
            smap.append(spec[1])
        columns.append(_place(col, at, batch, bshape if spec[0] == "adv" else None))
    indices = _stack_columns(columns, batch, idt)
    updates = reshape(v, _drop_new(v, slots, bshape))
    region = _combiner_region(kind, x.dtype)
    return bind1(
        "scatter", x, indices, updates, regions=[region],
        update_window_dims=tuple(window_pos), inserted_window_dims=tuple(sorted(inserted)),
        scatter_dims_to_operand_dims=tuple(smap), index_vector_dim=len(batch),
        indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
        weak=x.weak_type,
    )  # fmt: skip


def _place(col, at, batch, bshape):
    """Put an index column (of shape bshape, or 1-D, or scalar) at dims `at` of `batch`."""
    if isinstance(col, np.ndarray):
        col = np.broadcast_to(col, bshape) if bshape is not None else col
        shape = [1] * len(batch)
        for a, n in zip(at, col.shape):
            shape[a] = n
        return np.broadcast_to(col.reshape(shape), batch)
    col = c.broadcast_to(col, bshape)
    return bind1("broadcast_in_dim", col, shape=batch, broadcast_dimensions=at)


def _drop_new(v, slots, bshape):
    """The update shape: the target shape without the new axes."""
    shape, k = [], 0
    for s in slots:
        if s[0] == "B":
            shape.extend(v.shape[k : k + len(bshape)])
            k += len(bshape)
        else:
            if s[0] != "new":
                shape.append(v.shape[k])
            k += 1
    return shape
