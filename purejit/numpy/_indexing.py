"""Indexing: `x[idx]` and `x.at[idx].set/add/...`, with NumPy's rules and JAX's bounds rules.

An index is first parsed into one entry per position (`_parse`): a new axis, a slice, a static
int, a traced scalar, or an integer array (boolean masks that are known while tracing become
integer arrays; traced masks have a data-dependent shape and are refused). Reading then uses,
from cheapest to most general: `slice`/`reverse`/`reshape` for static basic indexing,
`dynamic_slice` for traced scalar indices, and one `gather` for integer arrays (advanced
indexing, after the static slices were applied). Writing uses `dynamic_update_slice` for a
static box and one `scatter` otherwise.

Bounds: negative indices count from the end. An index known while tracing (a Python int or a
NumPy array) that is out of range raises `IndexError` when reading, as NumPy does (JAX clamps
it silently); `x.at[idx].get(mode="clip")` asks for JAX's clamping. Traced indices, as in
JAX, are clamped when reading, and the update is dropped when writing (mode="clip" clamps
writes instead; get(mode="fill") returns `fill_value` for out-of-range reads). The writing
side lives in `_index_update.py`.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax import dslice
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._shape import _axis, concatenate, reshape
from purejit.runtime.array import Array
from purejit.tracing import ConcreteArray, Tracer, bind1


@dataclass
class _Entry:
    kind: str  # new | slice | int | scalar | array | mask | bool | ellipsis
    value: object = None
    dim: int = -1  # the operand dim this entry indexes (slice, int, scalar, array)
    pos: int = -1  # position in the expanded index (for NumPy's placement rule)

    @property
    def consumes(self) -> int:
        if self.kind in ("slice", "int", "scalar", "array"):
            return 1
        return np.ndim(self.value) if self.kind == "mask" else 0

    @property
    def advanced(self) -> bool:
        return self.kind in ("int", "scalar", "array")


def _err(msg: str, cls=IndexError):
    return cls(f"{msg}{errors.at(errors.user_location())}")


def _static_int(v, what: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, Tracer):
        raise _err(
            f"{what} must be a static integer, got a traced value {v.aval}; use "
            "purejit.lax.dynamic_slice for slices that start at a traced position"
        )
    return operator.index(v)


def _classify(e) -> _Entry:
    if e is None:
        return _Entry("new")
    if e is Ellipsis:
        return _Entry("ellipsis")
    if isinstance(e, slice):
        parts = (_static_int(getattr(e, k), f"slice {k}") for k in ("start", "stop", "step"))
        return _Entry("slice", slice(*parts))
    if isinstance(e, (bool, np.bool_)):
        return _Entry("bool", bool(e))
    if isinstance(e, (int, np.integer)):
        return _Entry("int", int(e))
    if isinstance(e, (list, tuple)):
        arr = np.asarray(e)
        e = arr.astype(np.int32) if arr.size == 0 and arr.dtype.kind == "f" else arr
    if isinstance(e, np.ndarray):
        if e.dtype == np.bool_:
            return _Entry("bool", bool(e)) if e.ndim == 0 else _Entry("mask", e)
        if e.dtype.kind not in "iu":
            raise _err(f"indexer must have an integer or boolean type, got {e.dtype}", TypeError)
        return _Entry("int", int(e)) if e.ndim == 0 else _Entry("array", e)
    if isinstance(e, (ConcreteArray, Tracer)):
        if e.dtype == np.bool_:
            if isinstance(e, Tracer):
                raise _err(
                    f"boolean mask indexing with a traced mask {e.aval} has a data-dependent "
                    "shape, which purejit.jit cannot compile; use purejit.numpy.where(mask, "
                    "x, fill) instead",
                    errors.NonConcreteBooleanIndexError,
                )
            return _classify(e.host)
        if e.dtype.kind not in "iu":
            raise _err(f"indexer must have an integer or boolean type, got {e.dtype}", TypeError)
        return _Entry("scalar" if e.ndim == 0 else "array", e)
    raise _err(f"invalid index {e!r} of type {type(e).__name__}", TypeError)


def _parse(shape: tuple[int, ...], idx) -> list[_Entry]:
    """One entry per position of the (Ellipsis-expanded) index, each knowing its dim."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    items = [_classify(e) for e in idx]
    if sum(it.kind == "ellipsis" for it in items) > 1:
        raise _err("an index can only have a single ellipsis ('...')")
    used = sum(it.consumes for it in items)
    if used > len(shape):
        raise _err(
            f"too many indices for array: array is {len(shape)}-dimensional, but {used} "
            "were indexed"
        )
    fill = [_Entry("slice", slice(None)) for _ in range(len(shape) - used)]
    if any(it.kind == "ellipsis" for it in items):
        k = next(i for i, it in enumerate(items) if it.kind == "ellipsis")
        items = items[:k] + fill + items[k + 1 :]
    else:
        items = items + fill
    out, d = [], 0
    for it in items:
        if it.kind == "mask":
            m = it.value
            # as JAX: a mask dim of size 0 matches any dim (it selects nothing)
            if not all(s in (0, n) for s, n in zip(m.shape, shape[d : d + m.ndim])):
                raise _err(f"boolean index of shape {list(m.shape)} does not match the "
                           f"indexed dims {list(shape[d:d + m.ndim])}")  # fmt: skip
            for nz in np.nonzero(m):
                out.append(_Entry("array", nz.astype(_index_dtype(shape)), d))
                d += 1
            continue
        if it.consumes:
            it.dim = d
            d += 1
        out.append(it)
    for p, it in enumerate(out):
        it.pos = p
    return out


