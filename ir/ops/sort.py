"""Ordering and windowed ops: sort (with a comparator region), top_k, reduce_window.

sort(xs...) {dimension, is_stable} region(a0, b0, a1, b1, ...) -> pred[]
    Sorts every operand along `dimension` by the permutation that orders the comparator:
    the region gets one scalar pair (lhs, rhs) per operand and says whether lhs comes
    first. Sorting by the first k operands (num_keys) is a comparator that only reads them.

top_k(x) {k} -> (values, indices)
    The k largest entries along the last dimension, largest first; ties go to the lower
    index and NaN counts as larger than every number (XLA's TopK). Indices are s32.

reduce_window(inputs..., inits...) {window_dimensions, window_strides, base_dilations,
                                    window_dilations, padding} region(acc..., x...)
    XLA's ReduceWindow; cumulative sums and products are a window as long as the axis
    with padding on one side, which XLA rewrites into a fast scan.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from purejit.ir import dtypes
from purejit.ir.core import TensorType
from purejit.ir.ops._util import check_rank_attr, compute_dtype
from purejit.ir.ops.reduce import REDUCTION_UFUNCS, reduction_kind, reduction_operands
from purejit.ir.registry import OpDef, fail, register

_PRED = TensorType((), np.bool_)

# sort ----------------------------------------------------------------------------------------


def _sort_infer(types, attrs, regions):
    if not types:
        fail("sort", "expects at least one operand")
    shape = types[0].shape
    for t in types[1:]:
        if t.shape != shape:
            fail("sort", f"operands have different shapes: {types[0]} vs {t}")
    if not shape:
        fail("sort", f"cannot sort a scalar {types[0]}")
    check_rank_attr("sort", "dimension", [attrs["dimension"]], len(shape))
    if not isinstance(attrs.get("is_stable", False), bool):
        fail("sort", "is_stable must be a bool")
    if len(regions) != 1:
        fail("sort", "needs exactly one comparator region")
    expect = [TensorType((), t.dtype) for t in types for _ in (0, 1)]
    (cmp,) = regions
    if cmp.param_types != expect or cmp.result_types != [_PRED]:
        got = f"{cmp.param_types} -> {cmp.result_types}"
        fail("sort", f"comparator must be {expect} -> [pred[]], got {got}")
    return list(types)


def _ascending(cmp) -> bool:
    """Whether comparator `cmp` is the plain ascending order of its first operand pair:
    `lhs < rhs` (integers, booleans), or that with NaNs last, as purejit.numpy's float sort
    writes it: `lhs < rhs or (rhs != rhs and not lhs != lhs)`. Dead ops are ignored."""
    defs = {r: op for op in cmp.ops for r in op.results}
    p0, p1 = cmp.params[0], cmp.params[1]

    def is_cmp(v, a, b, direction):
        op = defs.get(v)
        return (
            op is not None
            and op.name == "compare"
            and list(op.operands) == [a, b]
            and op.attrs.get("comparison_direction") == direction
            and op.attrs.get("compare_type") in (None, "")
        )

    root = cmp.results[0]
    if is_cmp(root, p0, p1, "LT"):
        return np.dtype(p0.type.dtype).kind in "biu"
    op = defs.get(root)
    if op is None or op.name != "or" or np.dtype(p0.type.dtype) not in _FLOATS:
        return False
    lt, nan_last = op.operands
    last = defs.get(nan_last)
    if not is_cmp(lt, p0, p1, "LT") or last is None or last.name != "and":
        return False
    rhs_nan, lhs_not_nan = last.operands
    neg = defs.get(lhs_not_nan)
    return (
        is_cmp(rhs_nan, p1, p1, "NE")
        and neg is not None
        and neg.name == "not"
        and is_cmp(neg.operands[0], p0, p0, "NE")
    )


_FLOATS = {np.dtype(t) for t in (np.float16, np.float32, np.float64, dtypes.bfloat16)}


def _sort_ref(args, attrs, regions, run):
    dim = attrs["dimension"]
    (cmp,) = regions
    moved = [np.moveaxis(a, dim, -1) for a in args]
    n = moved[0].shape[-1]
    lanes = [m.reshape(-1, n) for m in moved]
    out = [lane.copy() for lane in lanes]
    if _ascending(cmp):
        # the comparator is NumPy's own order (NaNs last, equal keys kept in place): a
        # stable argsort gives the same permutation without a Python call per comparison
        key = lanes[0] if lanes[0].dtype.kind in "biu" else lanes[0].astype(np.float64)
        perm = np.argsort(key, axis=-1, kind="stable")
        return [
            np.moveaxis(np.take_along_axis(lane, perm, axis=-1).reshape(m.shape), -1, dim)
            for lane, m in zip(lanes, moved)
        ]

    for r in range(lanes[0].shape[0]):
        row = [lane[r] for lane in lanes]

        def less(i, j, row=row):
            pairs = [v for x in row for v in (x[i], x[j])]
            return bool(run(cmp, *pairs)[0])

        def order(i, j, less=less):
            return -1 if less(i, j) else (1 if less(j, i) else 0)

        perm = sorted(range(n), key=functools.cmp_to_key(order))  # stable
        for o, x in zip(out, row):
            o[r] = x[perm]
    return [np.moveaxis(o.reshape(m.shape), -1, dim) for o, m in zip(out, moved)]


register(
    OpDef(
        "sort",
        _sort_infer,
        _sort_ref,
        frozenset({"pure"}),
        attrs=("dimension", "is_stable"),
        num_regions=1,
        doc="sort(xs...) {dimension, is_stable} region(lhs0, rhs0, ...) -> pred[]",
    )
)

# top_k -----------------------------------------------------------------------------------------


def _top_k_infer(types, attrs, regions):
    if len(types) != 1:
        fail("top_k", f"expects one operand, got {len(types)}")
    (t,) = types
    k = attrs["k"]
    if t.rank == 0:
        fail("top_k", f"operand must have rank >= 1, got {t}")
    if dtypes.is_complex(t.dtype):
        fail("top_k", f"does not accept complex {t}")
    if not isinstance(k, int) or not 0 <= k <= t.shape[-1]:
        fail("top_k", f"k={k} must be in [0, {t.shape[-1]}] for {t}")
    shape = t.shape[:-1] + (k,)
    return [TensorType(shape, t.dtype), TensorType(shape, np.int32)]


def _descending_key(v, inexact: bool):
    if inexact:
        f = float(v)
        return (0, 0.0) if math.isnan(f) else (1, -f)
    return (1, -int(v))


def _top_k_ref(args, attrs, regions, run):
    (x,) = args
    k = attrs["k"]
    n = x.shape[-1]
    lanes = x.reshape(-1, n)
    inexact = dtypes.is_inexact(x.dtype)
    idx = np.zeros((lanes.shape[0], k), np.int32)
    for r, lane in enumerate(lanes):
        keys = [_descending_key(v, inexact) for v in lane]
        idx[r] = sorted(range(n), key=lambda i: (keys[i], i))[:k]
    vals = np.take_along_axis(lanes, idx.astype(np.int64), axis=1)
    shape = x.shape[:-1] + (k,)
    return [vals.reshape(shape), idx.reshape(shape)]


register(
    OpDef(
        "top_k",
        _top_k_infer,
        _top_k_ref,
        frozenset({"pure"}),
        attrs=("k",),
        doc="top_k(x) {k} -> (values, s32 indices) along the last dimension",
    )
)

# reduce_window ---------------------------------------------------------------------------------

WINDOW_ATTRS = (
    "window_dimensions",
    "window_strides",
    "base_dilations",
    "window_dilations",
    "padding",
)


def window_output_shape(shape, attrs) -> tuple[int, ...]:
    """The result shape of reduce_window on `shape` (XLA's formula)."""
    out = []
    for d, w, s, bd, wd, (lo, hi) in zip(shape, *(attrs[k] for k in WINDOW_ATTRS)):
        padded = (d - 1) * bd + 1 + lo + hi if d else lo + hi
        extent = (w - 1) * wd + 1
        out.append((padded - extent) // s + 1 if padded >= extent else 0)
    return tuple(out)


def _reduce_window_infer(types, attrs, regions):
    op = "reduce_window"
    inputs, _ = reduction_operands(op, types, regions)
    rank = inputs[0].rank
    for k in WINDOW_ATTRS:
        if len(attrs[k]) != rank:
            fail(op, f"{k}={list(attrs[k])} needs {rank} entries for {inputs[0]}")
    for k in WINDOW_ATTRS[:4]:
        if any(v < 1 for v in attrs[k]):
            fail(op, f"{k}={list(attrs[k])} must be positive")
    if any(len(p) != 2 for p in attrs["padding"]):
        fail(op, "padding must be a list of (low, high) pairs")
    shape = window_output_shape(inputs[0].shape, attrs)
    return [TensorType(shape, t.dtype) for t in inputs]


def _pad_dilate(x, init, attrs):
    """x with base dilation and (possibly negative) padding applied, holes filled with init."""
    for ax, (bd, (lo, hi)) in enumerate(zip(attrs["base_dilations"], attrs["padding"])):
        d = x.shape[ax]
        if bd > 1 and d > 1:
            shape = list(x.shape)
            shape[ax] = (d - 1) * bd + 1
            y = np.full(shape, init, x.dtype)
            index = [slice(None)] * x.ndim
            index[ax] = slice(None, None, bd)
            y[tuple(index)] = x
            x = y
        widths = [(0, 0)] * x.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths, constant_values=init)
        index = [slice(None)] * x.ndim
        index[ax] = slice(max(-lo, 0), x.shape[ax] - max(-hi, 0))
        x = x[tuple(index)]
    return x


def _reduce_window_ref(args, attrs, regions, run):
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    (body,) = regions
    out_shape = window_output_shape(inputs[0].shape, attrs)
    padded = [_pad_dilate(x, i, attrs) for x, i in zip(inputs, inits)]
    strides, wdil = attrs["window_strides"], attrs["window_dilations"]
    acc = [np.full(out_shape, i, x.dtype) for x, i in zip(inputs, inits)]
    kind = reduction_kind(body)
    # a known reduction of narrow floats accumulates in float32 and rounds once at the end:
    # rounding after each of 10^5 window positions (a long cumsum) would stall the sum
    # far from any order XLA may pick
    out_dtype = acc[0].dtype
    wide = acc[0].astype(compute_dtype(out_dtype)) if kind is not None else None
    for offset in np.ndindex(*attrs["window_dimensions"]):
        index = tuple(
            slice(o * wd, o * wd + (m - 1) * s + 1, s) if m else slice(0, 0)
            for o, wd, s, m in zip(offset, wdil, strides, out_shape)
        )
        windows = [p[index] for p in padded]
        if kind is not None:
            wide = REDUCTION_UFUNCS[kind](wide, windows[0].astype(wide.dtype))
            continue
        for pos in np.ndindex(*out_shape):
            res = run(body, *[a[pos] for a in acc], *[w[pos] for w in windows])
            for a, r in zip(acc, res):
                a[pos] = r
    return [wide.astype(out_dtype)] if kind is not None else acc


register(
    OpDef(
        "reduce_window",
        _reduce_window_infer,
        _reduce_window_ref,
        frozenset({"pure", "accumulates"}),
        attrs=WINDOW_ATTRS,
        num_regions=1,
        doc="reduce_window(inputs..., inits...) {window attrs} region(accs..., xs...) -> accs",
    )
)
