"""The Schur and Hessenberg forms of `jax.scipy.linalg` and what is computed from them:
schur, hessenberg, rsf2csf, sqrtm, funm, solve_sylvester.

schur and hessenberg bind the IR ops of the same names (LAPACK gees, and gehrd with orgqr,
on CPU; JAX has no GPU lowering of either, nor a derivative). The rest compose them:

- rsf2csf(T, Z): Givens rotations that split each 2 x 2 block of a real Schur form
  (bottom to top), as scipy and jax.scipy; the rotation takes the block's eigenvalue
  (a + d)/2 + sqrt(((a - d)/2)^2 + b c) (principal root).
- sqrtm(A): Bjorck and Hammarling's method: the complex Schur form T, the upper triangular
  U with U^2 = T filled one superdiagonal at a time
  (U_ij = (T_ij - sum_{i<k<j} U_ik U_kj) / (U_ii + U_jj), 0 where the numerator is 0), then
  Z U Z^H. The result is complex, as jax.scipy's.
- funm(A, func): the Schur-Parlett recurrence (Golub and Van Loan, algorithm 11.1.1) on the
  complex Schur form: F_ii = func(T_ii), then
  F_ij = (T_ij (F_jj - F_ii) + sum_{i<k<j} (T_ik F_kj - F_ik T_kj)) / (T_jj - T_ii) one
  superdiagonal at a time (the division skipped where T_jj == T_ii, as jax.scipy).
- solve_sylvester(A, B, C): A X + X B = C. 'schur' (Bartels-Stewart): R = U^H A U and
  S = V^H B^H V upper triangular, Y solved column by column from the last (each column an
  upper triangular solve with R + conj(S_jj)), X = U Y V^H; 'eigen': the eigendecompositions
  of A and B. NaN where some eigenvalue sum |l_A + l_B| < tol, as jax.scipy.
"""

from __future__ import annotations

import numpy as np

import purejit.numpy as jnp
from purejit.lax import linalg as lax_linalg
from purejit.numpy import linalg as np_linalg
from purejit.tracing import bind


def _inexact(*xs):
    out = [jnp.asarray(x) for x in xs]
    dt = jnp.result_type(*out)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = jnp.result_type(dt, jnp.float32)
    return [o.astype(dt) for o in out]


def _complex_dtype(dt):
    return np.dtype(np.complex128 if dt in (np.float64, np.complex128) else np.complex64)


def _square(name: str, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"scipy.linalg.{name}: expected square matrices, got shape {a.shape}")
    return a


def _mH(x):
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def schur(a, output: str = "real"):
    """The Schur decomposition a = Z T Z^H (CPU only, as in JAX).

    Args:
        a: array of shape (..., n, n).
        output: 'real' (T quasi upper triangular for real a) or 'complex' (T upper
            triangular).

    Returns:
        (T, Z).
    """
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    (a,) = _inexact(a)
    a = _square("schur", a)
    if output == "complex":
        a = a.astype(_complex_dtype(a.dtype))
    t, z = bind("schur", a)
    return t, z


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):  # fmt: skip
    """The Hessenberg form a = Q H Q^H (CPU only, as in JAX).

    Args:
        a: array of shape (..., n, n).
        calc_q: also return Q.

    Returns:
        H, or (H, Q) when calc_q.
    """
    (a,) = _inexact(a)
    a = _square("hessenberg", a)
    h, q = bind("hessenberg", a)
    return (h, q) if calc_q else h


def _set_block(x, rows: slice, cols: slice, new, where):
    """x with x[..., rows, cols] replaced by `new` in the batch elements where `where`."""
    old = x[..., rows, cols]
    return x.at[..., rows, cols].set(jnp.where(where[..., None, None], new, old))


def rsf2csf(T, Z, check_finite: bool = True):
    """Convert a real Schur form (T, Z) into the complex Schur form.

    Args:
        T, Z: arrays of shape (..., n, n) from schur(a, output='real').

    Returns:
        (T, Z), complex, T upper triangular.
    """
    T, Z = jnp.asarray(T), jnp.asarray(Z)
    if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
        raise ValueError("Input 'T' must be square.")
    if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
        raise ValueError("Input 'Z' must be square.")
    if T.shape[-1] != Z.shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
    T, Z = _inexact(T, Z)
    cdt = _complex_dtype(T.dtype)
    T, Z = T.astype(cdt), Z.astype(cdt)
    n = T.shape[-1]
    eps = float(np.finfo(cdt).eps)
    for m in range(n - 1, 0, -1):
        a, b = T[..., m - 1, m - 1], T[..., m - 1, m]
        c, d = T[..., m, m - 1], T[..., m, m]
        split = jnp.abs(c) > eps * (jnp.abs(a) + jnp.abs(d))
        half = (a - d) / 2
        mu = half + jnp.sqrt(half * half + b * c)  # an eigenvalue of the block, minus d
        r = jnp.sqrt(jnp.abs(mu) ** 2 + jnp.abs(c) ** 2).astype(cdt)
        r = jnp.where(r == 0, jnp.ones_like(r), r)
        cs, sn = mu / r, c / r
        g = jnp.stack([jnp.stack([jnp.conj(cs), jnp.conj(sn)], -1), jnp.stack([-sn, cs], -1)], -2)
        rows, cols = slice(m - 1, m + 1), slice(m - 1, n)
        T = _set_block(T, rows, cols, g @ T[..., rows, cols], split)
        rows, cols = slice(0, m + 1), slice(m - 1, m + 1)
        T = _set_block(T, rows, cols, T[..., rows, cols] @ _mH(g), split)
        Z = _set_block(Z, slice(0, n), cols, Z[..., :, cols] @ _mH(g), split)
        T = T.at[..., m, m - 1].set(0)
    return T, Z


