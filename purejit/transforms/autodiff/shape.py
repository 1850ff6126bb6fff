"""JVP and transpose rules of the data-movement ops (`ir/ops/shape.py`): all are linear in
their array operands, so the tangent is the same op on the tangents and the transpose moves
the cotangent back."""

from __future__ import annotations

import numpy as np

from purejit.transforms.autodiff._core import (
    Zero,
    aval,
    defjvp,
    is_linear,
    linear_jvp,
    deftranspose,
    op,
    ops,
    reduce_sum,
    reshape,
    sub,
    transpose,
)

for _name in ("broadcast_in_dim", "reshape", "transpose", "slice", "reverse", "concatenate", "pad"):
    linear_jvp(_name, lambda i, n: True)


@deftranspose("broadcast_in_dim")
def _bcast_t(cts, operands, attrs, regions):
    (ct,), (x,) = cts, operands
    if isinstance(ct, Zero):
        return [Zero(aval(x))]
    shape_in, shape_out = aval(x).shape, tuple(attrs["shape"])
    dims = tuple(attrs["broadcast_dimensions"])
    # sum the new dims and the size-1 dims that were expanded
    expanded = {d for i, d in enumerate(dims) if shape_in[i] == 1 and shape_out[d] != 1}
    summed = [d for d in range(len(shape_out)) if d not in dims or d in expanded]
    s = reduce_sum(ct, summed)
    remaining = [d for d in range(len(shape_out)) if d not in summed]  # s's dims, in order
    kept = [d for d in dims if d in remaining]  # in the operand's order
    s = transpose(s, [remaining.index(d) for d in kept])
    return [reshape(s, shape_in)]


@deftranspose("reshape")
def _reshape_t(cts, operands, attrs, regions):
    (ct,), (x,) = cts, operands
    return [reshape(ct, aval(x).shape)]


@deftranspose("transpose")
def _transpose_t(cts, operands, attrs, regions):
    (ct,) = cts
    perm = attrs["permutation"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return [transpose(ct, inv)]


@deftranspose("reverse")
def _reverse_t(cts, operands, attrs, regions):
    (ct,), (x,) = cts, operands
    if isinstance(ct, Zero):
        return [Zero(aval(x))]
    return [op("reverse", ct, dimensions=attrs["dimensions"])]


@deftranspose("slice")
def _slice_t(cts, operands, attrs, regions):
    (ct,), (x,) = cts, operands
    if isinstance(ct, Zero):
        return [Zero(aval(x))]
    shape = aval(x).shape
    out = aval(ct).shape
    lo, hi, interior = [], [], []
    for s, st, n, d in zip(attrs["start_indices"], attrs["strides"], out, shape):
        last = s + (n - 1) * st if n else s - 1
        lo.append(s)
        hi.append(d - last - 1 if n else d - s)
        interior.append(st - 1 if n else 0)
    zero = np.zeros((), aval(ct).dtype)
    return [
        op("pad", ct, zero, edge_padding_low=lo, edge_padding_high=hi, interior_padding=interior)
    ]


@deftranspose("concatenate")
def _concat_t(cts, operands, attrs, regions):
    (ct,) = cts
    d = attrs["dimension"]
    out, start = [], 0
    for x in operands:
        n = aval(x).shape[d]
        if is_linear(x):
            if isinstance(ct, Zero):
                out.append(Zero(aval(x)))
            else:
                shape = aval(ct).shape
                lo = [start if k == d else 0 for k in range(len(shape))]
                hi = [start + n if k == d else shape[k] for k in range(len(shape))]
                out.append(
                    op("slice", ct, start_indices=lo, limit_indices=hi, strides=[1] * len(shape))
                )
        else:
            out.append(None)
        start += n
    return out


@deftranspose("pad")
def _pad_t(cts, operands, attrs, regions):
    (ct,), (x, v) = cts, operands
    if isinstance(ct, Zero):
        return [Zero(aval(x)) if is_linear(x) else None, Zero(aval(v)) if is_linear(v) else None]
    lo, hi = attrs["edge_padding_low"], attrs["edge_padding_high"]
    interior = attrs["interior_padding"]
    rank = len(lo)
    unpadded = op(
        "pad",
        ct,
        np.zeros((), aval(ct).dtype),
        edge_padding_low=[-a for a in lo],
        edge_padding_high=[-b for b in hi],
        interior_padding=[0] * rank,
    )
    ushape = aval(unpadded).shape
    ct_x = op(
        "slice",
        unpadded,
        start_indices=[0] * rank,
        limit_indices=list(ushape),
        strides=[i + 1 for i in interior],
    )
    ct_v = None
    if is_linear(v):
        ct_v = sub(reduce_sum(ct, range(rank)), reduce_sum(ct_x, range(rank)))
    return [ct_x if is_linear(x) else None, ct_v]


def _no_operands_jvp(name):
    def rule(ctx, primals, tangents, attrs, regions):
        outs = ops(name, *primals, regions=regions, **attrs)
        return outs, [Zero(aval(o)) for o in outs]

    defjvp(name)(rule)


# ops without operands: their value is a constant, so their derivative is zero
_no_operands_jvp("constant")
_no_operands_jvp("iota")
