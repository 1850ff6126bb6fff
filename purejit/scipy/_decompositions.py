"""polar, qr_multiply and eigh_tridiagonal of `jax.scipy.linalg`, composed from
purejit's QR (and its Householder form), Cholesky, triangular solves and eigh.

- polar(a, side, method='qdwh'): the QR-based dynamically weighted Halley iteration
  (Nakatsukasa, Bai and Gygi, SIAM J. Matrix Anal. Appl. 31, 2010), as JAX runs it: a is
  scaled by 1 / sqrt(||a||_1 ||a||_inf); the weights (a_k, b_k, c_k) follow from the lower
  bound l_0 = eps of the smallest singular value on the host, each step being a QR update
  while c_k > 100 and a Cholesky update after it; then Cholesky steps with the Halley weights
  (3, 1, 3) until ||U_k - U_(k-1)||_F <= (5 eps)^(1/3) or max_iterations (10) steps in all;
  U is polished by one Newton-Schulz step and H = (U^H a + (U^H a)^H) / 2.
  method='svd' takes U = u vh and H = v s vh (right) or u s u^H (left) from the SVD.
- qr_multiply(a, c, mode): Q c or c Q with the reduced Q of a, by LAPACK's ormqr on geqrf's
  reflectors without forming Q, as JAX computes it.
- eigh_tridiagonal(d, e): the eigenvalues by bisection on Sturm sequence counts, all in
  parallel (LAPACK's pivmin safeguard, tol as JAX's), over the Gershgorin interval; the
  eigenvectors, when asked, from the dense symmetric eigensolver on the tridiagonal matrix
  (JAX runs inverse iteration from random start vectors seeded by `key`; the vectors agree up
  to sign, and `key` is not needed here).
"""

from __future__ import annotations

import numpy as np

import purejit.numpy as jnp
from purejit import lax
from purejit.lax import linalg as lax_linalg
from purejit.lax.scan import scan
from purejit.numpy import linalg as np_linalg


def _inexact(*xs):
    out = [jnp.asarray(x) for x in xs]
    dt = jnp.result_type(*out)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = jnp.result_type(dt, jnp.float32)
    return [o.astype(dt) for o in out]


def _mH(x):
    return jnp.conj(jnp.swapaxes(x, -1, -2))


# ---- polar ------------------------------------------------------------------------------------

_CHOLESKY_CUTOFF = 100


def _qdwh_schedule(eps: float, max_iterations: int):
    """The (a, b, c) weights of the dynamically weighted steps, from l_0 = eps."""
    tol_l = 10.0 * eps / 2.0
    low, steps = eps, []
    while low + tol_l < 1 and len(steps) < max_iterations:
        l2 = low * low
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** 0.5
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** 0.5
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        low = low * (a + b * l2) / (1 + c * l2)
        steps.append((a, b, c))
    return steps


def _qr_step(u, a, b, c):
    # U <- (b/c) U + (a - b/c) / sqrt(c) Q1 Q2^H, [sqrt(c) U; I] = [Q1; Q2] R
    n = u.shape[-1]
    e = b / c
    y = jnp.concatenate([np.sqrt(c) * u, jnp.eye(n, dtype=u.dtype)], axis=-2)
    q, _ = lax_linalg.qr(y, full_matrices=False)
    q1, q2 = q[..., : u.shape[-2], :], q[..., u.shape[-2] :, :]
    return e * u + (a - e) / np.sqrt(c) * (q1 @ _mH(q2))


def _cholesky_step(u, a, b, c):
    # U <- (b/c) U + (a - b/c) U (I + c U^H U)^-1
    n = u.shape[-1]
    e = b / c
    x = c * (_mH(u) @ u) + jnp.eye(n, dtype=u.dtype)
    y = lax_linalg.cholesky(x, symmetrize_input=False)
    z = lax_linalg.triangular_solve(y, _mH(u), left_side=True, lower=True)
    z = lax_linalg.triangular_solve(y, z, left_side=True, lower=True, transpose_a=True,
                                    conjugate_a=True)  # fmt: skip
    return e * u + (a - e) * _mH(z)