def _superdiagonal(n: int, d: int):
    return np.eye(n, k=d, dtype=bool)


def sqrtm(A, blocksize: int = 1):
    """The principal matrix square root (complex), by the Schur method.

    Args:
        A: array of shape (..., n, n).
        blocksize: must be 1 (jax.scipy supports no other).

    Returns:
        X with X @ X = A, complex.
    """
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    (A,) = _inexact(A)
    A = _square("sqrtm", A)
    T, Z = schur(A, output="complex")
    n = T.shape[-1]
    diag = jnp.sqrt(jnp.diagonal(T, axis1=-2, axis2=-1))
    U = diag[..., :, None] * jnp.eye(n, dtype=T.dtype)
    denom = diag[..., :, None] + diag[..., None, :]
    for d in range(1, n):
        strict = U - diag[..., :, None] * jnp.eye(n, dtype=T.dtype)
        s = strict @ strict
        num = T - s
        safe = jnp.where(denom == 0, jnp.ones_like(denom), denom)
        val = jnp.where(num == 0, jnp.zeros_like(num), num / safe)
        U = jnp.where(_superdiagonal(n, d), val, U)
    return Z @ U @ _mH(Z)


def funm(A, func, disp: bool = True):
    """The matrix function of the scalar function `func` at A (Schur-Parlett).

    Args:
        A: a square matrix.
        func: a vectorised scalar function, applied to the eigenvalues.
        disp: return only F (True), or (F, error estimate) (False).

    Returns:
        F (complex), or (F, err) when disp is False.
    """
    (A,) = _inexact(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError("expected square array_like input")
    T, Z = schur(A, output="complex")
    n = T.shape[-1]
    tdiag = jnp.diagonal(T)
    F = jnp.diag(jnp.asarray(func(tdiag)).astype(T.dtype))
    strict_t = jnp.triu(T, 1)
    den = tdiag[None, :] - tdiag[:, None]  # T_jj - T_ii
    fdiag = jnp.diagonal(F)
    for d in range(1, n):
        strict_f = jnp.triu(F, 1)
        s = T * (fdiag[None, :] - fdiag[:, None]) + strict_t @ strict_f - strict_f @ strict_t
        s = jnp.where(den != 0, s / jnp.where(den == 0, 1, den), s)
        F = jnp.where(_superdiagonal(n, d), s, F)
    F = Z @ F @ _mH(Z)
    if disp:
        return F
    tol = float(np.finfo(T.dtype).eps)
    upper = np.triu(np.ones((n, n), bool), 1)
    minden = jnp.min(jnp.where(upper, jnp.abs(den), np.inf)) if n > 1 else jnp.asarray(np.inf)
    minden = jnp.where(minden == 0.0, tol, minden)
    norm1 = jnp.max(jnp.sum(jnp.abs(strict_t), axis=0))
    err = jnp.minimum(1, jnp.maximum(tol, (tol / minden) * norm1))
    return F, jnp.where(jnp.any(jnp.isinf(F)), np.inf, err)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """Solve the Sylvester equation A X + X B = C.

    Args:
        A: (..., m, m); B: (..., n, n); C: (..., m, n).
        method: 'schur' (Bartels-Stewart, CPU only as in JAX) or 'eigen'.
        tol: NaN is returned where some |eig(A)_i + eig(B)_j| < tol.

    Returns:
        X of C's shape (real for real C).
    """
    A, B, C = _inexact(A, B, C)
    m, n = C.shape[-2:]
    if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
        raise ValueError(
            f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\nB: {B.shape}\nC: {C.shape}"
        )
    batch = jnp.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
    A = jnp.broadcast_to(A, batch + (m, m))
    B = jnp.broadcast_to(B, batch + (n, n))
    C = jnp.broadcast_to(C, batch + (m, n))
    cdt = _complex_dtype(C.dtype)
    if method == "schur":
        R, U = schur(A, output="complex")
        S, V = schur(_mH(B), output="complex")
        F = _mH(U) @ C.astype(cdt) @ V
        s_diag = jnp.conj(jnp.diagonal(S, axis1=-2, axis2=-1))
        lower = _mH(S)  # Y B' = Y S^H: column j takes the columns k > j
        cols = [None] * n
        eye = jnp.eye(m, dtype=cdt)
        for j in range(n - 1, -1, -1):
            rhs = F[..., :, j]
            for k in range(j + 1, n):
                rhs = rhs - cols[k] * lower[..., k, j][..., None]
            shifted = R + s_diag[..., j, None, None] * eye
            cols[j] = lax_linalg.triangular_solve(shifted, rhs[..., :, None], left_side=True,
                                                  lower=False)[..., 0]  # fmt: skip
        Y = jnp.stack(cols, axis=-1)
        X = U @ Y @ _mH(V)
        eig_a, eig_b = jnp.diagonal(R, axis1=-2, axis2=-1), s_diag
    elif method == "eigen":
        ra, ua = np_linalg.eig(A)
        rb, ub = np_linalg.eig(B)
        F = np_linalg.solve(ua, C.astype(cdt) @ ub)
        X = ua @ (F / (ra[..., :, None] + rb[..., None, :])) @ np_linalg.inv(ub)
        eig_a, eig_b = ra, rb
    else:
        raise ValueError(
            f'Unrecognized method {method}. The two valid methods are either "schur" or "eigen".'
        )
    if C.dtype.kind != "c":
        X = jnp.real(X)
    near = jnp.abs(eig_a[..., :, None] + eig_b[..., None, :]) < tol
    bad = jnp.any(near, axis=(-2, -1))
    return jnp.where(bad[..., None, None], jnp.full_like(X, np.nan), X)