def _index_dtype(shape) -> np.dtype:
    return np.dtype(np.int64) if max(shape, default=0) >= 2**31 - 1 else np.dtype(np.int32)


def _slice_bounds(s: slice, n: int) -> tuple[int, int, int]:
    """(start, step, count) of a static slice over a dim of size n."""
    if s.step == 0:
        raise _err("slice step cannot be zero", ValueError)
    start, stop, step = s.indices(n)
    return start, step, len(range(start, stop, step))


def _static_slices(x, entries):
    """Apply every slice entry with `slice` and `reverse`; later they select whole dims."""
    starts, limits, strides, rev = [0] * x.ndim, list(x.shape), [1] * x.ndim, []
    for e in entries:
        if e.kind != "slice":
            continue
        start, step, count = _slice_bounds(e.value, x.shape[e.dim])
        if count == 0:
            starts[e.dim] = limits[e.dim] = 0
            continue
        lo = start if step > 0 else start + (count - 1) * step
        starts[e.dim], limits[e.dim] = lo, lo + (count - 1) * abs(step) + 1
        strides[e.dim] = abs(step) if count > 1 else 1
        if step < 0 and count > 1:
            rev.append(e.dim)
    if starts != [0] * x.ndim or limits != list(x.shape) or strides != [1] * x.ndim:
        x = bind1("slice", x, start_indices=tuple(starts), limit_indices=tuple(limits),
                  strides=tuple(strides))  # fmt: skip
    if rev:
        x = bind1("reverse", x, dimensions=tuple(rev))
    return x


def _wrap_static(i, n: int):
    return np.where(i < 0, i + n, i)


def _wrap_dynamic(i, n: int, idt):
    i = c.convert(i, idt)
    if idt.kind == "u":
        return i
    return c.where(c.less(i, 0), c.add(i, np.array(n, idt)), i)


def _scalar_const(v, dt) -> Array:
    return Array(host=np.array(v, dtype=dt))


# ---- reading --------------------------------------------------------------------------------


