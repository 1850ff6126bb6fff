"""purejit.scipy.linalg: `jax.scipy.linalg`'s factor-and-solve functions and block_diag, on
`purejit.lax.linalg` (LAPACK / cuSOLVER, see `purejit/backend/lowering/linalg.py`); the
decompositions (_decompositions), the matrix functions (_matrix_functions) and the special
matrices (_matrices) are re-exported from their modules.
"""

from __future__ import annotations

import numpy as np

from purejit import lax
from purejit.lax import linalg as lax_linalg
from purejit.numpy import linalg as np_linalg
from purejit.numpy._core import _lift, astype
from purejit.numpy._core import result_type
from purejit.numpy._creation import eye, tril, triu, zeros
from purejit.numpy._linalg import matmul
from purejit.numpy._core import broadcast_to
from purejit.numpy._shape import concatenate, expand_dims, swapaxes
from purejit.scipy._decompositions import eigh_tridiagonal, polar, qr_multiply
from purejit.scipy._matrix_functions import expm, expm_frechet
from purejit.scipy._schur_forms import funm, hessenberg, rsf2csf, schur, solve_sylvester, sqrtm

__all__ = [
    "block_diag",
    "cho_factor",
    "cho_solve",
    "eigh_tridiagonal",
    "expm",
    "expm_frechet",
    "funm",
    "hessenberg",
    "lu",
    "lu_factor",
    "lu_solve",
    "polar",
    "qr_multiply",
    "rsf2csf",
    "schur",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
]


def _inexact(name: str, *xs):
    arrs = [_lift(x) for x in xs]
    dt = result_type(*arrs)
    if dt.kind not in "fc":
        dt = result_type(dt, 1.0)
    out = [astype(a, dt) for a in arrs]
    return out if len(xs) > 1 else out[0]


def _H(x):
    return lax_linalg.conj(swapaxes(x, -1, -2))


def _trans(trans) -> tuple[bool, bool]:
    if trans in (0, "N"):
        return False, False
    if trans in (1, "T"):
        return True, False
    if trans in (2, "C"):
        return True, True
    raise ValueError(f"scipy.linalg: invalid trans value {trans!r} (0/'N', 1/'T' or 2/'C')")


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b=False, debug=None, check_finite=True):  # fmt: skip
    """Solve op(a) x = b for triangular a (op: identity, transpose or adjoint by trans)."""
    a, b = _inexact("solve_triangular", a, b)
    transpose_a, conjugate_a = _trans(trans)
    vector = b.ndim == a.ndim - 1
    if vector:
        b = expand_dims(b, -1)
    out = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower,
                                      transpose_a=transpose_a, conjugate_a=conjugate_a,
                                      unit_diagonal=unit_diagonal)  # fmt: skip
    return out[..., 0] if vector else out


def cho_factor(a, lower: bool = False, overwrite_a=False, check_finite=True):
    """(c, lower): the Cholesky factor of a (lower, or upper when not `lower`) and the flag."""
    a = _inexact("cho_factor", a)
    return (np_linalg.cholesky(a, upper=not lower), lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve a x = b given cho_factor(a)."""
    c, lower = c_and_lower
    c, b = _inexact("cho_solve", c, b)
    vector = b.ndim == c.ndim - 1
    if vector:
        b = expand_dims(b, -1)
    b = broadcast_to(b, c.shape[:-2] + b.shape[-2:])
    y = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower,
                                    transpose_a=not lower, conjugate_a=not lower)  # fmt: skip
    x = lax_linalg.triangular_solve(c, y, left_side=True, lower=lower,
                                    transpose_a=lower, conjugate_a=lower)  # fmt: skip
    return x[..., 0] if vector else x


def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv): LU with partial pivoting, piv the 0-based row swaps (int32)."""
    a = _inexact("lu_factor", a)
    lu_, pivots, _ = lax_linalg.lu(a)
    return lu_, pivots


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve a x = b (or a^T, a^H by trans) given lu_factor(a)."""
    lu_, piv = lu_and_piv
    lu_, b = _inexact("lu_solve", lu_, b)
    m = lu_.shape[-1]
    perm = lax_linalg.lu_pivots_to_permutation(piv, m)
    vector = b.ndim == lu_.ndim - 1
    if vector:
        b = expand_dims(b, -1)
    batch = lu_.shape[:-2]
    b = broadcast_to(b, batch + b.shape[-2:])
    transpose, conj = _trans(trans)
    if not transpose:
        x = np_linalg._permute_rows(b, broadcast_to(perm, batch + (m,)))
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
    else:
        x = lax_linalg.triangular_solve(lu_, b, left_side=True, lower=False,
                                        transpose_a=True, conjugate_a=conj)  # fmt: skip
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True,
                                        transpose_a=True, conjugate_a=conj)  # fmt: skip
        inverse = lax.sort_key_val(perm, lax.broadcasted_iota(np.int32, perm.shape, perm.ndim - 1),
                                   dimension=-1)[1]  # fmt: skip
        x = np_linalg._permute_rows(x, broadcast_to(inverse, batch + (m,)))
    return x[..., 0] if vector else x


def lu(a, permute_l: bool = False, overwrite_a=False, check_finite=True):
    """(p, l, u) with a = p @ l @ u (or (p @ l, u) when permute_l)."""
    a = _inexact("lu", a)
    lu_, _, perm = lax_linalg.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    l_ = tril(lu_[..., :, :k], -1) + eye(m, k, dtype=a.dtype)
    u = triu(lu_[..., :k, :])
    rows = lax.broadcasted_iota(np.int32, perm.shape + (m,), perm.ndim)
    p = astype(expand_dims(perm, -1) == rows, a.dtype)  # p[..., i, j] = (perm[i] == j)
    p = swapaxes(p, -1, -2)
    if permute_l:
        return matmul(p, l_), u
    return p, l_, u


def block_diag(*arrs):
    """The block-diagonal matrix of the given 0-, 1- or 2-D arrays."""
    if not arrs:
        return zeros((1, 0))
    mats = [_lift(a) for a in arrs]
    dt = result_type(*mats)
    blocks = []
    for a in mats:
        if a.ndim > 2:
            raise ValueError("scipy.linalg.block_diag: arguments must have dimension <= 2")
        while a.ndim < 2:
            a = expand_dims(a, 0)
        blocks.append(astype(a, dt))
    cols = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [zeros((r, left), dt), b, zeros((r, cols - left - c), dt)]
        rows.append(concatenate(parts, axis=1))
        left += c
    return concatenate(rows, axis=0)


from purejit.scipy._matrices import (  # noqa: E402, F401
    cholesky,
    circulant,
    companion,
    convolution_matrix,
    det,
    dft,
    eigh,
    fiedler,
    fiedler_companion,
    hadamard,
    hankel,
    helmert,
    hilbert,
    inv,
    invhilbert,
    invpascal,
    leslie,
    pascal,
    qr,
    solve,
    svd,
    toeplitz,
)  # fmt: skip
