"""JVP and transpose rules of the linear-algebra ops (`ir/ops/linalg.py`), JAX's
(`jax/_src/lax/linalg.py`), every formula batched over the leading dimensions.

    cholesky          L' = L phi(L^-1 A' L^-H), phi: the lower triangle, diagonal halved.
    triangular_solve  linear in b (the transpose solves with op(a) transposed); in a:
                      -op(a)^-1 op(a') x (left side) or -x op(a') op(a)^-1.
    lu                L' = L tril(L^-1 P A' U^-1, -1), U' = triu(L^-1 P A' U^-1) U, packed as
                      lu is (De Hoog, Anderssen and Lukas); pivots and permutation are
                      integers.
    qr                Q' = Q (dO - Q^H A' R^-1) + A' R^-1, R' = (Q^H A' R^-1 - dO) R with dO
                      the skew part of Q^H A' R^-1 (Townsend); wide matrices split A = [A1 A2]
                      (R2 = Q^H A2); full_matrices of tall ones extend Q' (arXiv 2409.13374).
    eigh              w' = diag(V^H A' V), V' = V (F * V^H A' V), F_ij = 1 / (w_j - w_i):
                      distinct eigenvalues, as JAX.
    svd               from dS = U^H A' V (Giles); full_matrices of non-square matrices raise
                      NotImplementedError, as in JAX.
    eig               eigenvalues: w' = diag(V^-1 A' V). Eigenvector derivatives are not
                      implemented (JAX gives them only under enable_eigvec_derivs=True, which
                      the op does not carry): reading them is an error that says so; where
                      only the eigenvalues are read, this differentiates what JAX refuses.
"""

from __future__ import annotations

import numpy as np

from purejit.tracing import ShapedArray
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Unsupported,
    Zero,
    add,
    aval,
    bcast,
    conj,
    convert,
    defjvp,
    deftranspose,
    div,
    instantiate,
    is_linear,
    mul,
    neg,
    not_differentiable,
    op,
    ops,
    reduce_sum,
    select,
    sub,
    tangent_aval,
    transpose,
)

not_differentiable("integer or boolean results", "lu_pivots_to_permutation")
not_differentiable(
    "JAX does not differentiate it: jax.lax.linalg.schur and hessenberg have no JVP rule "
    "(the forms are not unique where eigenvalues repeat)",
    "schur",
    "hessenberg",
)

# ---- matrix helpers (batched over leading dimensions; Zero-aware where tangents pass) -------


def _shape(x):
    return aval(x).shape


def _zero(x, shape):
    return Zero(ShapedArray(tuple(shape), aval(x).dtype))


def _mm(a, b):
    """Batched matrix product a @ b (at full precision, as JAX's rules)."""
    sa, sb = _shape(a), _shape(b)
    r = len(sa)
    if isinstance(a, Zero) or isinstance(b, Zero):
        return _zero(a if isinstance(b, Zero) else b, (*sa[:-1], sb[-1]))
    batch = tuple(range(r - 2))
    return op(
        "dot_general",
        a,
        b,
        lhs_contracting_dimensions=(r - 1,),
        rhs_contracting_dimensions=(r - 2,),
        lhs_batching_dimensions=batch,
        rhs_batching_dimensions=batch,
        precision=("HIGHEST", "HIGHEST"),
    )


def _T(x):
    r = len(_shape(x))
    return transpose(x, (*range(r - 2), r - 1, r - 2))


def _H(x):
    return conj(_T(x))


def _batch(x, core: int = 2):
    return _shape(x)[: len(_shape(x)) - core]


def _const(batch, value: np.ndarray):
    """A constant matrix (or vector) broadcast along the batch dimensions `batch`."""
    value = np.asarray(value)
    full = (*batch, *value.shape)
    return bcast(value, full, tuple(range(len(batch), len(full))))


def _scalar(x, value):
    return bcast(np.array(value, aval(x).dtype), _shape(x), ())


def _masked(x, mask: np.ndarray):
    """x where `mask` (a constant boolean matrix) holds, else 0."""
    if isinstance(x, Zero):
        return x
    return select(_const(_batch(x), mask), x, _scalar(x, 0))


