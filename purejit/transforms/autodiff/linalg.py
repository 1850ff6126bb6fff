"""JVP and transpose rules of the linalg family (`ir/ops/linalg.py`), JAX's rules:

- triangular_solve: linear in b (its transpose solves with the transposed matrix); the
  tangent in a is -op(a)^-1 op(da) x, ordered so the cheaper product comes first.
- cholesky: L_dot = L phi(L^-1 dA L^-H), phi taking the lower triangle with half diagonal
  (Murray, arXiv:1602.07527).
- lu: dL, dU from L^-1 P dA U^-1 split into its strict lower and upper parts.
- qr: the reduced factorization (Townsend, "Differentiating the QR decomposition"); the
  full_matrices case with m != n is not differentiable, as in JAX.
- eigh: dw = diag(V^H dA V), dV = V (F * V^H dA V) with F = 1 / (w_j - w_i) off the
  diagonal.
- svd: the reduced factorization (Giles 2008 and JAX's extra terms for m != n); full
  matrices raise, as in JAX.
- eig: eigenvalues only, dw = diag(V^-1 dA V); eigenvector derivatives raise, as they do in
  JAX unless asked for (purejit has no enable_eigvec_derivs).
- lu_pivots_to_permutation: integer results, not differentiable.
"""

from __future__ import annotations

import numpy as np

from purejit.tracing import bind
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    add,
    aval,
    bcast,
    conj,
    convert,
    defjvp,
    deftranspose,
    div,
    full_like,
    instantiate,
    is_linear,
    monoid_region,
    mul,
    neg,
    not_differentiable,
    op,
    sub,
    tangent_aval,
    transpose,
)

not_differentiable("integer or boolean results", "lu_pivots_to_permutation")


# ---- matrix helpers (batched over leading dims) -------------------------------------------


def _mm(a, b):
    nb = aval(a).ndim - 2
    batch = tuple(range(nb))
    return op(
        "dot_general",
        a,
        b,
        lhs_batching_dimensions=batch,
        rhs_batching_dimensions=batch,
        lhs_contracting_dimensions=(nb + 1,),
        rhs_contracting_dimensions=(nb,),
    )


def _T(x):
    n = aval(x).ndim
    return transpose(x, (*range(n - 2), n - 1, n - 2))


def _H(x):
    return conj(_T(x))


def _tri_mask(shape, k: int, lower: bool):
    """pred[shape]: j <= i + k (lower) or j >= i + k (upper) on the last two dims."""
    n = len(shape)
    rows = op("iota", shape=tuple(shape), dtype=np.dtype(np.int32), dimension=n - 2)
    cols = op("iota", shape=tuple(shape), dtype=np.dtype(np.int32), dimension=n - 1)
    shifted = add(rows, full_like(rows, k))
    return op("compare", cols, shifted, comparison_direction="LE" if lower else "GE")


def _tril(x, k: int = 0):
    return op("select", _tri_mask(aval(x).shape, k, True), x, full_like(x, 0))


def _triu(x, k: int = 0):
    return op("select", _tri_mask(aval(x).shape, k, False), x, full_like(x, 0))


def _eye_like(x):
    """The identity broadcast to x's (square) shape, in x's dtype."""
    shape = aval(x).shape
    n = len(shape)
    rows = op("iota", shape=shape, dtype=np.dtype(np.int32), dimension=n - 2)
    cols = op("iota", shape=shape, dtype=np.dtype(np.int32), dimension=n - 1)
    return convert(op("compare", rows, cols, comparison_direction="EQ"), aval(x).dtype)


def _solve_tri(a, b, **flags):
    attrs = dict(
        left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False
    )
    attrs.update(flags)
    return op("triangular_solve", a, b, **attrs)


def _diag(x):
    """The diagonal of each matrix of x, as [..., n]."""
    shape = aval(x).shape
    masked = op("select", _tri_mask(shape, 0, True), x, full_like(x, 0))
    masked = op("select", _tri_mask(shape, 0, False), masked, full_like(x, 0))
    dt = aval(x).dtype
    region = _sum_region(dt)
    return op("reduce", masked, np.zeros((), dt), dimensions=(len(shape) - 1,), regions=[region])


