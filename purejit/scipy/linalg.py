"""purejit.scipy.linalg: `jax.scipy.linalg`'s factor-and-solve functions, expm and
block_diag, on `purejit.lax.linalg` (LAPACK / cuSOLVER, see
`purejit/backend/lowering/linalg.py`).

expm is the scaling-and-squaring Padé approximant of degree 13 (Higham 2005): the matrix is
scaled by 2^-s with s chosen from its 1-norm, the [13/13] approximant solved with LU, and
the result squared s times in a while loop (each batch element stops at its own s).
"""

from __future__ import annotations

import numpy as np

from purejit import lax
from purejit.lax import linalg as lax_linalg
from purejit.numpy import linalg as np_linalg
from purejit.numpy._core import _lift, abs, astype, ceil, log2, maximum, where
from purejit.numpy._core import result_type
from purejit.numpy._creation import eye, tril, triu, zeros
from purejit.numpy._linalg import matmul
from purejit.numpy._reductions import max as _max
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._core import broadcast_to
from purejit.numpy._shape import concatenate, expand_dims, swapaxes

__all__ = [
    "block_diag",
    "cho_factor",
    "cho_solve",
    "expm",
    "lu",
    "lu_factor",
    "lu_solve",
    "solve_triangular",
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


_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)  # fmt: skip
_THETA13 = 5.371920351148152


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential of each square matrix of A."""
    A = _inexact("expm", A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"scipy.linalg.expm: expected square matrices, got {list(A.shape)}")
    n = A.shape[-1]
    norm1 = _max(_sum(abs(A), axis=-2), axis=-1)
    real_t = norm1.dtype
    s = maximum(ceil(log2(norm1 / astype(_THETA13, real_t))), astype(0, real_t))
    s = where(norm1 == 0, astype(0, real_t), s)
    s = astype(s, np.int32)
    scale = astype(lax.pow(astype(2.0, real_t), astype(s, real_t)), A.dtype)
    A = A / expand_dims(expand_dims(scale, -1), -1)
    b = [astype(c, A.dtype) for c in _PADE13]
    ident = broadcast_to(eye(n, dtype=A.dtype), A.shape)
    A2 = matmul(A, A)
    A4 = matmul(A2, A2)
    A6 = matmul(A4, A2)
    U = matmul(A, matmul(A6, b[13] * A6 + b[11] * A4 + b[9] * A2)
               + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)  # fmt: skip
    V = matmul(A6, b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2
    V = V + b[0] * ident
    R = np_linalg.solve(V - U, V + U)
    steps = _max(s) if s.ndim else s
    s_b = expand_dims(expand_dims(s, -1), -1)

    def cond(carry):
        i, _ = carry
        return i < steps

    def body(carry):
        i, r = carry
        return i + 1, where(i < s_b, matmul(r, r), r)

    _, R = lax.while_loop(cond, body, (astype(0, np.int32), R))
    return R


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