def _tril(x, k=0):
    m, n = _shape(x)[-2:]
    return _masked(x, np.tri(m, n, k, dtype=bool))


def _triu(x, k=0):
    m, n = _shape(x)[-2:]
    return _masked(x, ~np.tri(m, n, k - 1, dtype=bool))


def _eye(batch, n, dt):
    return _const(batch, np.eye(n, dtype=dt))


def _diag(x):
    """The diagonal of each (square) matrix: [..., n]."""
    if isinstance(x, Zero):
        return _zero(x, _shape(x)[:-1])
    return reduce_sum(_masked(x, np.eye(*_shape(x)[-2:], dtype=bool)), [len(_shape(x)) - 1])


def _rows(v, n):
    """A vector [..., k] repeated along a new second-to-last axis: [..., n, k] (v[..., None, :])."""
    s = _shape(v)
    return bcast(v, (*s[:-1], n, s[-1]), (*range(len(s) - 1), len(s)))


def _cols(v, n):
    """A vector [..., k] repeated along a new last axis: [..., k, n] (v[..., :, None])."""
    s = _shape(v)
    return bcast(v, (*s, n), tuple(range(len(s))))


def _slice(x, rows=None, cols=None):
    s = _shape(x)
    r0, r1 = rows or (0, s[-2])
    c0, c1 = cols or (0, s[-1])
    if isinstance(x, Zero):
        return _zero(x, (*s[:-2], r1 - r0, c1 - c0))
    start = [0] * (len(s) - 2) + [r0, c0]
    limit = list(s[:-2]) + [r1, c1]
    return op("slice", x, start_indices=start, limit_indices=limit, strides=[1] * len(s))


def _pad(x, rows=0, cols=0):
    """x with `rows` zero rows below and `cols` zero columns to the right."""
    if rows == 0 and cols == 0:
        return x
    if isinstance(x, Zero):
        s = _shape(x)
        return _zero(x, (*s[:-2], s[-2] + rows, s[-1] + cols))
    r = len(_shape(x))
    high = [0] * (r - 2) + [rows, cols]
    return op("pad", x, np.zeros((), aval(x).dtype), edge_padding_low=[0] * r,
              edge_padding_high=high, interior_padding=[0] * r)  # fmt: skip


def _concat_cols(a, b):
    if isinstance(a, Zero) and isinstance(b, Zero):
        return _zero(a, (*_shape(a)[:-1], _shape(a)[-1] + _shape(b)[-1]))
    a, b = instantiate(a, aval(a)), instantiate(b, aval(b))
    return op("concatenate", a, b, dimension=len(_shape(a)) - 1)


def _tri_solve(a, b, *, left_side, lower, transpose_a=False, conjugate_a=False,
               unit_diagonal=False):  # fmt: skip
    if isinstance(b, Zero):
        return b
    return op("triangular_solve", a, b, left_side=left_side, lower=lower,
              transpose_a=transpose_a, conjugate_a=conjugate_a,
              unit_diagonal=unit_diagonal)  # fmt: skip


def _perm_matrix(perm, dt):
    """P with P[i, j] = (perm[i] == j), so P @ x = x[perm] (rows of x in perm's order)."""
    s = _shape(perm)
    m = s[-1]
    full = (*s, m)
    iota = op("iota", shape=full, dtype=np.dtype(np.int32), dimension=len(full) - 1)
    hit = op("compare", bcast(perm, full, tuple(range(len(s)))), iota, comparison_direction="EQ")
    return op("convert", hit, dtype=np.dtype(dt))


def _solve(a, b, *, adjoint=False):
    """a^-1 b (or a^-H b) for square a, through its LU factors (primal values)."""
    lu, _, perm = ops("lu", a)
    p = _perm_matrix(perm, aval(a).dtype)  # P a = L U
    if not adjoint:
        x = _tri_solve(lu, _mm(p, b), left_side=True, lower=True, unit_diagonal=True)
        return _tri_solve(lu, x, left_side=True, lower=False)
    # a^H = U^H L^H P: a^-H b = P^T L^-H U^-H b
    cplx = aval(a).dtype.kind == "c"
    x = _tri_solve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=cplx)
    x = _tri_solve(lu, x, left_side=True, lower=True, transpose_a=True, conjugate_a=cplx,
                   unit_diagonal=True)  # fmt: skip
    return _mm(_T(p), x)


