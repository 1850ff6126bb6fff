"""purejit.lax.linalg: JAX's `jax.lax.linalg` on the IR's linalg ops (`ir/ops/linalg.py`).

As in JAX, these take batches of matrices (the last two dimensions) of one dtype, f32, f64,
c64 or c128, and never promote. How each op lowers per platform (LAPACK, cuSOLVER,
StableHLO) is documented in `purejit/backend/lowering/linalg.py`.

    cholesky, eig, eigh, lu, lu_pivots_to_permutation, qr, svd, triangular_solve, symmetrize,
    geqrf, householder_product, ormqr, hessenberg (gehrd), tridiagonal (sytrd)
    (`ir/ops/householder.py`), tridiagonal_solve (`ir/ops/tridiagonal.py`),
    symmetric_product
"""

from __future__ import annotations

import enum

import numpy as np

from purejit import errors
from purejit.lax._lift import lift as _lift
from purejit.lax.contractions import batch_matmul as _batch_matmul
from purejit.lax.staging import composite as _composite
from purejit.tracing import bind, bind1

_DTYPES = tuple(np.dtype(d) for d in (np.float32, np.float64, np.complex64, np.complex128))


class EigImplementation(enum.Enum):
    """jax.lax.linalg's names of eig's implementations; purejit runs the default (LAPACK geev
    on CPU, cuSOLVER geev or the hybrid host kernel on GPU), `implementation=None`."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """jax.lax.linalg's names of eigh's implementations; purejit runs the default (syevd),
    `implementation=None`."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """jax.lax.linalg's names of svd's algorithms; purejit runs DEFAULT (gesdd on CPU;
    gesvdj up to 1024 x 1024, else gesvd, on GPU)."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def _default_only(name: str, what: str, value, default=None):
    if value is not None and value != default:
        raise NotImplementedError(
            f"lax.linalg.{name}: {what}={value!r} is not supported; purejit runs the default "
            f"{what} (leave {what} unset)"
        )


def _check(name: str, x, *, square: bool = False, min_rank: int = 2):
    x = _lift(x)
    if x.ndim < min_rank:
        raise errors.PurejitTypeError(
            f"lax.linalg.{name}: expected a batch of matrices (rank >= {min_rank}), got "
            f"{x.dtype.name}{list(x.shape)}{errors.at(errors.user_location())}"
        )
    if x.dtype not in _DTYPES:
        raise errors.PurejitTypeError(
            f"lax.linalg.{name}: dtype {x.dtype.name} is not supported; use float32, "
            f"float64, complex64 or complex128 (convert with lax.convert_element_type)"
            f"{errors.at(errors.user_location())}"
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"lax.linalg.{name}: expected square matrices, got shape {list(x.shape)}"
            f"{errors.at(errors.user_location())}"
        )
    return x


def _swap_last(x):
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return bind1("transpose", x, permutation=perm)


def conj(x):
    """The complex conjugate (x itself for real dtypes), from the IR's real/imag ops."""
    x = _lift(x)
    if x.dtype.kind != "c":
        return x
    re = bind1("convert", bind1("real", x), dtype=x.dtype)
    im = bind1("convert", bind1("imag", x), dtype=x.dtype)
    i = bind1("broadcast_in_dim", _lift(np.array(1j, x.dtype)), shape=x.shape,
              broadcast_dimensions=())  # fmt: skip
    return bind1("subtract", re, bind1("multiply", im, i))


def adjoint(x):
    """The conjugate transpose of the last two dimensions."""
    return conj(_swap_last(_lift(x)))