def _indexing_getitem(x, idx, *, mode=None, fill_value=None):
    """`x[idx]` with NumPy's indexing rules and JAX's bounds rules (see the module doc)."""
    x = c._lift(x)
    x, idx = dslice.resolve(x, idx)  # jax.ds entries: dynamic slices first
    entries = _parse(x.shape, idx)
    if mode not in (None, "clip", "promise_in_bounds", "fill", "drop"):
        raise ValueError(f"invalid indexing mode {mode!r}")
    if mode is None:
        _check_static_bounds(x.shape, entries)
    bools = [e for e in entries if e.kind == "bool"]
    advanced = any(e.kind == "array" for e in entries) or mode in ("fill", "drop")
    if bools and advanced:
        raise _err("boolean scalar indices combined with integer arrays", NotImplementedError)
    x = _static_slices(x, entries)
    if advanced:
        out = _gather(x, entries, mode, fill_value)
    else:
        out = _basic(x, entries)
    if any(e.kind == "bool" and not e.value for e in entries):  # x[False] selects nothing
        out = _empty_new_axes(out, entries)
    return out


def _check_static_bounds(shape, entries):
    """NumPy's IndexError for an index known while tracing that is out of range."""
    for e in entries:
        if e.kind == "int":
            bad = e.value
        elif e.kind == "array" and isinstance(e.value, np.ndarray) and e.value.size:
            lo, hi = int(e.value.min()), int(e.value.max())
            bad = hi if hi >= shape[e.dim] else lo
        else:
            continue
        n = shape[e.dim]
        if not -n <= bad < n:
            raise _err(
                f"index {bad} is out of bounds for axis {e.dim} with size {n}; valid indices "
                f"are {-n} to {n - 1} (jax.numpy would clamp it silently; for that, write "
                "x.at[idx].get(mode='clip'))"
            )


def _basic(x, entries):
    """Static ints (and traced scalars via dynamic_slice) after the slices were applied."""
    scalars = [e for e in entries if e.kind == "scalar"]
    starts, sizes = [0] * x.ndim, list(x.shape)
    # eagerly, static ints become dynamic_slice starts (operands, not attributes), so that
    # x[0], x[1], ... share one compiled program instead of compiling one slice per index
    # (JAX does the same); under jit they stay a static slice
    eager_ints, fixed = type(x) is Array, {}
    for e in entries:
        if e.kind in ("int", "scalar") and x.shape[e.dim] == 0:
            raise _err(f"index is out of bounds for axis {e.dim} with size 0")
        if e.kind == "int":
            i = e.value + x.shape[e.dim] if e.value < 0 else e.value
            i = min(max(i, 0), x.shape[e.dim] - 1)
            if eager_ints:
                fixed[e.dim] = i
            else:
                starts[e.dim], sizes[e.dim] = i, 1
    if starts != [0] * x.ndim or sizes != list(x.shape):
        x = bind1("slice", x, start_indices=tuple(starts),
                  limit_indices=tuple(s + n for s, n in zip(starts, sizes)),
                  strides=(1,) * x.ndim)  # fmt: skip
    if scalars or fixed:
        idt = _index_dtype(x.shape)
        dyn = [_scalar_const(0, idt)] * x.ndim
        sizes = list(x.shape)
        for e in scalars:
            dyn[e.dim] = _wrap_dynamic(e.value, x.shape[e.dim], idt)
            sizes[e.dim] = 1
        for d, i in fixed.items():
            dyn[d], sizes[d] = _scalar_const(i, idt), 1
        x = bind1("dynamic_slice", x, *dyn, slice_sizes=tuple(sizes), weak=x.weak_type)
    shape = []
    for e in entries:
        if e.kind in ("new", "bool"):
            shape.append(1)
        elif e.kind == "slice":
            shape.append(x.shape[e.dim])
    return reshape(x, shape)