def _inv_or_zero(x):
    """1 / x where x != 0, else 0 (x real)."""
    zero, one = _scalar(x, 0), _scalar(x, 1)
    is0 = op("compare", x, zero, comparison_direction="EQ")
    return select(is0, zero, div(one, select(is0, one, x)))


def _gap_inverse(w):
    """F with F_ij = 1 / (w_j - w_i) off the diagonal and 0 on it (JAX's Fmat)."""
    n = _shape(w)[-1]
    eye = _eye(_batch(w, 1), n, aval(w).dtype)
    diff = add(eye, sub(_rows(w, n), _cols(w, n)))
    return sub(div(_scalar(diff, 1), diff), eye)


# ---- cholesky -----------------------------------------------------------------------------


@defjvp("cholesky")
def _cholesky_jvp(ctx, primals, tangents, attrs, regions):
    (x,), (dx,) = primals, tangents
    low = op("cholesky", x)
    # L^-1 dA L^-H
    tmp = _tri_solve(low, dx, left_side=False, lower=True, transpose_a=True,
                     conjugate_a=aval(x).dtype.kind == "c")  # fmt: skip
    inner = _tri_solve(low, tmp, left_side=True, lower=True)
    n = _shape(x)[-1]
    half_diag = np.where(np.eye(n, dtype=bool), 0.5, 1.0).astype(aval(x).dtype)
    phi = mul(_tril(inner), _const(_batch(x), half_diag))
    return [low], [_mm(low, phi)]


# ---- triangular_solve ---------------------------------------------------------------------


@defjvp("triangular_solve")
def _triangular_solve_jvp(ctx, primals, tangents, attrs, regions):
    (a, b), (da, db) = primals, tangents
    x = op("triangular_solve", a, b, **attrs)
    out = Zero(aval(x))
    if not isinstance(db, Zero):
        out = add(out, op("triangular_solve", a, db, **attrs))
    if not isinstance(da, Zero):
        k = 1 if attrs["unit_diagonal"] else 0
        ga = _tril(da, -k) if attrs["lower"] else _triu(da, k)
        ga = neg(ga)
        ga = _T(ga) if attrs["transpose_a"] else ga
        ga = conj(ga) if attrs["conjugate_a"] else ga
        m, n = _shape(b)[-2:]

        def a_inv(rhs):
            return op("triangular_solve", a, rhs, **attrs)

        if attrs["left_side"]:  # A^-1 (dA X) or (A^-1 dA) X, whichever is cheaper
            term = a_inv(_mm(ga, x)) if m > n else _mm(a_inv(ga), x)
        else:
            term = a_inv(_mm(x, ga)) if m < n else _mm(x, a_inv(ga))
        out = add(out, term)
    return [x], [out]


@deftranspose("triangular_solve")
def _triangular_solve_t(cts, operands, attrs, regions):
    (ct,), (a, b) = cts, operands
    if is_linear(a):
        raise NotImplementedError("triangular_solve is not linear in its matrix a")
    if isinstance(ct, Zero):
        return [None, Zero(aval(b))]
    flipped = {**attrs, "transpose_a": not attrs["transpose_a"]}
    return [None, op("triangular_solve", a, ct, **flipped)]


# ---- lu -------------------------------------------------------------------------------------