def symmetrize(x):
    """`(x + x^H) / 2`: the Hermitian part of each matrix."""
    x = _lift(x)
    two = bind1("broadcast_in_dim", _lift(np.array(2, x.dtype)), shape=x.shape,
                broadcast_dimensions=())  # fmt: skip
    return bind1("divide", bind1("add", x, adjoint(x)), two)


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor L (x = L L^H) of each Hermitian positive-definite matrix.

    Args:
        x: a batch of square matrices [..., n, n].
        symmetrize_input: use (x + x^H) / 2; otherwise only the lower triangle is read.
    Returns:
        L, lower triangular; NaN for a matrix that is not positive definite.
    """
    x = _check("cholesky", x, square=True)
    if symmetrize_input:
        x = symmetrize(x)
    return bind1("cholesky", x)


def triangular_solve(
    a,
    b,
    *,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
):
    """Solve op(a) x = b (left_side) or x op(a) = b for x, with a triangular.

    Args:
        a: a batch of square triangular matrices [..., m, m] (only the `lower` or upper
            triangle is read).
        b: [..., m, n] (left_side) or [..., n, m]; or one vector per matrix [..., m].
        left_side, lower, transpose_a, conjugate_a, unit_diagonal: as in jax.lax.linalg.
    Returns:
        x, shaped like b.
    """
    a = _check("triangular_solve", a, square=True)
    b = _lift(b)
    conjugate_a = bool(conjugate_a) and a.dtype.kind == "c"
    singleton = b.ndim == a.ndim - 1
    if singleton:
        axis = b.ndim if left_side else b.ndim - 1
        b = bind1("reshape", b, shape=b.shape[:axis] + (1,) + b.shape[axis:])
    b = _check("triangular_solve", b)
    if a.dtype != b.dtype:
        raise errors.PurejitTypeError(
            f"lax.linalg.triangular_solve: a and b must have one dtype, got "
            f"{a.dtype.name} and {b.dtype.name}{errors.at(errors.user_location())}"
        )
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(
            f"lax.linalg.triangular_solve: a {list(a.shape)} and b {list(b.shape)} must have "
            f"the same batch dimensions{errors.at(errors.user_location())}"
        )
    k = b.shape[-2] if left_side else b.shape[-1]
    if k != a.shape[-1]:
        raise ValueError(
            f"lax.linalg.triangular_solve: b {list(b.shape)} does not match a "
            f"{list(a.shape)} (left_side={left_side}){errors.at(errors.user_location())}"
        )
    out = bind1(
        "triangular_solve",
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        conjugate_a=conjugate_a,
        unit_diagonal=bool(unit_diagonal),
    )
    if singleton:
        shape = out.shape[:-1] if left_side else out.shape[:-2] + out.shape[-1:]
        out = bind1("reshape", out, shape=shape)
    return out


def lu(x):
    """LU decomposition with partial pivoting: (lu, pivots, permutation), as jax.lax.linalg.

    `lu` holds L (unit lower, below the diagonal) and U; `pivots` are the 0-based row swaps
    (s32, min(m, n) of them); `permutation` (s32, m) is the row order P applies: P x = L U.
    """
    x = _check("lu", x)
    return tuple(bind("lu", x))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation of range(permutation_size) that the row swaps `pivots` make."""
    p = _lift(pivots)
    if p.ndim < 1 or p.dtype != np.int32:
        raise errors.PurejitTypeError(
            f"lax.linalg.lu_pivots_to_permutation: pivots must be int32 of rank >= 1, got "
            f"{p.dtype.name}{list(p.shape)}{errors.at(errors.user_location())}"
        )
    if permutation_size < p.shape[-1]:
        raise ValueError(
            f"lax.linalg.lu_pivots_to_permutation: permutation_size={permutation_size} is "
            f"smaller than the {p.shape[-1]} pivots{errors.at(errors.user_location())}"
        )
    return bind1("lu_pivots_to_permutation", p, permutation_size=int(permutation_size))


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition: (q, r) with q [..., m, m] (or [..., m, min(m, n)] when not
    full_matrices) and r upper triangular."""
    if pivoting:
        raise NotImplementedError("lax.linalg.qr: pivoting=True (LAPACK geqp3) is not supported")
    x = _check("qr", x)
    return tuple(bind("qr", x, full_matrices=bool(full_matrices)))


def geqrf(a):
    """Householder QR in LAPACK's compact form, as JAX's internal `geqrf`.

    Args:
        a: a batch of matrices [..., m, n].
    Returns:
        (h, taus): r in the upper triangle of h, the Householder reflectors below its
        diagonal and their scale factors in taus [..., min(m, n)]. Not differentiable (as
        in JAX).
    """
    a = _check("geqrf", a)
    return tuple(bind("geqrf", a))


def _householder_args(name: str, a, taus):
    a = _check(name, a)
    taus = _lift(taus)
    if taus.ndim != a.ndim - 1 or taus.dtype != a.dtype or taus.shape[:-1] != a.shape[:-2]:
        raise errors.PurejitTypeError(
            f"lax.linalg.{name}: taus {taus.dtype.name}{list(taus.shape)} must be one "
            f"{a.dtype.name} vector per matrix of a {a.dtype.name}{list(a.shape)}"
            f"{errors.at(errors.user_location())}"
        )
    m, n = a.shape[-2:]
    if taus.shape[-1] > min(m, n):
        raise ValueError(
            f"lax.linalg.{name}: taus {list(taus.shape)} has more than min(m, n) = "
            f"{min(m, n)} reflectors for a {list(a.shape)}{errors.at(errors.user_location())}"
        )
    return a, taus


def householder_product(a, taus):
    """The product of the Householder reflectors of `geqrf` (LAPACK orgqr), as jax.lax.linalg.

    Args:
        a: [..., m, n] with m >= n, the reflectors below its diagonal.
        taus: [..., k], k <= n, their scale factors.
    Returns:
        q [..., m, n]: the first n columns of H_0 ... H_{k-1}. Not differentiable (as in JAX).
    """
    a, taus = _householder_args("householder_product", a, taus)
    if a.shape[-2] < a.shape[-1]:
        raise ValueError(
            f"lax.linalg.householder_product: a {list(a.shape)} must have at least as many "
            f"rows as columns{errors.at(errors.user_location())}"
        )
    return bind1("householder_product", a, taus)


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """Q c, Q^H c (left) or c Q, c Q^H, Q given by `geqrf`'s reflectors (LAPACK ormqr), as
    jax.lax.linalg.ormqr.

    Args:
        a: [..., m, n], the reflectors below its diagonal (`geqrf`'s h; the first result of
            `jnp.linalg.qr(mode="raw")` transposed).
        taus: [..., k], k <= min(m, n), their scale factors.
        c: [..., m, p] (left) or [..., p, m].
        left: multiply by Q from the left; else from the right.
        transpose: use Q^H (Q^T for reals).
    Returns:
        The product, shaped like c. Not differentiable (as in JAX).
    """
    a, taus = _householder_args("ormqr", a, taus)
    c = _check("ormqr", c)
    m = a.shape[-2]
    if c.dtype != a.dtype or c.shape[:-2] != a.shape[:-2]:
        raise errors.PurejitTypeError(
            f"lax.linalg.ormqr: c {c.dtype.name}{list(c.shape)} must have the dtype and batch "
            f"dimensions of a {a.dtype.name}{list(a.shape)}{errors.at(errors.user_location())}"
        )
    if (c.shape[-2] if left else c.shape[-1]) != m:
        side = "rows" if left else "columns"
        raise ValueError(
            f"lax.linalg.ormqr: c {list(c.shape)} must have {m} {side} (the rows of a "
            f"{list(a.shape)}) with left={left}{errors.at(errors.user_location())}"
        )
    return bind1("ormqr", a, taus, c, left=bool(left), transpose=bool(transpose))


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):  # fmt: skip
    """The Schur form (LAPACK gees, CPU only as in JAX): (t, q) with x = q t q^H, or t alone
    when not compute_schur_vectors."""
    x = _check("schur", x, square=True)
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError(
            "lax.linalg.schur: sort_eig_vals / select_callable (sorted Schur forms) are not "
            "supported; the form is returned unsorted"
        )
    t, q = bind("schur", x)
    return (t, q) if compute_schur_vectors else t


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve T x = b for tridiagonal T, as jax.lax.linalg.tridiagonal_solve.

    Args:
        dl, d, du: the sub-, main and superdiagonal, [..., m] each (dl[..., 0] and
            du[..., m - 1] are not read).
        b: [..., m, n].
        perturb_singular: not supported (LAPACK's perturbed solve for singular T).
    Returns:
        x [..., m, n]; NaN for a singular T. Differentiable in every operand.
    """
    if perturb_singular:
        raise NotImplementedError(
            "lax.linalg.tridiagonal_solve: perturb_singular=True (the perturbed LU of "
            "singular matrices) is not supported; solve with perturb_singular=False"
        )
    b = _check("tridiagonal_solve", b)
    diags = [_lift(x) for x in (dl, d, du)]
    for name, x in zip(("dl", "d", "du"), diags):
        if x.dtype != b.dtype or x.shape != b.shape[:-1]:
            raise errors.PurejitTypeError(
                f"lax.linalg.tridiagonal_solve: {name} {x.dtype.name}{list(x.shape)} must be "
                f"{b.dtype.name}{list(b.shape[:-1])}, a diagonal per column of b "
                f"{b.dtype.name}{list(b.shape)}{errors.at(errors.user_location())}"
            )
    return bind1("tridiagonal_solve", *diags, b)


