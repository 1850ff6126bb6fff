"""JVP and transpose rules of the tridiagonal ops (`ir/ops/tridiagonal.py`), JAX's:

tridiagonal_solve  x = T^-1 b: x' = T^-1 (b' - T' x), T' the tridiagonal matrix of the
                   diagonals' tangents; linear in b, whose transpose solves with T^T
                   (dl^T = [0, du[:-1]], du^T = [dl[1:], 0]).
"""

from __future__ import annotations

import numpy as np

from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    add,
    aval,
    bcast,
    defjvp,
    deftranspose,
    instantiate,
    is_linear,
    mul,
    op,
    sub,
)


def _slice_last(x, axis_from_end: int, lo: int, hi: int):
    s = aval(x).shape
    r, ax = len(s), len(s) - axis_from_end
    start = [0] * r
    limit = list(s)
    start[ax], limit[ax] = lo, hi
    return op("slice", x, start_indices=start, limit_indices=limit, strides=[1] * r)


def _pad_last(x, axis_from_end: int, low: int, high: int):
    r = len(aval(x).shape)
    lo, hi = [0] * r, [0] * r
    lo[r - axis_from_end], hi[r - axis_from_end] = low, high
    zero = np.zeros((), aval(x).dtype)
    return op("pad", x, zero, edge_padding_low=lo, edge_padding_high=hi, interior_padding=[0] * r)


def _columns(v, shape):
    """A diagonal [..., k] spread over the columns of a [..., k, n] block."""
    return bcast(v, shape, tuple(range(len(shape) - 1)))


def _product(dl, d, du, x):
    """T x for the tridiagonal T of (dl, d, du), as JAX's rule writes it: dl[0] and du[-1]
    are never read."""
    s = aval(x).shape
    m = s[-2]
    y = mul(_columns(d, s), x)
    if m == 1:
        return y
    inner = (*s[:-2], m - 1, s[-1])
    below = mul(_columns(_slice_last(dl, 1, 1, m), inner), _slice_last(x, 2, 0, m - 1))
    above = mul(_columns(_slice_last(du, 1, 0, m - 1), inner), _slice_last(x, 2, 1, m))
    return add(add(y, _pad_last(below, 2, 1, 0)), _pad_last(above, 2, 0, 1))


@defjvp("tridiagonal_solve")
def _tridiagonal_solve_jvp(ctx, primals, tangents, attrs, regions):
    *diags, _ = primals
    *ddiags, db = tangents
    x = op("tridiagonal_solve", *primals)
    if all(isinstance(t, Zero) for t in ddiags):
        rhs = db
    else:
        dts = [instantiate(t, aval(p)) for t, p in zip(ddiags, diags)]
        rhs = sub(db, _product(*dts, x))
    return [x], [op("tridiagonal_solve", *diags, instantiate(rhs, aval(x)))]


@deftranspose("tridiagonal_solve")
def _tridiagonal_solve_t(cts, operands, attrs, regions):
    (ct,), (dl, d, du, b) = cts, operands
    if any(is_linear(v) for v in (dl, d, du)):
        raise NotImplementedError("tridiagonal_solve is not linear in its diagonals")
    if isinstance(ct, Zero):
        return [None, None, None, Zero(aval(b))]
    m = aval(d).shape[-1]
    dl_t = _pad_last(_slice_last(du, 1, 0, m - 1), 1, 1, 0)
    du_t = _pad_last(_slice_last(dl, 1, 1, m), 1, 0, 1)
    return [None, None, None, op("tridiagonal_solve", dl_t, d, du_t, ct)]


LINEAR_OPS.add("tridiagonal_solve")