def _index_columns(x, adv, idt, clip: bool):
    """The advanced indices, wrapped (and clamped if `clip`), broadcast to one shape B."""
    cols = []
    for e in adv:
        n = x.shape[e.dim]
        v = e.value
        if isinstance(v, (int, np.ndarray)):
            v = _wrap_static(np.asarray(v, dtype=np.int64), n)
            cols.append(np.clip(v, 0, max(n - 1, 0)).astype(idt) if clip else v.astype(idt))
        else:
            v = _wrap_dynamic(v, n, idt)
            cols.append(arith.clip(v, 0, np.array(max(n - 1, 0), idt)) if clip else v)
    shapes = [np.shape(v) for v in cols]
    try:
        batch = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise _err(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes "
            f"{' '.join(str(list(s)) for s in shapes)}"
        ) from None
    return cols, batch


def _stack_columns(cols, batch, idt):
    """An index array of shape batch + (len(cols),): on the host when all are static."""
    if all(isinstance(v, np.ndarray) for v in cols):
        return Array(host=np.stack([np.broadcast_to(v, batch) for v in cols], -1).astype(idt))

    parts = [reshape(c.broadcast_to(v, batch), batch + (1,)) for v in cols]
    return parts[0] if len(parts) == 1 else concatenate(parts, axis=-1)


def _layout(entries):
    """Result slots in order: ('B',) for the broadcast index block, ('d', dim), ('new',)."""
    adv_pos = [e.pos for e in entries if e.advanced]
    contiguous = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
    slots = [] if contiguous else [("B",)]
    for e in entries:
        if e.kind in ("new", "bool"):
            slots.append(("new",))
        elif e.kind == "slice":
            slots.append(("d", e.dim))
        elif contiguous and e.pos == adv_pos[0]:
            slots.append(("B",))
    return slots


def _gather(x, entries, mode, fill_value):
    adv = [e for e in entries if e.advanced]
    if not adv:
        return _basic(x, entries)
    try:
        batch_shape = tuple(np.broadcast_shapes(*[np.shape(e.value) for e in adv]))
    except ValueError:  # reported with the index's names by _index_columns below
        batch_shape = ()
    if 0 in batch_shape:  # no index at all: an empty result, whatever the axis sizes
        shape = []
        for s in _layout(entries):
            if s[0] == "B":
                shape.extend(batch_shape)
            else:
                shape.append(1 if s[0] == "new" else x.shape[s[1]])
        return c.broadcast_to(c.convert(0, x.dtype, weak=x.weak_type), shape)
    for e in adv:
        if x.shape[e.dim] == 0:
            raise _err(f"index is out of bounds for axis {e.dim} with size 0")
    idt = _index_dtype(x.shape)
    cols, batch = _index_columns(x, adv, idt, clip=False)
    indices = _stack_columns(cols, batch, idt)
    slots = _layout(entries)
    gathered_slots = [s for s in slots if s[0] != "new"]
    offset_dims, p = [], 0
    for s in gathered_slots:
        if s[0] == "B":
            p += len(batch)
        else:
            offset_dims.append(p)
            p += 1
    adv_dims = tuple(e.dim for e in adv)
    sizes = tuple(1 if d in adv_dims else n for d, n in enumerate(x.shape))
    out = bind1(
        "gather", x, indices,
        offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(sorted(adv_dims)),
        start_index_map=adv_dims, index_vector_dim=len(batch), slice_sizes=sizes,
        indices_are_sorted=False, weak=x.weak_type,
    )  # fmt: skip
    if mode in ("fill", "drop"):
        out = _fill_invalid(out, x, adv, cols, batch, gathered_slots, fill_value)
    shape = []
    for s in slots:
        if s[0] == "B":
            shape.extend(batch)
        else:
            shape.append(1 if s[0] == "new" else x.shape[s[1]])
    return reshape(out, shape)