@defjvp("lu")
def _lu_jvp(ctx, primals, tangents, attrs, regions):
    (a,), (da,) = primals, tangents
    lu, pivots, perm = ops("lu", a)
    m, n = _shape(a)[-2:]
    k = min(m, n)
    dt = aval(a).dtype
    batch = _batch(a)
    # L (m x m, unit lower) and U (n x n, upper; identity below row k)
    low = add(_pad(_tril(_slice(lu, cols=(0, k)), -1), cols=m - k), _eye(batch, m, dt))
    up = _pad(_triu(_slice(lu, rows=(0, k))), rows=n - k)
    if n > k:
        fill = np.zeros((n, n), dt)
        fill[k:, k:] = np.eye(n - k, dtype=dt)
        up = add(up, _const(batch, fill))
    la = _tri_solve(low, _mm(_perm_matrix(perm, dt), da), left_side=True, lower=True,
                    unit_diagonal=True)  # fmt: skip
    lau = _tri_solve(up, la, left_side=False, lower=False)
    dlu = add(_mm(low, _tril(lau, -1)), _mm(_triu(lau), up))
    return [lu, pivots, perm], [dlu, Zero(tangent_aval(aval(pivots))),
                                Zero(tangent_aval(aval(perm)))]  # fmt: skip


# ---- qr -------------------------------------------------------------------------------------


def _thin_qr_jvp(q, r, dx):
    """dQ, dR of a thin QR (m >= n, q m x n, r n x n)."""
    dx_rinv = _tri_solve(r, dx, left_side=False, lower=False)  # dA R^-1
    qt = _mm(_H(q), dx_rinv)
    low = _tril(qt, -1)
    do = sub(low, _H(low))  # skew-Hermitian
    if aval(qt).dtype.kind == "c":  # the imaginary part of the diagonal
        im = sub(qt, convert(op("real", qt), aval(qt).dtype))
        do = add(do, _masked(im, np.eye(*_shape(qt)[-2:], dtype=bool)))
    dq = add(_mm(q, sub(do, qt)), dx_rinv)
    dr = _mm(sub(qt, do), r)
    return dq, dr


@defjvp("qr")
def _qr_jvp(ctx, primals, tangents, attrs, regions):
    (x,), (dx,) = primals, tangents
    q, r = ops("qr", x, **attrs)
    m, n = _shape(x)[-2:]
    if m < n:  # X = [X1 X2]: X1 = Q R1 is square, R2 = Q^H X2
        dq, dr1 = _thin_qr_jvp(q, _slice(r, cols=(0, m)), _slice(dx, cols=(0, m)))
        x2, dx2 = _slice(x, cols=(m, n)), _slice(dx, cols=(m, n))
        dr2 = add(_mm(_H(dq), x2), _mm(_H(q), dx2))
        return [q, r], [dq, _concat_cols(dr1, dr2)]
    full = attrs["full_matrices"]
    q_mn = _slice(q, cols=(0, n)) if full else q
    r_nn = _slice(r, rows=(0, n)) if full else r
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
    if not full or m == n:
        return [q, r], [dq_mn, dr_nn]
    # tall with full_matrices: arXiv 2409.13374, eqs. 32-33
    q_nn, q_pn = _slice(q_mn, rows=(0, n)), _slice(q_mn, rows=(n, m))
    q_mp = _slice(q, cols=(n, m))
    dq_nn, dq_pn = _slice(dq_mn, rows=(0, n)), _slice(dq_mn, rows=(n, m))
    z_pn_h = _solve(sub(q_nn, _eye(_batch(q), n, aval(q).dtype)), _H(q_pn), adjoint=True)
    z_pn = _H(z_pn_h)
    dq_mp = sub(
        _mm(dq_mn, z_pn_h),
        _mm(add(q_mn, _mm(q_mp, z_pn)), _H(sub(dq_pn, _mm(z_pn, dq_nn)))),
    )
    dq = _concat_cols(dq_mn, dq_mp)
    dr = _pad(dr_nn, rows=m - n)
    return [q, r], [dq, dr]


# ---- eigh -----------------------------------------------------------------------------------


def _symmetrize(a):
    return div(add(a, _H(a)), _scalar(a, 2))


