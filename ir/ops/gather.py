"""gather and scatter, with StableHLO's dimension numbers and XLA's out-of-bounds rules.

gather(operand, start_indices) {offset_dims, collapsed_slice_dims, start_index_map,
                                index_vector_dim, slice_sizes, indices_are_sorted}
    For every batch position G of `start_indices` (all its dims except `index_vector_dim`),
    the vector S = start_indices[G, :] gives the start of one slice of `operand`:
    start[start_index_map[k]] = S[k] (other dims start at 0), clamped so the slice of
    `slice_sizes` fits inside the operand. The slice, with `collapsed_slice_dims` (size 1)
    dropped, lands at result dims `offset_dims`; the batch dims of G fill the other result
    dims in order.

scatter(operands..., scatter_indices, updates...) {update_window_dims, inserted_window_dims,
        scatter_dims_to_operand_dims, index_vector_dim, indices_are_sorted, unique_indices}
        region(old..., new...) -> combined...
    The inverse placement: update dims `update_window_dims` form a window (the operand's dims
    minus `inserted_window_dims`, which have size 1); the other update dims index
    `scatter_indices`. A window whose start lies outside [0, dim - window] in any dim is
    skipped entirely (XLA drops it); the others combine each element with the region.
    When several updates hit one element the order of application is unspecified (as in XLA).
"""

from __future__ import annotations

import numpy as np
from purejit.ir import dtypes
from purejit.ir.core import TensorType
from purejit.ir.ops._util import check_rank_attr, compute_dtype
from purejit.ir.ops.reduce import reduction_kind
from purejit.ir.registry import OpDef, fail, register


def _sorted_unique(op: str, name: str, dims, rank: int) -> tuple[int, ...]:
    dims = check_rank_attr(op, name, dims, rank)
    if list(dims) != sorted(dims):
        fail(op, f"{name}={list(dims)} must be sorted")
    return dims


def _index_shape(op: str, idx: TensorType, ivd: int) -> tuple[tuple[int, ...], int]:
    """Batch shape of the indices and the length of their index vectors."""
    if not dtypes.is_integer(idx.dtype):
        fail(op, f"indices must have an integer element type, got {idx}")
    if not 0 <= ivd <= idx.rank:
        fail(op, f"index_vector_dim={ivd} out of range for indices {idx}")
    if ivd == idx.rank:
        return idx.shape, 1
    return idx.shape[:ivd] + idx.shape[ivd + 1 :], idx.shape[ivd]


def _index_vectors(idx: np.ndarray, ivd: int) -> np.ndarray:
    """Indices as an array of shape batch + (vector length,)."""
    if ivd == idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, ivd, -1)


# gather -------------------------------------------------------------------------------------

GATHER_ATTRS = (
    "offset_dims",
    "collapsed_slice_dims",
    "start_index_map",
    "index_vector_dim",
    "slice_sizes",
    "indices_are_sorted",
)


def _gather_infer(types, attrs, regions):
    if len(types) != 2:
        fail("gather", f"expects an operand and start indices, got {len(types)} operands")
    t, idx = types
    batch, nvec = _index_shape("gather", idx, attrs["index_vector_dim"])
    sizes = tuple(attrs["slice_sizes"])
    if len(sizes) != t.rank or any(not 0 <= n <= d for n, d in zip(sizes, t.shape)):
        fail("gather", f"slice_sizes={list(sizes)} do not fit in {t}")
    collapsed = _sorted_unique(
        "gather", "collapsed_slice_dims", attrs["collapsed_slice_dims"], t.rank
    )
    for d in collapsed:
        if sizes[d] != 1:
            fail("gather", f"collapsed dim {d} must have slice size 1, got {sizes[d]}")
    smap = check_rank_attr("gather", "start_index_map", attrs["start_index_map"], t.rank)
    if len(smap) != nvec:
        fail("gather", f"start_index_map={list(smap)} needs {nvec} entries for indices {idx}")
    offset_sizes = [n for d, n in enumerate(sizes) if d not in collapsed]
    rank = len(batch) + len(offset_sizes)
    offset = _sorted_unique("gather", "offset_dims", attrs["offset_dims"], rank)
    if len(offset) != len(offset_sizes):
        fail("gather", f"offset_dims={list(offset)} needs {len(offset_sizes)} entries")
    shape, b, o = [], iter(batch), iter(offset_sizes)
    for i in range(rank):
        shape.append(next(o) if i in offset else next(b))
    return [TensorType(tuple(shape), t.dtype)]