def _fill_invalid(out, x, adv, cols, batch, gathered_slots, fill_value):
    """Replace elements read from out-of-range indices by `fill_value` (mode='fill')."""
    ok = None
    for e, v in zip(adv, cols):
        n = x.shape[e.dim]
        if isinstance(v, np.ndarray):
            good = Array(host=np.broadcast_to((v >= 0) & (v < n), batch).copy())
        else:
            good = c.broadcast_to(c.logical_and(c.greater_equal(v, 0), c.less(v, n)), batch)
        ok = good if ok is None else c.logical_and(ok, good)
    pos, p = [], 0
    for s in gathered_slots:
        if s[0] == "B":
            pos = list(range(p, p + len(batch)))
            p += len(batch)
        else:
            p += 1
    ok = bind1("broadcast_in_dim", ok, shape=out.shape, broadcast_dimensions=tuple(pos))
    if fill_value is None:
        fill_value = _default_fill(out.dtype)
    return c.where(ok, out, c.convert(np.array(fill_value), out.dtype))


def _default_fill(dt: np.dtype):
    if pdt.is_inexact(dt):
        return np.nan
    if dt == np.bool_:
        return True
    info = np.iinfo(dt)
    return info.min if dt.kind == "i" else info.max


def _empty_new_axes(out, entries):
    """x[False]: the new axis of each False has size 0."""
    limits = list(out.shape)
    k = 0
    for e in entries:
        if e.kind in ("new", "bool"):
            if e.kind == "bool" and not e.value:
                limits[k] = 0
            k += 1
        elif e.kind == "slice":
            k += 1
    return bind1("slice", out, start_indices=(0,) * out.ndim, limit_indices=tuple(limits),
                 strides=(1,) * out.ndim)  # fmt: skip


def take(a, indices, axis=None, mode=None, fill_value=None):
    """Elements of `a` at `indices` along `axis` (flattened `a` when axis is None).

    As in JAX, the default mode is "fill": out-of-range indices give NaN (or the most
    negative integer), negative ones count from the end; mode="clip" clamps every index to
    [0, size - 1] (a negative one to 0, never from the end: NumPy's and JAX's `take`) and
    mode="wrap" takes them modulo the axis size.
    """
    mode = "fill" if mode is None else mode
    x = c._lift(a)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = _axis(axis, x.ndim, "take")  # out of range raises, as JAX (never wraps)
    indices = _as_index_array(indices)
    if mode == "wrap":  # Python's modulo: always in [0, size)
        indices, mode = arith.remainder(indices, max(x.shape[axis], 1)), "promise_in_bounds"
    elif mode == "clip" and np.size(indices):  # before indexing would count -k from the end
        indices = arith.clip(indices, 0, max(x.shape[axis] - 1, 0))
    idx = (slice(None),) * axis + (indices,)
    return _indexing_getitem(x, idx, mode=mode, fill_value=fill_value)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None):
    """`arr` indexed by `indices` along `axis`, other dims matched position by position.

    The default mode is "fill", as for `take`.
    """
    mode = "fill" if mode is None else mode
    x = c._lift(arr)
    ind = _as_index_array(indices)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = _axis(axis, x.ndim, "take_along_axis")
    if np.ndim(ind) != x.ndim:
        raise _err(f"take_along_axis: indices of rank {np.ndim(ind)} for an array of rank "
                   f"{x.ndim}", ValueError)  # fmt: skip
    shape = tuple(np.broadcast_shapes(
        tuple(1 if i == axis else n for i, n in enumerate(x.shape)),
        tuple(1 if i == axis else n for i, n in enumerate(np.shape(ind)))))  # fmt: skip
    idx = []
    for d in range(x.ndim):
        if d == axis:
            idx.append(ind)
        else:
            r = np.arange(x.shape[d]).reshape([-1 if k == d else 1 for k in range(x.ndim)])
            idx.append(r if x.shape[d] == shape[d] else np.zeros_like(r[:1]))
    return _indexing_getitem(x, tuple(idx), mode=mode, fill_value=fill_value)


def _as_index_array(i):
    if isinstance(i, (ConcreteArray, Tracer, np.ndarray)):
        return i
    return np.asarray(i)
