"""JVP and transpose rules of `dynamic_slice` and `dynamic_update_slice`
(`ir/ops/indexing.py`): linear in the array operands; the start indices are primal."""

from __future__ import annotations

from purejit.transforms.autodiff._core import (
    Zero,
    aval,
    deftranspose,
    is_linear,
    linear_jvp,
    op,
    zeros,
)

linear_jvp("dynamic_slice", lambda i, n: i == 0)
linear_jvp("dynamic_update_slice", lambda i, n: i < 2)


@deftranspose("dynamic_slice")
def _ds_t(cts, operands, attrs, regions):
    (ct,), (x, *starts) = cts, operands
    if isinstance(ct, Zero):
        return [Zero(aval(x)), *[None] * len(starts)]
    return [op("dynamic_update_slice", zeros(aval(x)), ct, *starts), *[None] * len(starts)]


@deftranspose("dynamic_update_slice")
def _dus_t(cts, operands, attrs, regions):
    (ct,), (x, u, *starts) = cts, operands
    rest = [None] * len(starts)
    if isinstance(ct, Zero):
        zx = Zero(aval(x)) if is_linear(x) else None
        return [zx, Zero(aval(u)) if is_linear(u) else None, *rest]
    ct_x = op("dynamic_update_slice", ct, zeros(aval(u)), *starts) if is_linear(x) else None
    ct_u = None
    if is_linear(u):
        ct_u = op("dynamic_slice", ct, *starts, slice_sizes=aval(u).shape)
    return [ct_x, ct_u, *rest]