def _qdwh(x, eps, max_iterations: int):
    eps = float(np.finfo(x.dtype).eps) if eps is None else float(eps)
    one_norm = jnp.max(jnp.sum(jnp.abs(x), axis=-2), axis=-1)
    inf_norm = jnp.max(jnp.sum(jnp.abs(x), axis=-1), axis=-1)
    scale = jnp.where(one_norm == 0, 1, lax.rsqrt(one_norm) * lax.rsqrt(inf_norm))
    u = x * scale[..., None, None].astype(x.dtype)
    steps = _qdwh_schedule(eps, max_iterations)
    tol_norm = (10.0 * eps / 2.0) ** (1 / 3)
    not_converged = jnp.asarray(True)
    for a, b, c in steps:
        prev = u
        if c > _CHOLESKY_CUTOFF:
            u = _qr_step(u, a, b, c)
        else:
            u = _cholesky_step(u, a, b, c)
            not_converged = jnp.max(jnp.sqrt(jnp.sum(jnp.abs(u - prev) ** 2, (-2, -1)))) > tol_norm

    def cond(state):
        k, _, going = state
        return going & (k < max_iterations)

    def body(state):
        k, u, _ = state
        new = _cholesky_step(u, 3.0, 1.0, 3.0)
        going = jnp.max(jnp.sqrt(jnp.sum(jnp.abs(new - u) ** 2, (-2, -1)))) > tol_norm
        return k + 1, new, going

    _, u, _ = lax.while_loop(cond, body, (jnp.asarray(len(steps)), u, not_converged))
    u = 1.5 * u - 0.5 * u @ (_mH(u) @ u)
    h = _mH(u) @ x
    return u, (h + _mH(h)) / 2


def polar(a, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None):  # fmt: skip
    """The polar decomposition a = U P (side='right') or a = P U (side='left').

    Args:
        a: array of shape (..., m, n).
        side: 'right' or 'left'.
        method: 'qdwh' (m >= n for side='right', m < n for side='left') or 'svd'.
        eps: the QDWH convergence tolerance (the dtype's epsilon by default).
        max_iterations: the most QDWH steps (10 by default).

    Returns:
        (unitary, posdef).
    """
    if side not in ("left", "right"):
        raise ValueError(f"side={side!r} is not implemented: use 'left' or 'right'")
    (a,) = _inexact(a)
    if a.ndim < 2:
        raise ValueError(f"polar: expected a matrix, got shape {a.shape}")
    m, n = a.shape[-2:]
    if method == "qdwh":
        iters = 10 if max_iterations is None else int(max_iterations)
        if m >= n and side == "right":
            return _qdwh(a, eps, iters)
        if m < n and side == "left":
            u, h = _qdwh(_mH(a), eps, iters)
            return _mH(u), _mH(h)
        raise NotImplementedError(
            "method='qdwh' only supports mxn matrices where m < n where side='right' and "
            f"m >= n side='left', got {a.shape} with side={side!r}"
        )
    if method != "svd":
        raise ValueError(f"Unknown polar decomposition method {method}.")
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    s = s.astype(a.dtype)
    unitary = u @ vh
    if side == "right":
        return unitary, (_mH(vh) * s[..., None, :]) @ vh
    return unitary, (u * s[..., None, :]) @ _mH(u)


# ---- qr_multiply ------------------------------------------------------------------------------


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):  # fmt: skip
    """The QR decomposition of a and the product of its Q with c.

    Args:
        a: array of shape (..., M, N).
        c: (..., K, P) for mode='left' (K = min(M, N)), (..., P, M) for mode='right'; a 1-D c
            is a column (left) or row (right) vector and the result is 1-D too. The batch
            dimensions of a and c broadcast.
        mode: 'left' (Q @ c) or 'right' (c @ Q).
        pivoting: column pivoting (LAPACK geqp3), not supported.
        conjugate: use conj(Q) instead of Q.

    Returns:
        (Q @ c or c @ Q, R) with R of shape (..., K, N).
    """
    a, c = _inexact(a, c)
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    if pivoting:
        raise NotImplementedError(
            "scipy.linalg.qr_multiply: pivoting=True needs column-pivoted QR (LAPACK geqp3), "
            "which purejit does not have; use pivoting=False"
        )
    onedim = c.ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(
            f"Array shapes are not compatible for Q @ c operation: a has shape {a.shape} "
            f"so Q has {k} columns, but c has {c.shape[-2]} rows (expected {k})."
        )
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(
            f"Array shapes are not compatible for c @ Q operation: a has shape {a.shape} "
            f"so Q has {m} rows, but c has {c.shape[-1]} columns (expected {m})."
        )
    batch = jnp.broadcast_shapes(a.shape[:-2], c.shape[:-2])
    a = jnp.broadcast_to(a, batch + a.shape[-2:])
    c = jnp.broadcast_to(c, batch + c.shape[-2:])
    # Householder form and LAPACK's ormqr, as JAX (not differentiable there either)
    h, taus = lax_linalg.geqrf(a)
    if m > n and mode == "left":  # Q's columns past k meet zero rows of c
        c = jnp.concatenate([c, jnp.zeros(c.shape[:-2] + (m - k, c.shape[-1]), c.dtype)], -2)
    if conjugate:  # c conj(Q) = (Q^H c^T)^T: transpose c and multiply from the other side
        c = jnp.swapaxes(c, -1, -2)
    out = lax_linalg.ormqr(h, taus, c, left=(mode == "left") != conjugate, transpose=conjugate)
    if conjugate:
        out = jnp.swapaxes(out, -1, -2)
    if mode == "right":
        out = out[..., :k]
    if onedim:
        out = out.ravel()
    return out, jnp.triu(h[..., :k, :])


