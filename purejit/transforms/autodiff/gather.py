"""JVP and transpose rules of `gather` and `scatter` (`ir/ops/gather.py`), and the
take-along-axis gather that sort, top_k and reduce_window's max use for their tangents.

gather is linear in its operand; its transpose is a scatter-add at the same (clamped)
starts. scatter's derivative depends on its region: an add is linear in operand and
updates; an overwrite sends each position the tangent of the update that won (JAX's
trick of scattering update ids, so repeated indices are right); multiply, max and min
follow JAX's rules (max/min average over ties).
"""

from __future__ import annotations

import functools

import numpy as np

from purejit.ir.ops.reduce import reduction_kind
from purejit.tracing import ShapedArray, trace_to_function
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    add,
    aval,
    bcast,
    convert,
    defjvp,
    deftranspose,
    div,
    full,
    instantiate,
    is_linear,
    linear_jvp,
    monoid_region,
    mul,
    op,
    ops,
    reshape,
    select,
    zeros,
)

linear_jvp("gather", lambda i, n: i == 0)


def _bound_array(idx, ivd, values):
    """An array of idx's shape holding values[k] at index-vector position k."""
    a = aval(idx)
    v = np.asarray(values, a.dtype)
    if ivd == a.ndim:
        return full(a.shape, v[0], a.dtype)
    return bcast(v, a.shape, (ivd,))


def _clamp_indices(idx, ivd, smap, operand_shape, sizes):
    """Gather's start indices clamped as gather clamps them (so a scatter lands there)."""
    hi = [operand_shape[d] - sizes[d] for d in smap]
    lo = _bound_array(idx, ivd, [0] * len(smap))
    return op("clamp", lo, idx, _bound_array(idx, ivd, hi))


def _in_bounds(idx, ivd, smap, operand_shape, wsize):
    """bool[batch]: whether each index vector's window fits (scatter drops the others)."""
    a = aval(idx)
    hi = _bound_array(idx, ivd, [operand_shape[d] - wsize[d] for d in smap])
    ok = op(
        "and",
        op("compare", idx, zeros(a), comparison_direction="GE"),
        op("compare", idx, hi, comparison_direction="LE"),
    )
    if ivd == a.ndim:
        return ok
    region = monoid_region("and", np.dtype(np.bool_))
    return op("reduce", ok, np.array(True), dimensions=(ivd,), regions=[region])


@deftranspose("gather")
def _gather_t(cts, operands, attrs, regions):
    (ct,), (x, idx) = cts, operands
    if isinstance(ct, Zero):
        return [Zero(aval(x)), None]
    shape = aval(x).shape
    smap, sizes = attrs["start_index_map"], attrs["slice_sizes"]
    ivd = attrs["index_vector_dim"]
    idx = _clamp_indices(idx, ivd, smap, shape, sizes)
    dt = aval(ct).dtype
    out = op(
        "scatter",
        zeros(aval(x)),
        idx,
        ct,
        update_window_dims=tuple(attrs["offset_dims"]),
        inserted_window_dims=tuple(attrs["collapsed_slice_dims"]),
        scatter_dims_to_operand_dims=tuple(smap),
        index_vector_dim=ivd,
        indices_are_sorted=bool(attrs.get("indices_are_sorted", False)),
        unique_indices=False,
        regions=[monoid_region("add", dt)],
    )
    return [out, None]


# ---- scatter -----------------------------------------------------------------------------------


def combiner(body) -> str | None:
    """'set' if the region returns the new value, else the binary op it applies, or None."""
    if len(body.params) == 2 and not body.ops and body.results == [body.params[1]]:
        return "set"
    return reduction_kind(body)


@functools.lru_cache(maxsize=64)  # one per dtype
def _set_region(dt):
    s = ShapedArray((), np.dtype(dt))
    return trace_to_function(lambda a, b: [b], [s, s], name="set").fn


def _scatter(kind, x, idx, u, attrs):
    dt = aval(x).dtype
    region = _set_region(dt) if kind == "set" else monoid_region(kind, dt)
    return op("scatter", x, idx, u, regions=[region], **attrs)


def _window_sizes(attrs, x_shape, u_shape):
    """The update window's size in every operand dimension (1 in the inserted ones)."""
    inserted = attrs["inserted_window_dims"]
    wdims = [d for d in range(len(x_shape)) if d not in inserted]
    wsize = [1] * len(x_shape)
    for w, d in zip(attrs["update_window_dims"], wdims):
        wsize[d] = u_shape[w]
    return wsize


def _gather_updates(v, idx, attrs, u_aval):
    """The operand-shaped `v` read at every update position (a gather with the scatter's
    dimension numbers); positions whose window is out of bounds read anything."""
    wsize = _window_sizes(attrs, aval(v).shape, u_aval.shape)
    return op(
        "gather",
        v,
        idx,
        offset_dims=tuple(attrs["update_window_dims"]),
        collapsed_slice_dims=tuple(attrs["inserted_window_dims"]),
        start_index_map=tuple(attrs["scatter_dims_to_operand_dims"]),
        index_vector_dim=attrs["index_vector_dim"],
        slice_sizes=tuple(wsize),
        indices_are_sorted=bool(attrs.get("indices_are_sorted", False)),
    )


def _update_mask(idx, attrs, x_shape, u_aval):
    """bool of the updates' shape: the update's window is in bounds (not dropped)."""
    wsize = _window_sizes(attrs, x_shape, u_aval.shape)
    ok = _in_bounds(idx, attrs["index_vector_dim"], attrs["scatter_dims_to_operand_dims"],
                    x_shape, wsize)  # fmt: skip
    window = attrs["update_window_dims"]
    sdims = [d for d in range(u_aval.ndim) if d not in window]
    return bcast(ok, u_aval.shape, sdims)