@defjvp("eigh")
def _eigh_jvp(ctx, primals, tangents, attrs, regions):
    (a,), (da,) = primals, tangents
    # as JAX, the factorization of the Hermitian part (what the wrapper passes anyway)
    v, w = ops("eigh", _symmetrize(a), **attrs)
    dt = aval(a).dtype
    vav = _mm(_mm(_H(v), da), v)
    fmat = convert(_gap_inverse(w), dt)
    dv = _mm(v, mul(fmat, vav))
    dw = _diag(op("real", vav) if dt.kind == "c" else vav)
    return [v, w], [dv, dw]


# ---- svd ------------------------------------------------------------------------------------


@defjvp("svd")
def _svd_jvp(ctx, primals, tangents, attrs, regions):
    (a,), (da,) = primals, tangents
    m, n = _shape(a)[-2:]
    if attrs["compute_uv"] and attrs["full_matrices"] and m != n:
        raise NotImplementedError(
            "svd: the derivative of singular vectors with full_matrices=True of a non-square "
            f"matrix ({m} x {n}) is not implemented (as in JAX); use full_matrices=False"
        )
    s, u, vt = ops("svd", a, full_matrices=False, compute_uv=True)
    dt = aval(a).dtype
    ut, v = _H(u), _H(vt)
    ds_mat = _mm(_mm(ut, da), v)
    ds = _diag(op("real", ds_mat) if dt.kind == "c" else ds_mat)
    if not attrs["compute_uv"]:
        return [s], [ds]
    k = _shape(s)[-1]
    s_row = _rows(s, k)  # s_j at [i, j]
    s_col = _T(s_row)  # s_i at [i, j]
    diffs = mul(add(s_row, s_col), sub(s_row, s_col))
    eye = _eye(_batch(s, 1), k, aval(s).dtype)
    f = convert(sub(div(_scalar(diffs, 1), add(diffs, eye)), eye), dt)
    dss = mul(convert(s_row, dt), ds_mat)  # dS diag(s)
    sds = mul(convert(s_col, dt), ds_mat)  # diag(s) dS
    s_inv = _inv_or_zero(s)
    s_inv_mat = mul(_rows(s_inv, k), eye)
    duv_diag = mul(mul(_scalar(ds_mat, 0.5), sub(ds_mat, _H(ds_mat))), convert(s_inv_mat, dt))
    du = _mm(u, add(mul(f, add(dss, _H(dss))), duv_diag))
    dv = _mm(v, mul(f, add(sds, _H(sds))))
    if m > n:
        dav = _mm(da, v)
        du = add(du, div(sub(dav, _mm(u, _mm(ut, dav))), convert(_rows(s, m), dt)))
    if n > m:
        dahu = _mm(_H(da), u)
        dv = add(dv, div(sub(dahu, _mm(v, _mm(vt, dahu))), convert(_rows(s, n), dt)))
    return [s, u, vt], [ds, du, _H(dv)]


# ---- eig ------------------------------------------------------------------------------------

_EIGVEC_MSG = (
    "eig: derivatives of the eigenvectors of a general matrix are not implemented (JAX "
    "computes them only when asked with enable_eigvec_derivs=True, since they are valid only "
    "under assumptions on the input it cannot check, https://github.com/jax-ml/jax/issues/2748; "
    "purejit's eig accepts that flag but does not differentiate them); eigenvalues are "
    "differentiable, and eigh differentiates the eigenvectors of Hermitian matrices"
)


@defjvp("eig")
def _eig_jvp(ctx, primals, tangents, attrs, regions):
    (a,), (da,) = primals, tangents
    left, right = attrs["compute_left_eigenvectors"], attrs["compute_right_eigenvectors"]
    outs = ops("eig", a, compute_left_eigenvectors=left, compute_right_eigenvectors=True)
    w, vr = outs[0], outs[-1]
    cdt = aval(vr).dtype
    # w' = diag(V^-1 A' V)
    dw = reduce_sum(mul(_solve(vr, convert(da, cdt)), _T(vr)), [len(_shape(vr)) - 1])
    primal = [w] + ([outs[1]] if left else []) + ([vr] if right else [])
    vec = [Unsupported(tangent_aval(aval(v)), _EIGVEC_MSG) for v in primal[1:]]
    return primal, [dw, *vec]


LINEAR_OPS.add("triangular_solve")