def hessenberg(a):
    """Hessenberg reduction (LAPACK gehrd; CPU only, as in JAX), as jax.lax.linalg.hessenberg.

    Args:
        a: a batch of square matrices [..., n, n].
    Returns:
        (a, taus): the upper Hessenberg matrix in the upper triangle and first subdiagonal
        of a, the Householder reflectors below it, their factors in taus [..., n - 1]. Not
        differentiable (as in JAX).
    """
    a = _check("hessenberg", a, square=True)
    return tuple(bind("gehrd", a))


def tridiagonal(a, *, lower: bool = True):
    """Tridiagonal reduction of Hermitian matrices (LAPACK sytrd / hetrd, cuSOLVER sytrd), as
    jax.lax.linalg.tridiagonal.

    Args:
        a: a batch of square matrices [..., n, n], n >= 1; only the `lower` (or upper)
            triangle is read.
    Returns:
        (a, d, e, taus): the diagonal d (real, [..., n]) and off-diagonal e (real,
        [..., n - 1]) of the tridiagonal form, also in that triangle of a, with the
        Householder reflectors beyond them and their factors taus [..., n - 1]. Not
        differentiable (as in JAX).
    """
    a = _check("tridiagonal", a, square=True)
    if a.shape[-1] == 0:
        raise ValueError(
            f"lax.linalg.tridiagonal: the input must be a square matrix of at least one row, "
            f"got shape {list(a.shape)}{errors.at(errors.user_location())}"
        )
    return tuple(bind("sytrd", a, lower=bool(lower)))


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of R^T R + w w^T, from R's, in O(n^2): one Givens rotation
    per row, as jax.lax.linalg.cholesky_update computes it on CPU (on GPU JAX calls its own
    kernel, which may round otherwise).

    Args:
        r_matrix: an upper-triangular [n, n] float32/float64 matrix R (A = R^T R).
        w_vector: [n], the update's vector.
    Returns:
        The new upper-triangular factor [n, n].
    """
    r = _check("cholesky_update", r_matrix, square=True)
    w = _lift(w_vector)
    n = r.shape[-1]
    if r.ndim != 2 or r.dtype.kind != "f" or w.shape != (n,) or w.dtype != r.dtype:
        raise errors.PurejitTypeError(
            f"lax.linalg.cholesky_update: expected a float32/float64 matrix [n, n] and a vector "
            f"[n] of its dtype, got {r.dtype.name}{list(r.shape)} and "
            f"{w.dtype.name}{list(w.shape)}{errors.at(errors.user_location())}"
        )
    # one program, eagerly too, as JAX's primitive is (XLA's rewrites, 1 / sqrt -> rsqrt,
    # apply alike)
    return _composite(_cholesky_update, "cholesky_update")(r, w) if n else r


def _cholesky_update(r, w):
    n = r.shape[-1]
    rows = [_part(r, (k, 0), (k + 1, n), (n,)) for k in range(n)]
    z = w
    for k in range(n):
        c, s = _givens(_part(rows[k], (k,), (k + 1,), ()), _part(z, (k,), (k + 1,), ()))
        # (row, z) <- (c row - s z, c z + s row)
        rows[k], z = _rotate(rows[k], z, c, s, "subtract"), _rotate(z, rows[k], c, s, "add")
    stacked = [bind1("reshape", x, shape=(1, n)) for x in rows]
    return bind1("concatenate", *stacked, dimension=0)


def _part(x, start, limit, shape):
    s = bind1("slice", x, start_indices=start, limit_indices=limit, strides=(1,) * len(start))
    return bind1("reshape", s, shape=shape)


def _neg(x):
    return bind1("negate", x)


def _givens(x, y):
    """(c, s) rotating (x, y) onto the first axis, scaled against overflow; (1, 0) at y = 0."""
    ax, ay = bind1("abs", x), bind1("abs", y)
    den = bind1("select", bind1("compare", ax, ay, comparison_direction="GT"), ax, ay)
    x, y = bind1("divide", x, den), bind1("divide", y, den)
    norm = bind1("sqrt", bind1("add", bind1("multiply", x, x), bind1("multiply", y, y)))
    rh = bind1("divide", _lift(np.array(1, x.dtype)), norm)
    zero = _lift(np.array(0, x.dtype))
    at_zero = bind1("compare", y, zero, comparison_direction="EQ")
    c = bind1("select", at_zero, _lift(np.array(1, x.dtype)), bind1("multiply", x, rh))
    s = bind1("select", at_zero, zero, bind1("multiply", _neg(y), rh))
    return c, s


def _rotate(u, v, c, s, combine: str):
    """c u - s v or c u + s v (`combine`), for scalars c and s."""
    cb, sb = (bind1("broadcast_in_dim", k, shape=u.shape, broadcast_dimensions=()) for k in (c, s))
    return bind1(combine, bind1("multiply", cb, u), bind1("multiply", sb, v))


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):  # fmt: skip
    """alpha a a^T + beta c, as jax.lax.linalg.symmetric_product.

    Computed as JAX computes it on CPU (a batched matmul at HIGHEST precision, scaled, plus
    beta c), on every platform: on GPU, where JAX calls cuBLAS syrk, the rounding may differ.
    The whole matrix is computed (JAX promises the lower triangle only); symmetrize_output
    copies the lower triangle into the upper one.

    Args:
        a_matrix: [..., m, n].
        c_matrix: [..., m, m], symmetric.
    Returns:
        [..., m, m].
    """
    a = _check("symmetric_product", a_matrix)
    c = _check("symmetric_product", c_matrix, square=True)
    if c.dtype != a.dtype or c.shape != a.shape[:-1] + a.shape[-2:-1]:
        raise errors.PurejitTypeError(
            f"lax.linalg.symmetric_product: c {c.dtype.name}{list(c.shape)} must be "
            f"{a.dtype.name}{list(a.shape[:-1] + a.shape[-2:-1])} for a "
            f"{a.dtype.name}{list(a.shape)}{errors.at(errors.user_location())}"
        )
    aat = _batch_matmul(a, _swap_last(a), precision="highest")
    out = bind1("add", _scale(aat, alpha), _scale(c, beta))
    if symmetrize_output:
        lower = _tril(out, 0)
        out = bind1("add", lower, _swap_last(_tril(out, -1)))
    return out


def _scale(x, k):
    s = bind1("broadcast_in_dim", _lift(np.array(k, x.dtype)), shape=x.shape,
              broadcast_dimensions=())  # fmt: skip
    return bind1("multiply", s, x)


def _tril(x, k: int):
    m, n = x.shape[-2:]
    keep = _lift(np.tri(m, n, k, dtype=bool))
    keep = bind1("broadcast_in_dim", keep, shape=x.shape,
                 broadcast_dimensions=(x.ndim - 2, x.ndim - 1))  # fmt: skip
    zero = bind1("broadcast_in_dim", _lift(np.array(0, x.dtype)), shape=x.shape,
                 broadcast_dimensions=())  # fmt: skip
    return bind1("select", keep, x, zero)


def eigh(
    x,
    *,
    lower: bool = True,
    symmetrize_input: bool = True,
    sort_eigenvalues: bool = True,
    subset_by_index=None,
    implementation=None,
):
    """Eigendecomposition of Hermitian matrices: (v, w), eigenvectors in the columns of v,
    real eigenvalues w in ascending order."""
    x = _check("eigh", x, square=True)
    n = x.shape[-1]
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise NotImplementedError("lax.linalg.eigh: subset_by_index is not supported")
    _default_only("eigh", "implementation", implementation)
    if symmetrize_input:
        x = symmetrize(x)
    return tuple(bind("eigh", x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues)))


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):  # fmt: skip
    """Singular value decomposition: (u, s, vh) with x = u diag(s) vh, or s alone when not
    compute_uv; singular values in descending order."""
    x = _check("svd", x)
    k = min(x.shape[-2:])
    if subset_by_index is not None and tuple(subset_by_index) != (0, k):
        raise NotImplementedError("lax.linalg.svd: subset_by_index is not supported")
    _default_only("svd", "algorithm", algorithm, SvdAlgorithm.DEFAULT)
    out = bind("svd", x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if compute_uv:
        s, u, vh = out
        return u, s, vh
    return out[0]


def eig(
    x,
    *,
    compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True,
    enable_eigvec_derivs: bool = False,
    implementation=None,
):
    """Eigendecomposition of general square matrices: [w] + [vl] + [vr] (complex), as
    jax.lax.linalg.eig."""
    x = _check("eig", x, square=True)
    _default_only("eig", "implementation", implementation)
    return list(
        bind(
            "eig",
            x,
            compute_left_eigenvectors=bool(compute_left_eigenvectors),
            compute_right_eigenvectors=bool(compute_right_eigenvectors),
        )
    )


__all__ = [
    "EigImplementation",
    "EighImplementation",
    "SvdAlgorithm",
    "cholesky",
    "cholesky_update",
    "eig",
    "eigh",
    "geqrf",
    "hessenberg",
    "householder_product",
    "lu",
    "lu_pivots_to_permutation",
    "ormqr",
    "qr",
    "schur",
    "svd",
    "symmetric_product",
    "symmetrize",
    "triangular_solve",
    "tridiagonal",
    "tridiagonal_solve",
]
