"""`purejit.scipy.sparse.linalg`, as `jax.scipy.sparse.linalg`: the matrix-free Krylov solvers
`cg` (conjugate gradients), `bicgstab` (stabilised bi-conjugate gradients) and `gmres`
(restarted GMRES, its least-squares step solved at the end of each restart, 'batched', or
kept as a QR factorisation updated by Givens rotations, 'incremental').

Each works on pytrees: `b`, `x0` and what `A` and `M` return share one structure; `A` and `M`
are functions, square matrices, or objects with `@`. Every solve runs inside
`lax.custom_linear_solve`, so derivatives come from a second solve (implicit
differentiation), never from differentiating the iterations; they are accurate when both
solves converge. Tolerances follow SciPy's non-legacy rule,
`norm(residual) <= max(tol * norm(b), atol)`. The arithmetic (dot products at HIGHEST
precision, the order of updates, the breakdown tests) is JAX's, so results match JAX's
bit for bit where XLA compiles the same operations the same way.
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from purejit import dtypes, lax
from purejit import numpy as jnp
from purejit.lax._lift import convert
from purejit.runtime.array import Array
from purejit.scipy import linalg as sp_linalg
from purejit.tracing import Tracer
from purejit.tree_util import Partial, tree_leaves, tree_map, tree_reduce, tree_structure

__all__ = ["bicgstab", "cg", "gmres"]

_HIGHEST = lax.Precision.HIGHEST
_dot = functools.partial(jnp.dot, precision=_HIGHEST)
_vdot = functools.partial(jnp.vdot, precision=_HIGHEST)


# ---- vector algebra on pytrees ----------------------------------------------------------------


def _vdot_real_part(x, y):
    """Re(x^H y) without the real-imaginary cross terms: every use computes z^H M z for a
    Hermitian positive definite M, whose value is real."""
    result = _vdot(x.real, y.real)
    if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
        result += _vdot(x.imag, y.imag)
    return result


def _vdot_real_tree(x, y):
    return sum(tree_leaves(tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x, y):
    return sum(tree_leaves(tree_map(_vdot, x, y)))


def _norm(x):
    xs = tree_leaves(x)
    return jnp.sqrt(sum(map(_vdot_real_part, xs, xs)))


def _mul(scalar, tree):
    return tree_map(lambda leaf: scalar * leaf, tree)


def _add(x, y):
    return tree_map(operator.add, x, y)


def _sub(x, y):
    return tree_map(operator.sub, x, y)


def _lattice_type(tree):
    """The promoted dtype of a pytree's leaves and whether it is weak (JAX's
    `lattice_result_type`)."""
    return dtypes.result_type(*tree_leaves(tree), return_weak_type_flag=True)


@Partial
def _identity(x):
    return x


def _is_matrix(f) -> bool:
    return isinstance(f, (np.ndarray, Array, Tracer)) or (
        hasattr(f, "shape") and hasattr(f, "dtype") and hasattr(f, "__array__")
    )


def _normalize_matvec(f, what: str):
    """`f` as a function computing matrix-vector products."""
    if callable(f):
        return f
    if _is_matrix(f) or hasattr(f, "__matmul__"):
        shape = tuple(getattr(f, "shape", ()))
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(f"{what}: linear operator must be a square matrix, but has shape: "
                             f"{shape}")  # fmt: skip
        if _is_matrix(f):
            return functools.partial(_dot, f)
        return functools.partial(operator.matmul, f)
    raise TypeError(f"{what}: linear operator must be either a function or ndarray: {f!r}")


def _as_arrays(tree):
    """Every leaf of `tree` as an array (NumPy arrays and Python scalars are lifted; arrays
    and tracers pass through)."""
    return tree_map(jnp.asarray, tree)


def _shapes(tree):
    return [tuple(np.shape(leaf)) for leaf in tree_leaves(tree)]


# ---- conjugate gradients ----------------------------------------------------------------------


def _cg_solve(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):
    # the preconditioned CG recurrence; stops when |r|^2 <= max(tol^2 |b|^2, atol^2)
    bs = _vdot_real_tree(b, b)
    atol2 = jnp.maximum(jnp.square(tol) * bs, jnp.square(atol))

    def cond_fun(value):
        _, r, gamma, _, k = value
        rs = gamma.real if M is _identity else _vdot_real_tree(r, r)
        return (rs > atol2) & (k < maxiter)

    def body_fun(value):
        x, r, gamma, p, k = value
        Ap = A(p)
        alpha = gamma / _vdot_real_tree(p, Ap).astype(dtype)
        x_ = _add(x, _mul(alpha, p))
        r_ = _sub(r, _mul(alpha, Ap))
        z_ = M(r_)
        gamma_ = _vdot_real_tree(r_, z_).astype(dtype)
        beta_ = gamma_ / gamma
        p_ = _add(z_, _mul(beta_, p))
        return x_, r_, gamma_, p_, k + 1

    r0 = _sub(b, A(x0))
    p0 = z0 = M(r0)
    dtype = jnp.result_type(*tree_leaves(p0))
    gamma0 = _vdot_real_tree(r0, z0).astype(dtype)
    x_final, *_ = lax.while_loop(cond_fun, body_fun, (x0, r0, gamma0, p0, 0))
    return x_final


# ---- BiCGSTAB ---------------------------------------------------------------------------------


def _bicgstab_solve(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):
    # the preconditioned BiCGSTAB recurrence; k turns negative on breakdown (-10: rho = 0,
    # -11: omega = 0 or alpha = 0), which stops the loop
    bs = _vdot_real_tree(b, b)
    atol2 = jnp.maximum(jnp.square(tol) * bs, jnp.square(atol))

    def cond_fun(value):
        _, r, *_, k = value
        rs = _vdot_real_tree(r, r)
        return (rs > atol2) & (k < maxiter) & (k >= 0)

    def body_fun(value):
        x, r, rhat, alpha, omega, rho, p, q, k = value
        rho_ = _vdot_tree(rhat, r)
        beta = rho_ / rho * alpha / omega
        p_ = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
        phat = M(p_)
        q_ = A(phat)
        alpha_ = rho_ / _vdot_tree(rhat, q_)
        s = _sub(r, _mul(alpha_, q_))
        exit_early = _vdot_real_tree(s, s) < atol2
        shat = M(s)
        t = A(shat)
        omega_ = _vdot_tree(t, s) / _vdot_tree(t, t)
        pick = functools.partial(jnp.where, exit_early)
        x_ = tree_map(
            pick, _add(x, _mul(alpha_, phat)), _add(x, _add(_mul(alpha_, phat), _mul(omega_, shat)))
        )
        r_ = tree_map(pick, s, _sub(s, _mul(omega_, t)))
        k_ = jnp.where((omega_ == 0) | (alpha_ == 0), -11, k + 1)
        k_ = jnp.where(rho_ == 0, -10, k_)
        return x_, r_, rhat, alpha_, omega_, rho_, p_, q_, k_

    r0 = _sub(b, A(x0))
    one = convert(1, *_lattice_type(b))
    init = (x0, r0, r0, one, one, one, r0, r0, 0)
    x_final, *_ = lax.while_loop(cond_fun, body_fun, init)
    return x_final


# ---- the common driver of cg and bicgstab -----------------------------------------------------


def _isolve(solve_fn, name, A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None,
            check_symmetric=False):  # fmt: skip
    if x0 is None:
        x0 = tree_map(jnp.zeros_like, b)
    b, x0 = _as_arrays((b, x0))
    if maxiter is None:
        maxiter = 10 * sum(leaf.size for leaf in tree_leaves(b))  # SciPy's default
    A = _normalize_matvec(A, name)
    M = _identity if M is None else _normalize_matvec(M, name)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"{name}: x0 and b must have matching tree structure: "
                         f"{tree_structure(x0)} vs {tree_structure(b)}")  # fmt: skip
    if _shapes(x0) != _shapes(b):
        raise ValueError(f"{name}: arrays in x0 and b must have matching shapes: "
                         f"{_shapes(x0)} vs {_shapes(b)}")  # fmt: skip
    solve = functools.partial(solve_fn, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    # a real positive definite operator is symmetric, so cg's transpose solve is itself
    symmetric = check_symmetric and not any(jnp.iscomplexobj(leaf) for leaf in tree_leaves(b))
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
    return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve `A x = b` by conjugate gradients, as `jax.scipy.sparse.linalg.cg`.

    Args:
        A: a function computing `A(x)`, a square matrix, or an object with `@`; it must
            represent a Hermitian positive definite operator and return `b`'s structure.
        b: the right-hand side: an array or a pytree of arrays of any shapes.
        x0: the starting guess (`b`'s structure; zeros when None).
        tol, atol: stop when `norm(residual) <= max(tol * norm(b), atol)`.
        maxiter: the most iterations (10 times the size of `b` when None).
        M: a preconditioner approximating the inverse of `A` (function or matrix).
    Returns:
        `(x, None)`: the solution, of `b`'s structure, and a placeholder for convergence
        information (JAX's `info` is None too). Derivatives come from another `cg` solve.
    """
    return _isolve(_cg_solve, "cg", A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                   check_symmetric=True)  # fmt: skip


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve `A x = b` by stabilised bi-conjugate gradients, as
    `jax.scipy.sparse.linalg.bicgstab`.

    Args:
        A: a function computing `A(x)`, a square matrix, or an object with `@`; any
            (nonsymmetric) linear operator returning `b`'s structure.
        b: the right-hand side: an array or a pytree of arrays of any shapes.
        x0: the starting guess (`b`'s structure; zeros when None).
        tol, atol: stop when `norm(residual) <= max(tol * norm(b), atol)`.
        maxiter: the most iterations (10 times the size of `b` when None).
        M: a preconditioner approximating the inverse of `A` (function or matrix).
    Returns:
        `(x, None)`: the solution and a placeholder for convergence information.
        Derivatives come from another `bicgstab` solve.
    """
    return _isolve(_bicgstab_solve, "bicgstab", A, b, x0, tol=tol, atol=atol,
                   maxiter=maxiter, M=M)  # fmt: skip


# ---- GMRES: Arnoldi with classical Gram-Schmidt -----------------------------------------------


def _safe_normalize(x, thresh=None):
    """`(x / norm(x), norm(x))`, or zeros and 0 where the norm is at most `thresh` (the
    machine epsilon of the norm's dtype when None)."""
    norm = _norm(x)
    dtype, weak = _lattice_type(x)
    if thresh is None:
        thresh = dtypes.finfo(norm.dtype).eps
    thresh = jnp.asarray(thresh).astype(dtype).real
    use_norm = norm > thresh
    norm_cast = convert(norm, dtype, weak)
    normalized = tree_map(lambda y: jnp.where(use_norm, y / norm_cast, 0.0), x)
    return normalized, jnp.where(use_norm, norm, 0.0)


def _project_on_columns(Q, v):
    """`Q^H v` for the columns of Q (summed over the leaves)."""

    def project(X, y):
        # einsum('...n,...->n'): contract every leading axis
        axes = tuple(range(y.ndim))
        return lax.dot_general(X.conj(), y, ((axes, axes), ((), ())), precision=_HIGHEST)

    return tree_reduce(operator.add, tree_map(project, Q, v))


def _iterative_classical_gram_schmidt(Q, x, xnorm, max_iterations=2):
    """Orthogonalise `x` against Q's orthonormal columns, repeating while the remainder
    shrinks below `1/sqrt(2)` of its norm ("twice is enough"), at most `max_iterations` - 1
    more times. Returns `(q, r)`: the remainder and the overlaps with each column."""
    Q0 = tree_leaves(Q)[0]
    r = jnp.zeros(Q0.shape[-1], dtype=Q0.dtype)
    sqrt2 = jnp.sqrt(2.0)

    def body(carry):
        k, q, r, qnorm_scaled = carry
        h = _project_on_columns(Q, q)
        q = _sub(q, tree_map(lambda X: _dot(X, h), Q))
        r = _add(r, h)
        # the remainder's norm is needed only when another pass may follow
        _, qnorm = _safe_normalize(q)
        qnorm_scaled = jnp.where(k < max_iterations - 1, qnorm / sqrt2, qnorm_scaled)
        return k + 1, q, r, qnorm_scaled

    def cond(carry):
        k, _, r, qnorm_scaled = carry
        _, rnorm = _safe_normalize(r)
        return (k < max_iterations - 1) & (rnorm < qnorm_scaled)

    carry = body((0, x, r, xnorm / sqrt2))
    _, q, r, _ = lax.while_loop(cond, body, carry)
    return q, r


def _kth_arnoldi_iteration(k, A, M, V, H):
    """Step k of Arnoldi: column k + 1 of V becomes `M(A(V[:, k]))` orthonormalised against
    columns 0..k, and row k of H the overlaps (with the new vector's norm at k + 1). A norm
    below eps times the unorthogonalised norm is an invariant subspace (breakdown): the new
    vector is zero."""
    dtype, _ = _lattice_type(V)
    eps = dtypes.finfo(dtype).eps
    v = tree_map(lambda X: X[..., k], V)
    v = M(A(v))
    _, v_norm_0 = _safe_normalize(v)
    v, h = _iterative_classical_gram_schmidt(V, v, v_norm_0, max_iterations=2)
    unit_v, v_norm_1 = _safe_normalize(v, thresh=eps * v_norm_0)
    V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)
    h = h.at[k + 1].set(v_norm_1.astype(dtype))
    H = H.at[k, :].set(h)
    return V, H, v_norm_1 == 0.0


def _krylov_basis(unit_residual, restart):
    """The Krylov basis with room for `restart` more columns after the residual direction."""
    return tree_map(
        lambda x: jnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)), unit_residual
    )