# ---- eigh_tridiagonal -------------------------------------------------------------------------


def _sturm_counts(alpha, beta_sq, pivmin, perturb, x):
    """For each shift x, the number of eigenvalues of the tridiagonal matrix below x."""
    q = alpha[0] - x
    count = jnp.where(q < 0, 1, 0).astype(np.int32)
    q = jnp.where(alpha[0] == x, perturb, q)

    def step(carry, ab):
        q, count = carry
        a_i, b_sq = ab
        q = a_i - b_sq / q - x
        low = q <= pivmin
        return (jnp.where(low, jnp.minimum(q, -pivmin), q), count + low.astype(np.int32)), None

    (_, count), _ = scan(step, (q, count), (alpha[1:], beta_sq))
    return count


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol: float | None = None, key=None):  # fmt: skip
    """Eigenvalues (and eigenvectors) of the symmetric tridiagonal matrix with diagonal d and
    off-diagonal e.

    Args:
        d: real array of shape (n,).
        e: array of shape (n - 1,).
        eigvals_only: return only the eigenvalues.
        select: 'a' (all) or 'i' (indices select_range[0] .. select_range[1]).
        select_range: the index range for select='i'.
        tol: the absolute tolerance of the bisection.
        key: accepted for JAX's signature (JAX seeds inverse iteration with it).

    Returns:
        The eigenvalues, ascending, or (eigenvalues, eigenvectors as columns).
    """
    alpha, beta = jnp.asarray(d), jnp.asarray(e)
    supported = (np.float32, np.float64, np.complex64, np.complex128)
    if alpha.dtype != beta.dtype:
        raise TypeError("diagonal and off-diagonal values must have same dtype, "
                        f"got {alpha.dtype} and {beta.dtype}")  # fmt: skip
    if alpha.dtype not in supported:
        raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                        f"jax.scipy.linalg.eigh_tridiagonal, got {alpha.dtype} and "
                        f"{beta.dtype}")  # fmt: skip
    n = alpha.shape[0]
    if n <= 1:
        vals = jnp.real(alpha)
        return vals if eigvals_only else (vals, jnp.eye(n, dtype=alpha.dtype))
    alpha = jnp.real(alpha)
    beta_sq = jnp.real(beta * jnp.conj(beta))
    beta_abs = jnp.sqrt(beta_sq)
    row = jnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
    top, bottom = jnp.max(alpha + row), jnp.min(alpha - row)
    t_norm = jnp.maximum(jnp.abs(bottom), jnp.abs(top))
    finfo = np.finfo(alpha.dtype)
    safemin = max(1 / float(finfo.max), (1 + float(finfo.eps)) * float(finfo.tiny))
    pivmin = safemin * jnp.maximum(1, jnp.max(beta_sq))
    perturb = jnp.square(float(finfo.eps) * beta_abs[0])
    abs_tol = float(finfo.eps) * t_norm
    if tol is not None:
        abs_tol = jnp.maximum(tol, abs_tol)
    if select == "a":
        targets = jnp.arange(n, dtype=np.int32)
    elif select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        if select_range[0] > select_range[1]:
            raise ValueError("Got empty index range in select_range.")
        targets = jnp.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
    elif select == "v":
        raise NotImplementedError(
            "eigh_tridiagonal(..., select='v') is not implemented: the number of eigenvalues "
            "in a value range is data-dependent, so the result shape is (as in jax.scipy)"
        )
    else:
        raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
    fudge = 2.1
    slack = n * fudge * float(finfo.eps) * t_norm
    lower = jnp.broadcast_to(bottom - slack - 2 * fudge * pivmin, targets.shape)
    upper = jnp.broadcast_to(top + slack + fudge * pivmin, targets.shape)

    def cond(state):
        i, lo, hi = state
        return (i < finfo.nmant + 1) & (abs_tol < jnp.max(hi - lo))

    def body(state):
        i, lo, hi = state
        mid = 0.5 * (lo + hi)
        counts = _sturm_counts(alpha, beta_sq, pivmin, perturb, mid)
        return i + 1, jnp.where(counts <= targets, mid, lo), jnp.where(counts > targets, mid, hi)

    _, lower, upper = lax.while_loop(cond, body, (jnp.asarray(0), lower, upper))
    vals = 0.5 * (lower + upper)
    if eigvals_only:
        return vals
    dense = jnp.diag(jnp.asarray(d)) + jnp.diag(jnp.conj(beta), -1) + jnp.diag(beta, 1)
    _, vecs = np_linalg.eigh(dense)
    return vals, jnp.take(vecs, targets, axis=1)