def _gather_ref(args, attrs, regions, run):
    x, idx = args
    sizes = tuple(attrs["slice_sizes"])
    smap = tuple(attrs["start_index_map"])
    collapsed = tuple(attrs["collapsed_slice_dims"])
    offset = tuple(attrs["offset_dims"])
    vec = _index_vectors(idx.astype(np.int64), attrs["index_vector_dim"])
    batch = vec.shape[:-1]
    # full start of every slice, clamped so the slice fits: shape batch + (rank,)
    start = np.zeros(batch + (x.ndim,), np.int64)
    for k, d in enumerate(smap):
        start[..., d] = np.clip(vec[..., k], 0, x.shape[d] - sizes[d])
    nb = len(batch)
    index = []
    for d in range(x.ndim):
        pos = start[..., d].reshape(batch + (1,) * x.ndim)
        step = np.arange(sizes[d]).reshape((1,) * (nb + d) + (-1,) + (1,) * (x.ndim - d - 1))
        index.append(pos + step)
    out = x[tuple(index)] if x.ndim else np.broadcast_to(x, batch)
    # drop collapsed dims, then move the slice dims to `offset_dims`
    out = out.reshape(batch + tuple(n for d, n in enumerate(sizes) if d not in collapsed))
    rank = out.ndim
    batch_src, perm = iter(range(nb)), []
    for i in range(rank):
        perm.append(nb + offset.index(i) if i in offset else next(batch_src))
    return [np.ascontiguousarray(np.transpose(out, perm))]


register(
    OpDef(
        "gather",
        _gather_infer,
        _gather_ref,
        frozenset({"pure"}),
        attrs=GATHER_ATTRS,
        doc="gather(operand, start_indices): slices at clamped starts (StableHLO gather)",
    )
)

# scatter ------------------------------------------------------------------------------------

SCATTER_ATTRS = (
    "update_window_dims",
    "inserted_window_dims",
    "scatter_dims_to_operand_dims",
    "index_vector_dim",
    "indices_are_sorted",
    "unique_indices",
)


def _scatter_infer(types, attrs, regions):
    if len(types) < 3 or len(types) % 2 == 0:
        fail("scatter", f"expects operands, indices and updates, got {len(types)} operands")
    n = (len(types) - 1) // 2
    inputs, idx, updates = types[:n], types[n], types[n + 1 :]
    t = inputs[0]
    for x in inputs[1:]:
        if x.shape != t.shape:
            fail("scatter", f"operands differ in shape: {t} vs {x}")
    batch, nvec = _index_shape("scatter", idx, attrs["index_vector_dim"])
    u = updates[0]
    for x, up in zip(inputs, updates):
        if up.shape != u.shape or up.dtype != x.dtype:
            fail("scatter", f"update {up} does not match operand {x}")
    window = _sorted_unique("scatter", "update_window_dims", attrs["update_window_dims"], u.rank)
    inserted = _sorted_unique(
        "scatter", "inserted_window_dims", attrs["inserted_window_dims"], t.rank
    )
    smap = check_rank_attr(
        "scatter", "scatter_dims_to_operand_dims", attrs["scatter_dims_to_operand_dims"], t.rank
    )
    if len(smap) != nvec:
        fail("scatter", f"scatter_dims_to_operand_dims={list(smap)} needs {nvec} entries")
    if len(window) + len(inserted) != t.rank:
        fail("scatter", f"{len(window)} window dims + {len(inserted)} inserted dims != rank of {t}")
    scatter_shape = tuple(d for i, d in enumerate(u.shape) if i not in window)
    if scatter_shape != batch:
        fail("scatter", f"update scatter dims {list(scatter_shape)} != index batch {list(batch)}")
    wdims = [d for d in range(t.rank) if d not in inserted]
    for w, d in zip(window, wdims):
        if u.shape[w] > t.shape[d]:
            fail("scatter", f"update window dim {w} of {u} is larger than dim {d} of {t}")
    if len(regions) != 1:
        fail("scatter", "needs exactly one region")
    expect = [TensorType((), x.dtype) for x in inputs] * 2
    body = regions[0]
    if body.param_types != expect or body.result_types != expect[:n]:
        fail("scatter", f"region must be {expect} -> {expect[:n]}, got {body.param_types}")
    return list(inputs)


