"""Indexing ops: dynamic_slice, dynamic_update_slice (gather and scatter live in gather.py).

Start indices are clamped so the slice stays inside the operand, as in XLA.
"""

from __future__ import annotations

import numpy as np
from purejit.ir import dtypes
from purejit.ir.core import TensorType
from purejit.ir.ops._util import int_list, need_attrs
from purejit.ir.registry import OpDef, fail, register


def _check_starts(op, operand, starts):
    if len(starts) != operand.rank:
        fail(op, f"{operand} needs {operand.rank} start indices, got {len(starts)}")
    for s in starts:
        if s.shape != () or not dtypes.is_integer(s.dtype):
            fail(op, f"start indices must be integer scalars, got {s}")
    if len({s.dtype for s in starts}) > 1:  # StableHLO requires one index type
        fail(op, f"start indices have different types: {', '.join(str(s) for s in starts)}")


def clamp_starts(starts, shape, sizes):
    return tuple(int(min(max(int(s), 0), d - n)) for s, d, n in zip(starts, shape, sizes))


# dynamic_slice(x, *starts) {slice_sizes} ---------------------------------------------------


def _ds_infer(types, attrs, regions):
    if not types:
        fail("dynamic_slice", "expects an operand and start indices")
    t, starts = types[0], types[1:]
    _check_starts("dynamic_slice", t, starts)
    need_attrs("dynamic_slice", attrs, "slice_sizes")
    sizes = int_list("dynamic_slice", "slice_sizes", attrs["slice_sizes"])
    if len(sizes) != t.rank or any(not 0 <= n <= d for n, d in zip(sizes, t.shape)):
        fail("dynamic_slice", f"slice_sizes={list(sizes)} do not fit in {t}")
    return [TensorType(sizes, t.dtype)]


def _ds_ref(args, attrs, regions, run):
    x, starts = args[0], args[1:]
    sizes = tuple(attrs["slice_sizes"])
    st = clamp_starts(starts, x.shape, sizes)
    return [x[tuple(slice(s, s + n) for s, n in zip(st, sizes))].copy()]


register(
    OpDef(
        "dynamic_slice",
        _ds_infer,
        _ds_ref,
        frozenset({"pure"}),
        attrs=("slice_sizes",),
        doc="dynamic_slice(x, *starts) {slice_sizes}; starts clamped into range",
    )
)

# dynamic_update_slice(x, update, *starts) --------------------------------------------------


def _dus_infer(types, attrs, regions):
    if len(types) < 2:
        fail("dynamic_update_slice", "expects an operand, an update and start indices")
    t, u, starts = types[0], types[1], types[2:]
    _check_starts("dynamic_update_slice", t, starts)
    if u.dtype != t.dtype or u.rank != t.rank or any(a > b for a, b in zip(u.shape, t.shape)):
        fail("dynamic_update_slice", f"update {u} does not fit in {t}")
    return [t]


def _dus_ref(args, attrs, regions, run):
    x, u, starts = args[0], args[1], args[2:]
    st = clamp_starts(starts, x.shape, u.shape)
    y = x.copy()
    y[tuple(slice(s, s + n) for s, n in zip(st, u.shape))] = u
    return [y]


register(
    OpDef(
        "dynamic_update_slice",
        _dus_infer,
        _dus_ref,
        frozenset({"pure"}),
        doc="dynamic_update_slice(x, update, *starts); starts clamped into range",
    )
)

__all__ = ["clamp_starts", "np"]