def _sum_region(dt):
    return monoid_region("add", np.dtype(dt))


def _real(x):
    return op("real", x) if aval(x).dtype.kind == "c" else x


def _expand_last(x, n: int, axis: int):
    """x [..., n] broadcast to [..., n, n] along a new axis -1 (axis=-1) or -2."""
    shape = aval(x).shape
    nb = len(shape) - 1
    dims = tuple(range(nb)) + ((nb + 1,) if axis == -2 else (nb,))
    return bcast(x, shape[:-1] + (n, n), dims)


def _rows_of(s, rows: int, dt):
    """s [..., k] repeated as `rows` rows: [..., rows, k], in dtype dt."""
    shape = aval(s).shape
    nb = len(shape) - 1
    out = bcast(s, shape[:-1] + (rows, shape[-1]), tuple(range(nb)) + (nb + 1,))
    return convert(out, dt)


# ---- triangular_solve ---------------------------------------------------------------------


@defjvp("triangular_solve")
def _triangular_solve_jvp(ctx, primals, tangents, attrs, regions):
    (a, b), (ta, tb) = primals, tangents
    x = op("triangular_solve", a, b, **attrs)
    out = Zero(aval(x))
    if not isinstance(tb, Zero):
        out = add(out, op("triangular_solve", a, tb, **attrs))
    if not isinstance(ta, Zero):
        out = add(out, _solve_jvp_a(ta, x, a, attrs))
    return [x], [out]


def _solve_jvp_a(g_a, ans, a, attrs):
    m, n = aval(ans).shape[-2:]
    k = 1 if attrs["unit_diagonal"] else 0
    g_a = _tril(g_a, -k) if attrs["lower"] else _triu(g_a, k)
    g_a = neg(g_a)
    g_a = _T(g_a) if attrs["transpose_a"] else g_a
    g_a = conj(g_a) if attrs["conjugate_a"] else g_a

    def a_inverse(rhs):
        return op("triangular_solve", a, rhs, **attrs)

    if attrs["left_side"]:
        return a_inverse(_mm(g_a, ans)) if m > n else _mm(a_inverse(g_a), ans)
    return a_inverse(_mm(ans, g_a)) if m < n else _mm(ans, a_inverse(g_a))


@deftranspose("triangular_solve")
def _triangular_solve_t(cts, operands, attrs, regions):
    (ct,), (a, b) = cts, operands
    if is_linear(a):
        raise NotImplementedError("triangular_solve is not linear in its matrix")
    if isinstance(ct, Zero):
        return [None, Zero(aval(b))]
    flipped = dict(attrs, transpose_a=not attrs["transpose_a"])
    return [None, op("triangular_solve", a, ct, **flipped)]


LINEAR_OPS.add("triangular_solve")


# ---- cholesky -----------------------------------------------------------------------------


@defjvp("cholesky")
def _cholesky_jvp(ctx, primals, tangents, attrs, regions):
    (x,), (sigma_dot,) = primals, tangents
    low = op("cholesky", x)
    if isinstance(sigma_dot, Zero):
        return [low], [Zero(tangent_aval(aval(low)))]
    tmp = _solve_tri(
        low, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True, lower=True
    )
    inner = _solve_tri(low, tmp, left_side=True, lower=True)
    # phi: the lower triangle with the diagonal halved
    phi = div(_tril(inner), add(full_like(inner, 1), _eye_like(inner)))
    return [low], [_mm(low, phi)]


# ---- lu -----------------------------------------------------------------------------------