_SCATTER_UFUNCS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
                   "minimum": np.minimum}  # fmt: skip


def _combiner(body):
    """'set' if the region returns the new value, a ufunc name if it is `op(old, new)`."""
    if len(body.params) != 2:
        return None
    if not body.ops and body.results == [body.params[1]]:
        return "set"

    kind = reduction_kind(body)
    return kind if kind in _SCATTER_UFUNCS else None


def _scatter_positions(shape, idx, u_shape, attrs):
    """For every update element: its operand position and whether its window is in bounds.

    Returns (positions: int64[len(updates)..., rank], valid: bool[...]) in update order.
    """
    window = tuple(attrs["update_window_dims"])
    inserted = tuple(attrs["inserted_window_dims"])
    smap = tuple(attrs["scatter_dims_to_operand_dims"])
    rank = len(shape)
    vec = _index_vectors(idx.astype(np.int64), attrs["index_vector_dim"])
    scatter_dims = [i for i in range(len(u_shape)) if i not in window]
    wdims = [d for d in range(rank) if d not in inserted]
    wsize = [1] * rank
    for w, d in zip(window, wdims):
        wsize[d] = u_shape[w]
    grid = np.indices(u_shape, dtype=np.int64) if u_shape else np.zeros((0,), np.int64)
    g = tuple(grid[i] for i in scatter_dims)  # index into vec for each update element
    v = vec[g] if scatter_dims else np.broadcast_to(vec, u_shape + vec.shape[-1:])
    pos = np.zeros(u_shape + (rank,), np.int64)
    valid = np.ones(u_shape, bool)
    for k, d in enumerate(smap):
        s = v[..., k]
        valid &= (s >= 0) & (s <= shape[d] - wsize[d])
        pos[..., d] = s
    for w, d in zip(window, wdims):
        pos[..., d] += grid[w]
    return pos, valid


def _scatter_ref(args, attrs, regions, run):
    n = (len(args) - 1) // 2
    inputs, idx, updates = args[:n], args[n], args[n + 1 :]
    shape = inputs[0].shape
    pos, valid = _scatter_positions(shape, idx, updates[0].shape, attrs)
    at = tuple(pos[..., d][valid] for d in range(len(shape)))
    kind = _combiner(regions[0]) if n == 1 else None
    if kind == "set":
        out = inputs[0].copy()
        out[at] = updates[0][valid]
        return [out]
    if kind is not None:
        x = inputs[0]
        cdt = compute_dtype(x.dtype)
        out = x.astype(cdt)
        _SCATTER_UFUNCS[kind].at(out, at, updates[0][valid].astype(cdt))
        return [out.astype(x.dtype)]
    # general region: apply update by update, in order
    outs = [x.copy() for x in inputs]
    news = [u[valid] for u in updates]
    for j in range(news[0].size if news else 0):
        p = tuple(int(a[j]) for a in at)
        res = run(regions[0], *[o[p] for o in outs], *[u[j] for u in news])
        for o, r in zip(outs, res):
            o[p] = r
    return outs


register(
    OpDef(
        "scatter",
        _scatter_infer,
        _scatter_ref,
        frozenset({"pure", "accumulates"}),
        attrs=SCATTER_ATTRS,
        num_regions=1,
        doc="scatter(operands..., indices, updates...) region(old..., new...): StableHLO scatter",
    )
)
