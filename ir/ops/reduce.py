"""Reductions: `reduce`, whose region combines the elements it folds.

`reduce`'s init values must be identities of its body (0 for add, -inf for maximum, ...):
XLA may apply them any number of times (and drops them when nothing is reduced), so with any
other init the result is not defined. The reference applies each init exactly once.
"""

from __future__ import annotations

import numpy as np
from purejit.ir import dtypes
from purejit.ir.core import TensorType
from purejit.ir.interpreter import run_batched
from purejit.ir.ops._util import check_rank_attr, compute_dtype, need_attrs
from purejit.ir.registry import OpDef, fail, register

# reduce(*inputs, *inits) {dimensions} region(acc..., x...) -> acc... -----------------------


def reduction_operands(op: str, types, regions):
    """Split the operands of a reduce-like op (`reduce`, `reduce_window`) into N inputs and N
    init values, checking shapes, init types and the `(accs..., xs...) -> accs...` region."""
    if len(types) % 2 or not types:
        fail(op, f"expects N inputs and N init values, got {len(types)} operands")
    n = len(types) // 2
    inputs, inits = types[:n], types[n:]
    for t in inputs[1:]:
        if t.shape != inputs[0].shape:
            fail(op, f"inputs have different shapes: {inputs[0]} vs {t}")
    for x, i in zip(inputs, inits):
        if i.shape != () or i.dtype != x.dtype:
            fail(op, f"init value {i} must be a scalar of the input's type (input {x})")
    if len(regions) != 1:
        fail(op, "needs exactly one region")
    (body,) = regions
    expect = [TensorType((), t.dtype) for t in inits] * 2
    if body.param_types != expect or body.result_types != expect[:n]:
        fail(op, f"region must be {expect} -> {expect[:n]}, got {body.param_types}")
    return inputs, inits


def _reduce_infer(types, attrs, regions):
    inputs, _ = reduction_operands("reduce", types, regions)
    need_attrs("reduce", attrs, "dimensions")
    dims = check_rank_attr("reduce", "dimensions", attrs["dimensions"], inputs[0].rank,
                           type=inputs[0])  # fmt: skip
    shape = tuple(d for i, d in enumerate(inputs[0].shape) if i not in dims)
    return [TensorType(shape, t.dtype) for t in inputs]


REDUCTION_UFUNCS = {
    "add": np.add,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def reduction_kind(body) -> str | None:
    """The binary op name if the region is `return op(acc, x)`, else None."""
    if len(body.ops) == 1 and len(body.params) == 2 and len(body.results) == 1:
        op = body.ops[0]
        if op.results == body.results and set(op.operands) == set(body.params):
            if op.name in REDUCTION_UFUNCS and op.operands[0] is not op.operands[1]:
                return op.name
    return None


def _fix_signed_zero(kind, x, init, out, dims):
    """XLA orders -0.0 below +0.0 in maximum/minimum, so a max over zeros is +0.0 if any is."""
    if kind not in ("maximum", "minimum") or not dtypes.is_float(x.dtype):
        return out
    negative = kind == "minimum"

    def want(v):  # the zero that wins: +0.0 for maximum, -0.0 for minimum
        return (v == 0) & (np.signbit(v) == negative)

    hit = np.any(want(x), axis=dims) | want(init)
    zero = np.asarray(0.0 if kind == "maximum" else -0.0, out.dtype)
    return np.where((out == 0) & hit, zero, out)


def _reduce_ref(args, attrs, regions, run):
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    dims = tuple(attrs["dimensions"])
    (body,) = regions
    kind = reduction_kind(body)
    if kind in ("maximum", "minimum") and dtypes.is_complex(inputs[0].dtype):
        kind = None  # NumPy's complex order is not the IR's (JAX's); run the region
    if kind is not None:
        x = inputs[0]
        cdt = compute_dtype(x.dtype)
        ufunc = REDUCTION_UFUNCS[kind]
        out = ufunc.reduce(x.astype(cdt), axis=dims) if dims else x.astype(cdt)
        out = np.asarray(ufunc(out, inits[0].astype(cdt)))
        return [_fix_signed_zero(kind, x, inits[0], out, dims).astype(x.dtype)]
    # general: fold along the reduced dimensions, vectorised over the kept ones
    keep = [i for i in range(inputs[0].ndim) if i not in dims]
    moved = [np.transpose(x, keep + list(dims)) for x in inputs]
    batch = moved[0].shape[: len(keep)]
    flat = [x.reshape(batch + (-1,)) for x in moved]
    acc = [np.broadcast_to(i, batch).copy() for i in inits]
    for k in range(flat[0].shape[-1]):
        acc = run_batched(body, *acc, *[x[..., k] for x in flat])
    return [np.asarray(a) for a in acc]


register(
    OpDef(
        "reduce",
        _reduce_infer,
        _reduce_ref,
        frozenset({"pure", "reduction", "accumulates"}),
        attrs=("dimensions",),
        num_regions=1,
        doc="reduce(inputs..., inits...) {dimensions} region(accs..., xs...) -> accs...",
    )
)