def _masked_gather(ct, idx, attrs, u_aval, x_shape):
    g = _gather_updates(ct, idx, attrs, u_aval)
    return select(_update_mask(idx, attrs, x_shape, u_aval), g, zeros(u_aval))


@defjvp("scatter")
def _scatter_jvp(ctx, primals, tangents, attrs, regions):
    if len(primals) != 3:
        raise NotImplementedError("differentiation of a variadic scatter")
    (x, idx, u), (tx, _, tu) = primals, tangents
    (body,) = regions
    kind = combiner(body)
    (out,) = ops("scatter", *primals, regions=regions, **attrs)
    xa, ua = aval(x), aval(u)
    if kind == "add":
        return [out], [_scatter("add", instantiate(tx, xa), idx, instantiate(tu, ua), attrs)]
    if kind == "set":
        if attrs.get("unique_indices", False):
            return [out], [_scatter("set", instantiate(tx, xa), idx, instantiate(tu, ua), attrs)]
        # which update wins each position: scatter ids 1..n, read them back (JAX's trick)
        window = attrs["update_window_dims"]
        ids_shape = [1 if d in window else n for d, n in enumerate(ua.shape)]
        n_ids = int(np.prod(ids_shape, dtype=np.int64))
        idt = np.dtype(np.int32)
        ids = op("iota", shape=(n_ids,), dtype=idt, dimension=0)
        ids = reshape(op("add", ids, full((n_ids,), 1, idt)), ids_shape)
        ids = bcast(ids, ua.shape, range(ua.ndim))
        scattered = _scatter("set", full(xa.shape, 0, idt), idx, ids, attrs)
        won = op("compare", ids, _gather_updates(scattered, idx, attrs, ShapedArray(ua.shape, idt)),
                 comparison_direction="EQ")  # fmt: skip
        kept = op("compare", scattered, full(xa.shape, 0, idt), comparison_direction="EQ")
        t = Zero(xa)
        if not isinstance(tx, Zero):
            t = select(kept, tx, zeros(xa))
        if not isinstance(tu, Zero):
            t = _scatter("add", instantiate(t, xa), idx, select(won, tu, zeros(ua)), attrs)
        return [out], [t]
    if kind == "multiply":
        t = Zero(xa)
        if not isinstance(tx, Zero):
            t = _scatter("multiply", tx, idx, u, attrs)
        if not isinstance(tu, Zero):
            if not attrs.get("unique_indices", False):
                raise NotImplementedError(
                    "scatter with multiply: gradients with respect to the updates are only "
                    "implemented if unique_indices=True (as in JAX)"
                )
            t = add(t, mul(x, _scatter("add", zeros(xa), idx, tu, attrs)))
        return [out], [t]
    if kind in ("maximum", "minimum") and xa.dtype.kind != "c":
        # tangent at a position: the mean of the tangents of every value equal to the result
        dt = xa.dtype
        won = convert(op("compare", u, _gather_updates(out, idx, attrs, ua),
                         comparison_direction="EQ"), dt)  # fmt: skip
        kept = convert(op("compare", x, out, comparison_direction="EQ"), dt)
        count = add(kept, _scatter("add", zeros(xa), idx, won, attrs))
        t = Zero(xa)
        if not isinstance(tx, Zero):
            t = mul(tx, kept)
        if not isinstance(tu, Zero):
            t = add(t, _scatter("add", zeros(xa), idx, mul(tu, won), attrs))
        return [out], [div(t, count)]
    raise NotImplementedError(f"differentiation of a scatter whose region is {kind or 'custom'}")


LINEAR_OPS.add("scatter")


@deftranspose("scatter")
def _scatter_t(cts, operands, attrs, regions):
    if len(operands) != 3:
        raise NotImplementedError("transpose of a variadic scatter")
    (ct,), (x, idx, u) = cts, operands
    kind = combiner(regions[0])
    xa, ua = aval(x), aval(u)
    if isinstance(ct, Zero):
        return [Zero(xa) if is_linear(x) else None, None, Zero(ua) if is_linear(u) else None]
    if kind == "add":
        ct_x = ct if is_linear(x) else None
        ct_u = _masked_gather(ct, idx, attrs, ua, xa.shape) if is_linear(u) else None
        return [ct_x, None, ct_u]
    if kind == "set" and attrs.get("unique_indices", False):
        ct_x = _scatter("set", ct, idx, zeros(ua), attrs) if is_linear(x) else None
        ct_u = _masked_gather(ct, idx, attrs, ua, xa.shape) if is_linear(u) else None
        return [ct_x, None, ct_u]
    if kind == "multiply" and is_linear(x) and not is_linear(u):
        return [_scatter("multiply", ct, idx, u, attrs), None, None]
    raise NotImplementedError(f"transpose of a scatter with region {kind or 'custom'}")


# ---- take along an axis ----------------------------------------------------------------------


def take_along_axis(t, idx, axis: int):
    """`t[..., idx, ...]` along `axis` (idx: integer array of t's rank; other dims equal)."""
    ia = aval(idx)
    rank = ia.ndim
    parts = []
    for d in range(rank):
        if d == axis:
            part = convert(idx, np.int32)
        else:
            part = op("iota", shape=ia.shape, dtype=np.dtype(np.int32), dimension=d)
        parts.append(reshape(part, (*ia.shape, 1)))
    full_idx = parts[0] if rank == 1 else op("concatenate", *parts, dimension=rank)
    return op(
        "gather",
        t,
        full_idx,
        offset_dims=(),
        collapsed_slice_dims=tuple(range(rank)),
        start_index_map=tuple(range(rank)),
        index_vector_dim=rank,
        slice_sizes=(1,) * rank,
        indices_are_sorted=False,
    )
