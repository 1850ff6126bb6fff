"""Tridiagonal ops.

tridiagonal_solve(dl, d, du, b) -> x
    Solves T x = b for each tridiagonal T given by its three diagonals, vectors [..., m]:
    dl[i] = T[i, i-1] (dl[0] unused), d[i] = T[i, i], du[i] = T[i, i+1] (du[m-1] unused);
    b and x are [..., m, n]; the leading dimensions are a batch, the same for every operand.
    Element types f32, f64, c64, c128. A singular T gives NaN in that batch element's x
    (LAPACK gtsv's info, as in JAX).
"""

from __future__ import annotations

import numpy as np
from purejit.ir.ops._util import nargs
from purejit.ir.ops.linalg import _LINALG_DTYPES, _matrix
from purejit.ir.registry import OpDef, fail, register


def _tridiagonal_solve_infer(types, attrs, regions):
    op = "tridiagonal_solve"
    nargs(op, types, 4)
    *diags, b = types
    _matrix(op, b, what="b")
    for name, t in zip(("dl", "d", "du"), diags):
        if t.dtype != b.dtype or t.shape != b.shape[:-1]:
            fail(op, f"{name} {t} must be a {b.dtype} vector per column of b {b}: shape "
                 f"{list(b.shape[:-1])}")  # fmt: skip
    if np.dtype(b.dtype) not in _LINALG_DTYPES:
        fail(op, f"b {b} must be f32, f64, c64 or c128")
    return [b]


def dense(dl: np.ndarray, d: np.ndarray, du: np.ndarray) -> np.ndarray:
    """The tridiagonal matrix of one set of diagonals."""
    return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


def _tridiagonal_solve_ref(args, attrs, regions, run):
    *diags, b = args
    if b.size == 0:
        return [b.copy()]

    def one(dl, d, du, rhs):
        t = dense(dl, d, du)
        wide = np.complex128 if np.iscomplexobj(t) else np.float64
        try:
            return np.linalg.solve(t.astype(wide), rhs.astype(wide)).astype(rhs.dtype)
        except np.linalg.LinAlgError:
            return np.full(rhs.shape, np.nan, rhs.dtype)

    # the diagonals have one dimension fewer than b: walk the batch here
    out = np.empty_like(b)
    for idx in np.ndindex(*b.shape[:-2]):
        out[idx] = one(*(x[idx] for x in diags), b[idx])
    return [out]


register(
    OpDef(
        "tridiagonal_solve",
        _tridiagonal_solve_infer,
        _tridiagonal_solve_ref,
        frozenset({"pure", "accumulates"}),
        doc="tridiagonal_solve(dl, d, du, b) -> x: T x = b, T tridiagonal",
    )
)
