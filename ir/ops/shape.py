"""Ops that make, move or copy data: constant, iota, broadcast_in_dim, reshape, transpose,
slice, concatenate, pad, reverse."""

from __future__ import annotations

import numpy as np
from purejit.ir.core import TensorType
from purejit.ir.ops._util import (
    check_rank_attr,
    dtype_attr,
    int_attr,
    int_list,
    nargs,
    need_attrs,
    same_types,
    shape_attr,
)
from purejit.ir.registry import OpDef, fail, register

_SHAPE = frozenset({"pure", "shape_only"})


def _op(name, infer, ref, traits=_SHAPE, attrs=(), doc=""):
    register(OpDef(name, infer, ref, frozenset(traits), attrs=attrs, doc=doc))


# constant {value} -------------------------------------------------------------------------


def _constant_infer(types, attrs, regions):
    nargs("constant", types, 0)
    v = attrs.get("value")
    if not isinstance(v, np.ndarray):
        fail("constant", f"value must be a numpy array, got {type(v).__name__}")
    return [TensorType(v.shape, dtype_attr("constant", "value dtype", v.dtype))]


_op(
    "constant",
    _constant_infer,
    lambda args, attrs, regions, run: [attrs["value"]],
    traits={"pure", "constant"},
    attrs=("value",),
)

# iota {shape, dtype, dimension} -------------------------------------------------------------


def _iota_infer(types, attrs, regions):
    nargs("iota", types, 0)
    need_attrs("iota", attrs, "shape", "dtype", "dimension")
    shape = shape_attr("iota", "shape", attrs["shape"])
    dt = dtype_attr("iota", "dtype", attrs["dtype"])
    out = TensorType(shape, dt)
    if dt == np.bool_:  # StableHLO's iota has integer, float and complex forms only
        fail("iota", f"cannot make {out}: iota is not defined for pred")
    check_rank_attr("iota", "dimension", [int_attr("iota", "dimension", attrs["dimension"])],
                    len(shape), type=out)  # fmt: skip
    return [out]


def _iota_ref(args, attrs, regions, run):
    shape, d = tuple(attrs["shape"]), attrs["dimension"]
    idx = np.arange(shape[d]).reshape([-1 if i == d else 1 for i in range(len(shape))])
    return [np.broadcast_to(idx, shape).astype(attrs["dtype"])]


_op("iota", _iota_infer, _iota_ref, attrs=("shape", "dtype", "dimension"))

# broadcast_in_dim(x) {shape, broadcast_dimensions} ------------------------------------------


def _bcast_infer(types, attrs, regions):
    nargs("broadcast_in_dim", types, 1)
    (t,) = types
    need_attrs("broadcast_in_dim", attrs, "shape", "broadcast_dimensions")
    shape = shape_attr("broadcast_in_dim", "shape", attrs["shape"])
    dims = int_list("broadcast_in_dim", "broadcast_dimensions", attrs["broadcast_dimensions"])
    if len(dims) != t.rank:
        fail("broadcast_in_dim", f"{t}: broadcast_dimensions={list(dims)} needs {t.rank} entries")
    check_rank_attr("broadcast_in_dim", "broadcast_dimensions", dims, len(shape),
                    type=f"{t} -> shape {list(shape)}")  # fmt: skip
    for i, d in enumerate(dims):
        if t.shape[i] not in (1, shape[d]):
            fail("broadcast_in_dim", f"cannot broadcast {t} to shape {list(shape)}")
    return [TensorType(shape, t.dtype)]


def _bcast_ref(args, attrs, regions, run):
    (x,) = args
    shape, dims = tuple(attrs["shape"]), tuple(attrs["broadcast_dimensions"])
    expanded = [1] * len(shape)
    for i, d in enumerate(dims):
        expanded[d] = x.shape[i]
    order = np.argsort(dims)
    x = np.transpose(x, order) if len(dims) > 1 else x
    return [np.broadcast_to(x.reshape(expanded), shape).copy()]


_op(
    "broadcast_in_dim",
    _bcast_infer,
    _bcast_ref,
    attrs=("shape", "broadcast_dimensions"),
)

# reshape(x) {shape} -------------------------------------------------------------------------


def _reshape_infer(types, attrs, regions):
    nargs("reshape", types, 1)
    (t,) = types
    need_attrs("reshape", attrs, "shape")
    out = TensorType(shape_attr("reshape", "shape", attrs["shape"]), t.dtype)
    if out.size != t.size:
        fail("reshape", f"cannot reshape {t} ({t.size} elements) to {out}")
    return [out]


_op(
    "reshape",
    _reshape_infer,
    lambda args, attrs, regions, run: [args[0].reshape(tuple(attrs["shape"]))],
    traits=_SHAPE | {"view"},
    attrs=("shape",),
)

# transpose(x) {permutation} -----------------------------------------------------------------


def _transpose_infer(types, attrs, regions):
    nargs("transpose", types, 1)
    (t,) = types
    need_attrs("transpose", attrs, "permutation")
    perm = int_list("transpose", "permutation", attrs["permutation"])
    if sorted(perm) != list(range(t.rank)):
        fail("transpose", f"permutation={list(perm)} is not a permutation of the dims of {t}")
    return [TensorType(tuple(t.shape[p] for p in perm), t.dtype)]