# ---- GMRES: the incremental QR factorisation (Givens rotations) -------------------------------


def _rotate_vectors(H, i, cs, sn):
    x1, y1 = H[i], H[i + 1]
    H = H.at[i].set(cs.conj() * x1 - sn.conj() * y1)
    return H.at[i + 1].set(sn * x1 + cs * y1)


def _givens_rotation(a, b):
    """(cs, sn) of the rotation zeroing b against a (the smaller one over the larger keeps
    the quotient bounded)."""
    b_zero = abs(b) == 0
    a_lt_b = abs(a) < abs(b)
    t = -jnp.where(a_lt_b, a, b) / jnp.where(a_lt_b, b, a)
    r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
    cs = jnp.where(b_zero, 1, jnp.where(a_lt_b, r * t, r))
    sn = jnp.where(b_zero, 0, jnp.where(a_lt_b, r, r * t))
    return cs, sn


def _apply_givens_rotations(H_row, givens, k):
    """Apply the first k stored rotations to H_row, then make and apply the rotation that
    zeroes its element k + 1."""
    R_row = lax.fori_loop(0, k, lambda i, row: _rotate_vectors(row, i, *givens[i, :]), H_row)
    factors = _givens_rotation(R_row[k], R_row[k + 1])
    givens = givens.at[k, :].set(jnp.stack(factors))
    return _rotate_vectors(R_row, k, *factors), givens


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart of GMRES, keeping the QR factorisation of the Hessenberg matrix as the
    Arnoldi process runs, so the residual norm is known after each step and the restart
    ends early once it is below `ptol`."""
    V = _krylov_basis(unit_residual, restart)
    dtype = jnp.result_type(*tree_leaves(b))
    # eye, not zeros, keeps R nonsingular when the loop ends early
    R = jnp.eye(restart, restart + 1, dtype=dtype)
    givens = jnp.zeros((restart, 2), dtype=dtype)
    beta_vec = jnp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

    def cond(carry):
        k, err, *_ = carry
        return (k < restart) & (err > ptol)

    def step(carry):
        k, _, V, R, beta_vec, givens = carry
        V, H, _ = _kth_arnoldi_iteration(k, A, M, V, R)
        R_row, givens = _apply_givens_rotations(H[k, :], givens, k)
        R = R.at[k, :].set(R_row)
        beta_vec = _rotate_vectors(beta_vec, k, *givens[k, :])
        return k + 1, abs(beta_vec[k + 1]), V, R, beta_vec, givens

    carry = lax.while_loop(cond, step, (0, residual_norm, V, R, beta_vec, givens))
    _, _, V, R, beta_vec, _ = carry
    y = sp_linalg.solve_triangular(R[:, :-1].T, beta_vec[:-1])
    x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
    residual = M(_sub(b, A(x)))
    unit_residual, residual_norm = _safe_normalize(residual)
    return x, unit_residual, residual_norm


# ---- GMRES: the batched least-squares step ----------------------------------------------------


def _lstsq(a, b):
    # the normal equations through a Cholesky solve: cheaper than a general lstsq
    a2 = _dot(a.T.conj(), a)
    b2 = _dot(a.T.conj(), b)
    return sp_linalg.solve(a2, b2, assume_a="pos")


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart of GMRES: the whole Arnoldi process (stopping early only on breakdown),
    then the least-squares problem solved once, densely (less overhead on GPUs)."""
    del ptol  # the residual is known only at the end
    V = _krylov_basis(unit_residual, restart)
    dtype, weak = _lattice_type(b)
    H = convert(jnp.eye(restart, restart + 1, dtype=dtype), dtype, weak)

    def cond(carry):
        _, _, breakdown, k = carry
        return (k < restart) & jnp.logical_not(breakdown)

    def step(carry):
        V, H, _, k = carry
        V, H, breakdown = _kth_arnoldi_iteration(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(cond, step, (V, H, False, 0))
    beta_vec = jnp.zeros_like(H, shape=(restart + 1,)).at[0].set(residual_norm.astype(dtype))
    y = _lstsq(H.T, beta_vec)
    x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
    residual = M(_sub(b, A(x)))
    unit_residual, residual_norm = _safe_normalize(residual)
    return x, unit_residual, residual_norm


def _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, gmres_func):
    """Restart GMRES from the last solution until the preconditioned residual norm is at
    most `atol` or `maxiter` restarts ran (`ptol` bounds it inside one restart)."""
    residual = M(_sub(b, A(x0)))
    unit_residual, residual_norm = _safe_normalize(residual)

    def cond(value):
        _, k, _, residual_norm = value
        return (k < maxiter) & (residual_norm > atol)

    def body(value):
        x, k, unit_residual, residual_norm = value
        x, unit_residual, residual_norm = gmres_func(
            A, b, x, unit_residual, residual_norm, ptol, restart, M
        )
        return x, k + 1, unit_residual, residual_norm

    x_final, *_ = lax.while_loop(cond, body, (x0, 0, unit_residual, residual_norm))
    return x_final


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):  # fmt: skip
    """Solve `A x = b` by restarted GMRES, as `jax.scipy.sparse.linalg.gmres`.

    Args:
        A: a function computing `A(x)`, a square matrix, or an object with `@`; any linear
            operator returning `b`'s structure.
        b: the right-hand side: an array or a pytree of arrays of any shapes.
        x0: the starting guess (`b`'s structure; zeros when None).
        tol, atol: stop when `norm(residual) <= max(tol * norm(b), atol)`.
        restart: the dimension of the Krylov subspace built between restarts (at most the
            size of `b`).
        maxiter: the most restarts (10 times the size of `b` when None).
        M: a preconditioner approximating the inverse of `A` (function or matrix).
        solve_method: 'batched' (solve the least-squares problem at the end of each
            restart) or 'incremental' (a QR factorisation by Givens rotations, which may end
            a restart early).
    Returns:
        `(x, info)`: the solution, of `b`'s structure, and an int32 that is -1 where the
        solution holds NaN, else 0. Derivatives come from another `gmres` solve.
    """
    if x0 is None:
        x0 = tree_map(jnp.zeros_like, b)
    A = _normalize_matvec(A, "gmres")
    M = _identity if M is None else _normalize_matvec(M, "gmres")
    b, x0 = _as_arrays((b, x0))
    size = sum(leaf.size for leaf in tree_leaves(b))
    if maxiter is None:
        maxiter = 10 * size  # SciPy's default
    restart = min(restart, size)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"gmres: x0 and b must have matching tree structure: "
                         f"{tree_structure(x0)} vs {tree_structure(b)}")  # fmt: skip
    b_norm = _norm(b)
    atol = jnp.maximum(tol * b_norm, atol)
    Mb_norm = _norm(M(b))
    ptol = Mb_norm * jnp.minimum(1.0, atol / b_norm)
    if solve_method == "incremental":
        gmres_func = _gmres_incremental
    elif solve_method == "batched":
        gmres_func = _gmres_batched
    else:
        raise ValueError(f"gmres: invalid solve_method {solve_method!r}, must be either "
                         "'incremental' or 'batched'")  # fmt: skip

    def solve(A, b):
        return _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, gmres_func)

    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
    return x, info
