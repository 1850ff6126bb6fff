"""Contractions: `dot_general`, the matrix product with batch and contracting dimensions.

A contraction's result element reads a whole row of one operand and a whole column of the
other, which is what the `contraction` trait tells passes (layout, fusion) about it.
"""

from __future__ import annotations

import numpy as np
from purejit.ir.core import TensorType
from purejit.ir.ops._util import check_rank_attr, compute_dtype, int_list, nargs, need_attrs
from purejit.ir.ops.conv import check_precision
from purejit.ir.registry import OpDef, fail, register

# dot_general(lhs, rhs) {lhs_batching_dimensions, rhs_batching_dimensions,
#                        lhs_contracting_dimensions, rhs_contracting_dimensions,
#                        preferred_element_type (optional)} -----------------------------------
# With `preferred_element_type` the result has that dtype (JAX's `preferred_element_type`,
# e.g. bf16 operands with an f32 result, or i32 operands with an f32 one): the operands
# are taken in that dtype, then multiplied and summed in it. `precision` (optional) is a
# pair of "DEFAULT" / "HIGH" / "HIGHEST", StableHLO's precision_config (ir/ops/conv.py).

DOT_ATTRS = (
    "lhs_batching_dimensions",
    "rhs_batching_dimensions",
    "lhs_contracting_dimensions",
    "rhs_contracting_dimensions",
)


def _dot_infer(types, attrs, regions):
    nargs("dot_general", types, 2)
    lhs, rhs = types
    need_attrs("dot_general", attrs, *DOT_ATTRS)
    lb, rb, lc, rc = (int_list("dot_general", k, attrs[k]) for k in DOT_ATTRS)
    check_rank_attr("dot_general", "lhs batching+contracting dims", lb + lc, lhs.rank, type=lhs)
    check_rank_attr("dot_general", "rhs batching+contracting dims", rb + rc, rhs.rank, type=rhs)
    if lhs.dtype != rhs.dtype:
        fail("dot_general", f"operand dtypes differ: {lhs} vs {rhs}")
    if len(lb) != len(rb) or len(lc) != len(rc):
        fail("dot_general", "batching/contracting dimension lists differ in length")
    for a, b in list(zip(lb, rb)) + list(zip(lc, rc)):
        if lhs.shape[a] != rhs.shape[b]:
            fail("dot_general", f"{lhs} dim {a} does not match {rhs} dim {b}")
    shape = [lhs.shape[d] for d in lb]
    shape += [d for i, d in enumerate(lhs.shape) if i not in lb + lc]
    shape += [d for i, d in enumerate(rhs.shape) if i not in rb + rc]
    out = attrs.get("preferred_element_type")
    if out is not None and not isinstance(out, np.dtype):
        fail("dot_general", f"preferred_element_type must be a dtype, got {out!r}")
    check_precision("dot_general", attrs.get("precision"))
    _check_algorithm(attrs.get("algorithm"))
    return [TensorType(tuple(shape), lhs.dtype if out is None else out)]


# `algorithm` (optional): StableHLO's dot algorithm, (lhs precision type, rhs precision type,
# accumulation type, lhs component count, rhs component count, primitive operations, allow
# imprecise accumulation), the types by StableHLO's names ("bf16", "tf32", "f32", ...). It
# allows the backend a cheaper product (XLA's CPU backend ignores it), so the reference
# computes the product in full, as CPU does.
def _check_algorithm(alg) -> None:
    if alg is None:
        return
    ok = isinstance(alg, tuple) and len(alg) == 7
    ok = ok and all(isinstance(t, str) for t in alg[:3])
    ok = ok and all(isinstance(n, int) and n >= 1 for n in alg[3:6]) and isinstance(alg[6], bool)
    if not ok:
        fail("dot_general", f"algorithm must be (lhs, rhs, accumulation type names, 3 counts, "
                            f"a bool), got {alg!r}")  # fmt: skip


def _dot_ref(args, attrs, regions, run):
    lhs, rhs = args
    lb, rb, lc, rc = (tuple(attrs[k]) for k in DOT_ATTRS)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    ls = [next(letters) for _ in range(lhs.ndim)]
    rs = [next(letters) for _ in range(rhs.ndim)]
    for a, b in zip(lb + lc, rb + rc):
        rs[b] = ls[a]
    out = [ls[d] for d in lb]
    out += [ls[i] for i in range(lhs.ndim) if i not in lb + lc]
    out += [rs[i] for i in range(rhs.ndim) if i not in rb + rc]
    spec = f"{''.join(ls)},{''.join(rs)}->{''.join(out)}"
    dt = attrs.get("preferred_element_type") or lhs.dtype
    lhs, rhs = lhs.astype(dt), rhs.astype(dt)
    cdt = compute_dtype(dt)
    if cdt == np.float32 and dt != cdt:
        pass
    elif dt == np.float32:
        cdt = np.dtype(np.float64)  # accumulate f32 in f64: closer to XLA's result
    res = np.einsum(spec, lhs.astype(cdt), rhs.astype(cdt))
    return [np.asarray(res).astype(dt)]


register(
    OpDef(
        "dot_general",
        _dot_infer,
        _dot_ref,
        frozenset({"pure", "contraction", "accumulates"}),
        attrs=DOT_ATTRS + ("preferred_element_type", "precision", "algorithm"),
        doc="dot_general(lhs, rhs): result dims are batch, lhs free, rhs free",
    )
)