_op(
    "transpose",
    _transpose_infer,
    lambda args, attrs, regions, run: [np.transpose(args[0], attrs["permutation"]).copy()],
    attrs=("permutation",),
)

# slice(x) {start_indices, limit_indices, strides} --------------------------------------------


def _slice_infer(types, attrs, regions):
    nargs("slice", types, 1)
    (t,) = types
    keys = ("start_indices", "limit_indices", "strides")
    need_attrs("slice", attrs, *keys)
    start, limit, strides = (int_list("slice", k, attrs[k]) for k in keys)
    if not len(start) == len(limit) == len(strides) == t.rank:
        fail("slice", f"{t}: start/limit/strides must each have {t.rank} entries")
    shape = []
    for s, lim, st, d in zip(start, limit, strides, t.shape):
        if not (0 <= s <= lim <= d) or st < 1:
            fail("slice", f"{t}: bad slice start={list(start)} limit={list(limit)} "
                 f"strides={list(strides)}")  # fmt: skip
        shape.append(-(-(lim - s) // st))
    return [TensorType(tuple(shape), t.dtype)]


def _slice_ref(args, attrs, regions, run):
    idx = tuple(
        slice(s, lim, st)
        for s, lim, st in zip(attrs["start_indices"], attrs["limit_indices"], attrs["strides"])
    )
    return [args[0][idx].copy()]


_op("slice", _slice_infer, _slice_ref, attrs=("start_indices", "limit_indices", "strides"))

# concatenate(*xs) {dimension} ---------------------------------------------------------------


def _concat_infer(types, attrs, regions):
    if not types:
        fail("concatenate", "needs at least one operand")
    need_attrs("concatenate", attrs, "dimension")
    d = int_attr("concatenate", "dimension", attrs["dimension"])
    first = types[0]
    check_rank_attr("concatenate", "dimension", [d], first.rank, type=first)
    for t in types[1:]:
        if (
            t.dtype != first.dtype
            or t.rank != first.rank
            or any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != d)
        ):
            fail("concatenate", f"operands {first} and {t} differ outside dimension {d}")
    shape = list(first.shape)
    shape[d] = sum(t.shape[d] for t in types)
    return [TensorType(tuple(shape), first.dtype)]


_op(
    "concatenate",
    _concat_infer,
    lambda args, attrs, regions, run: [np.concatenate(args, axis=attrs["dimension"])],
    attrs=("dimension",),
)

# pad(x, value) {edge_padding_low, edge_padding_high, interior_padding} ----------------------


def _pad_infer(types, attrs, regions):
    nargs("pad", types, 2)
    t, v = types
    if v.shape != () or v.dtype != t.dtype:
        fail("pad", f"padding value {v} must be a scalar of {t.dtype} (operand {t})")
    keys = ("edge_padding_low", "edge_padding_high", "interior_padding")
    need_attrs("pad", attrs, *keys)
    lo, hi, interior = (int_list("pad", k, attrs[k]) for k in keys)
    if not len(lo) == len(hi) == len(interior) == t.rank or any(i < 0 for i in interior):
        fail("pad", f"{t}: padding lists must have {t.rank} entries, interior >= 0")
    shape = []
    for d, a, b, i in zip(t.shape, lo, hi, interior):
        n = d + a + b + max(d - 1, 0) * i
        if n < 0:
            fail("pad", f"{t}: padding gives a negative dimension")
        shape.append(n)
    return [TensorType(tuple(shape), t.dtype)]


def _pad_ref(args, attrs, regions, run):
    x, v = args
    lo, hi = attrs["edge_padding_low"], attrs["edge_padding_high"]
    interior = attrs["interior_padding"]
    # interior padding first, then edges (negative edges crop)
    shape = [d + max(d - 1, 0) * i for d, i in zip(x.shape, interior)]
    y = np.full(shape, v, dtype=x.dtype)
    y[tuple(slice(None, None, i + 1) for i in interior)] = x
    widths = [(max(a, 0), max(b, 0)) for a, b in zip(lo, hi)]
    if widths:  # np.pad refuses an empty pad_width; a 0-d operand pads to itself
        y = np.pad(y, widths, constant_values=v)
    crop = tuple(slice(max(-a, 0), y.shape[k] - max(-b, 0)) for k, (a, b) in enumerate(zip(lo, hi)))
    return [y[crop].copy()]


_op(
    "pad",
    _pad_infer,
    _pad_ref,
    attrs=("edge_padding_low", "edge_padding_high", "interior_padding"),
)

# reverse(x) {dimensions} --------------------------------------------------------------------


def _reverse_infer(types, attrs, regions):
    nargs("reverse", types, 1)
    need_attrs("reverse", attrs, "dimensions")
    check_rank_attr("reverse", "dimensions", attrs["dimensions"], types[0].rank, type=types[0])
    return [types[0]]


_op(
    "reverse",
    _reverse_infer,
    lambda args, attrs, regions, run: [np.flip(args[0], tuple(attrs["dimensions"])).copy()],
    attrs=("dimensions",),
)

__all__ = ["same_types"]