@defjvp("lu")
def _lu_jvp(ctx, primals, tangents, attrs, regions):
    (a,), (a_dot,) = primals, tangents
    lu, pivots, perm = bind("lu", a)
    zeros = [Zero(tangent_aval(aval(pivots))), Zero(tangent_aval(aval(perm)))]
    if isinstance(a_dot, Zero):
        return [lu, pivots, perm], [Zero(tangent_aval(aval(lu))), *zeros]
    shape = aval(a).shape
    m, n = shape[-2:]
    k = min(m, n)
    nb = len(shape) - 2
    x = _permute_rows(a_dot, perm)
    l_part = _slice_last(lu, m, k)
    low = _tril(l_part, -1)
    low = op(
        "pad",
        low,
        np.zeros((), aval(lu).dtype),
        edge_padding_low=(0,) * len(shape),
        edge_padding_high=(0,) * (nb + 1) + (m - k,),
        interior_padding=(0,) * len(shape),
    )
    low = add(low, _eye_like(low))
    u_part = _triu(_slice_last(lu, k, n))
    up = op(
        "pad",
        u_part,
        np.zeros((), aval(lu).dtype),
        edge_padding_low=(0,) * len(shape),
        edge_padding_high=(0,) * nb + (n - k, 0),
        interior_padding=(0,) * len(shape),
    )
    if n > k:  # the identity in the bottom-right corner keeps u invertible
        corner = sub(_eye_like(up), _tril_ge(_eye_like(up), k))
        up = add(up, corner)
    la = _solve_tri(low, x, left_side=True, lower=True, unit_diagonal=True)
    lau = _solve_tri(up, la, left_side=False, lower=False)
    l_dot = _mm(low, _tril(lau, -1))
    u_dot = _mm(_triu(lau), up)
    lu_dot = add(l_dot, u_dot)
    return [lu, pivots, perm], [_slice_last(lu_dot, m, n), *zeros]


def _tril_ge(eye, k: int):
    """The identity with its first k diagonal entries only (rows < k)."""
    shape = aval(eye).shape
    rows = op("iota", shape=shape, dtype=np.dtype(np.int32), dimension=len(shape) - 2)
    keep = op("compare", rows, full_like(rows, k), comparison_direction="LT")
    return op("select", keep, eye, full_like(eye, 0))


def _slice_last(x, rows: int, cols: int):
    shape = aval(x).shape
    if shape[-2:] == (rows, cols):
        return x
    n = len(shape)
    return op(
        "slice",
        x,
        start_indices=(0,) * n,
        limit_indices=shape[:-2] + (rows, cols),
        strides=(1,) * n,
    )


def _permute_rows(x, perm):
    """x[..., perm, :] per batch element (a gather of whole rows)."""
    shape = aval(x).shape
    *batch, m, k = shape
    nb = int(np.prod(batch, dtype=np.int64)) if batch else 1
    flat = op("reshape", x, shape=(nb, m, k))
    rows = op("reshape", perm, shape=(nb, m, 1))
    which = op("iota", shape=(nb, m, 1), dtype=np.dtype(np.int32), dimension=0)
    idx = op("concatenate", which, rows, dimension=2)
    out = op(
        "gather",
        flat,
        idx,
        offset_dims=(2,),
        collapsed_slice_dims=(0, 1),
        start_index_map=(0, 1),
        index_vector_dim=2,
        slice_sizes=(1, 1, k),
        indices_are_sorted=False,
    )
    return op("reshape", out, shape=shape)


# ---- qr -----------------------------------------------------------------------------------


