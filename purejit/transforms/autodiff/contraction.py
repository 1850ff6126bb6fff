"""JVP and transpose rules of `dot_general` (`ir/ops/contraction.py`): bilinear, so the
tangent is a sum of two dots and each transpose is a dot with the cotangent (JAX's)."""

from __future__ import annotations

import numpy as np

from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    aval,
    defbilinear,
    convert,
    deftranspose,
    is_linear,
    op,
    transpose,
)


def _dot(a, b, attrs):
    return op("dot_general", a, b, **attrs)


defbilinear("dot_general")


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield list(range(start, start + len(x)))
        start += len(x)


def _remaining(n, *taken):
    used = {d for t in taken for d in t}
    return [d for d in range(n) if d not in used]


# the operand dtypes a dot algorithm's precision type takes as they are (JAX's
# `DotAlgorithmPreset.supported_lhs_types`, which the transposed dot's operands go through)
_STORED = {"bf16": ("bfloat16", "float32"), "tf32": ("float32",), "f32": ("float32",),
           "f16": ("float16",), "f64": ("float64",)}  # fmt: skip


def _stores(alg, dtype) -> bool:
    """Whether dot algorithm `alg` (the IR attribute) takes operands of `dtype` unconverted."""
    if alg is None:
        return False
    name = np.dtype(dtype).name
    return all(name in _STORED.get(t, ()) for t in alg[:2])


def _transpose_lhs(g, x_aval, y, lc, rc, lb, rb, out_dtype, swap_ans=False, keep=None):
    y_ndim = aval(y).ndim
    x_kept = _remaining(x_aval.ndim, lc, lb)
    y_kept = _remaining(y_ndim, rc, rb)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(lb, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(lb, x_kept, y_kept)
    attrs = {
        "lhs_contracting_dimensions": tuple(ans_y),
        "rhs_contracting_dimensions": tuple(y_kept),
        "lhs_batching_dimensions": tuple(ans_batch),
        "rhs_batching_dimensions": tuple(rb),
        **(keep or {}),
    }
    gd, yd = aval(g).dtype, aval(y).dtype
    alg = attrs.get("algorithm")
    if gd != yd and (alg is None or _stores(alg, gd)):
        # mixed dtypes (preferred_element_type): JAX's transposed dot takes the cotangent,
        # in the forward's result dtype, with the other operand as it is, and its lowering
        # converts that operand to the result dtype (bf16 operands with a float32 result:
        # a float32 product of the unrounded cotangent). With a dot algorithm that takes
        # the cotangent's dtype as it is (BF16_BF16_F32 and the bf16/tf32 presets take
        # float32) JAX keeps it too and lets the algorithm round it, which XLA's GPU backend
        # does and its CPU backend does not (it ignores the algorithm). One dtype per dot
        # here, so the other operand goes to the cotangent's
        y = convert(y, gd)
    elif gd != yd:
        # an algorithm that does not take the cotangent's dtype (F16_F16_F32 takes float16
        # only): JAX converts it to the algorithm's operand type, accumulating as before
        g = convert(g, yd)
        attrs["preferred_element_type"] = gd
    x_contract_sorted_by_y = [lc[i] for i in np.argsort(rc)]
    out_axes = np.argsort(list(lb) + x_kept + x_contract_sorted_by_y)
    x_bar = transpose(_dot(g, y, attrs), [int(a) for a in out_axes])
    return convert(x_bar, x_aval.dtype)


@deftranspose("dot_general")
def _dot_t(cts, operands, attrs, regions):
    (ct,), (x, y) = cts, operands
    if is_linear(x) and is_linear(y):
        raise NotImplementedError("dot_general of two tangents is not linear")
    lc, rc = attrs["lhs_contracting_dimensions"], attrs["rhs_contracting_dimensions"]
    lb, rb = attrs["lhs_batching_dimensions"], attrs["rhs_batching_dimensions"]
    dt = attrs.get("preferred_element_type")
    # the backward products compute as the forward one did (JAX passes precision along too)
    keep = {k: attrs[k] for k in ("precision", "algorithm") if attrs.get(k) is not None}
    if is_linear(x):
        if isinstance(ct, Zero):
            return [Zero(aval(x)), None]
        return [_transpose_lhs(ct, aval(x), y, lc, rc, lb, rb, dt, keep=keep), None]
    if isinstance(ct, Zero):
        return [None, Zero(aval(y))]
    return [None, _transpose_lhs(ct, aval(y), x, rc, lc, rb, lb, dt, swap_ans=True, keep=keep)]


LINEAR_OPS.update({"dot_general"})