@defjvp("qr")
def _qr_jvp(ctx, primals, tangents, attrs, regions):
    (x,), (dx,) = primals, tangents
    m, n = aval(x).shape[-2:]
    outs = bind("qr", x, **attrs)
    if isinstance(dx, Zero):
        return outs, [Zero(tangent_aval(aval(o))) for o in outs]
    if m < n or (attrs["full_matrices"] and m != n):
        raise NotImplementedError("Unimplemented case of QR decomposition derivative")
    q, r = outs
    dx_rinv = _solve_tri(r, dx)  # dx r^-1
    qt_dx_rinv = _mm(_H(q), dx_rinv)
    lower = _tril(qt_dx_rinv, -1)
    do = sub(lower, _H(lower))  # skew-Hermitian
    if aval(x).dtype.kind == "c":
        imag_part = sub(qt_dx_rinv, convert(_real(qt_dx_rinv), aval(x).dtype))
        do = add(do, mul(_eye_like(do), imag_part))
    dq = add(_mm(q, sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(sub(qt_dx_rinv, do), r)
    return outs, [dq, dr]


# ---- eigh ---------------------------------------------------------------------------------


@defjvp("eigh")
def _eigh_jvp(ctx, primals, tangents, attrs, regions):
    (x,), (x_dot,) = primals, tangents
    v, w_real = bind("eigh", x, **attrs)
    if isinstance(x_dot, Zero):
        return [v, w_real], [Zero(tangent_aval(aval(v))), Zero(tangent_aval(aval(w_real)))]
    dt = aval(x).dtype
    n = aval(x).shape[-1]
    w = convert(w_real, dt)
    eye = _eye_like(x)
    diff = sub(_expand_last(w, n, -2), _expand_last(w, n, -1))  # w_j - w_i
    fmat = sub(div(full_like(eye, 1), add(eye, diff)), eye)
    vdag_adot_v = _mm(_mm(_H(v), x_dot), v)
    dv = _mm(v, mul(fmat, vdag_adot_v))
    dw = _real(_diag(vdag_adot_v))
    return [v, w_real], [dv, dw]


# ---- svd ----------------------------------------------------------------------------------


@defjvp("svd")
def _svd_jvp(ctx, primals, tangents, attrs, regions):
    (a,), (da,) = primals, tangents
    full, uv = attrs["full_matrices"], attrs["compute_uv"]
    if uv and full:
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices"
        )
    s, u, vt = bind("svd", a, full_matrices=False, compute_uv=True)
    outs = [s, u, vt] if uv else [s]
    if isinstance(da, Zero):
        return outs, [Zero(tangent_aval(aval(o))) for o in outs]
    dt = aval(a).dtype
    m, n = aval(a).shape[-2:]
    k = aval(s).shape[-1]
    ut, v = _H(u), _H(vt)
    ds_mat = _mm(_mm(ut, da), v)
    ds = _real(_diag(ds_mat))
    if not uv:
        return outs, [ds]
    s_row = _expand_last(s, k, -2)  # s_j at [i, j]
    s_col = _T(s_row)  # s_i at [i, j]
    s_diffs = mul(add(s_row, s_col), sub(s_row, s_col))
    eye_r = _eye_like(s_diffs)
    f = sub(div(full_like(eye_r, 1), add(s_diffs, eye_r)), eye_r)
    s_row_c = convert(s_row, dt)
    dss = mul(s_row_c, ds_mat)
    sds = mul(_T(s_row_c), ds_mat)
    s_zero = convert(op("compare", s, full_like(s, 0), comparison_direction="EQ"), aval(s).dtype)
    s_inv = sub(div(full_like(s, 1), add(s, s_zero)), s_zero)
    s_inv_mat = mul(_expand_last(s_inv, k, -2), eye_r)
    half = full_like(ds_mat, 0.5)
    dudv_diag = mul(mul(half, sub(ds_mat, _H(ds_mat))), convert(s_inv_mat, dt))
    f_c = convert(f, dt)
    du = _mm(u, add(mul(f_c, add(dss, _H(dss))), dudv_diag))
    dv = _mm(v, mul(f_c, add(sds, _H(sds))))
    if m > n:
        dav = _mm(da, v)
        du = add(du, div(sub(dav, _mm(u, _mm(ut, dav))), _rows_of(s, m, dt)))
    if n > m:
        dahu = _mm(_H(da), u)
        dv = add(dv, div(sub(dahu, _mm(v, _mm(vt, dahu))), _rows_of(s, n, dt)))
    return outs, [ds, du, _H(dv)]


# ---- eig ----------------------------------------------------------------------------------


@defjvp("eig")
def _eig_jvp(ctx, primals, tangents, attrs, regions):
    (a,), (da,) = primals, tangents
    if attrs["compute_left_eigenvectors"] or attrs["compute_right_eigenvectors"]:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on "
            "the input that cannot be checked; differentiate the eigenvalues "
            "(compute_*_eigenvectors=False, numpy.linalg.eigvals) instead"
        )
    w, vr = bind("eig", a, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
    if isinstance(da, Zero):
        return [w], [Zero(tangent_aval(aval(w)))]
    cdt = aval(vr).dtype
    da = convert(instantiate(da, aval(a)), cdt)
    # diag(vr^-1 da vr): solve with vr's LU factors, then dot with vr's columns
    lu, _, perm = bind("lu", vr)
    y = _permute_rows(da, perm)
    y = _solve_tri(lu, y, left_side=True, lower=True, unit_diagonal=True)
    y = _solve_tri(lu, y, left_side=True, lower=False)
    dw = _diag(_mm(y, vr))
    return [w], [dw]
