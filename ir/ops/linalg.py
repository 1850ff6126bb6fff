"""Linear-algebra ops: factorizations and triangular solves on batches of matrices.

Every op works on the last two dimensions of its operands; the leading dimensions are a
batch, the same for every operand. Element types are f32, f64, c64 and c128 (what LAPACK and
cuSOLVER implement). A factorization that fails (a matrix that is not positive definite, an
iteration that does not converge) gives NaN in every output of that batch element, as JAX's
do; a singular LU is not a failure (zero pivots stay in U).

cholesky(a) -> l
    The lower Cholesky factor of each Hermitian positive-definite matrix; only the lower
    triangle of `a` is read, the upper triangle of `l` is zero.
triangular_solve(a, b) {left_side, lower, transpose_a, conjugate_a, unit_diagonal} -> x
    Solves op(a) x = b (left_side) or x op(a) = b, op(a) being a, a^T or a^H; only the
    `lower` (or upper) triangle of `a` is read, its diagonal taken as ones if unit_diagonal.
lu(a) -> (lu, pivots, permutation)
    LU with partial pivoting (LAPACK getrf): P a = L U with L unit lower (stored below the
    diagonal of `lu`) and U upper; `pivots` (s32, length min(m, n)) are the 0-based row
    swaps, `permutation` (s32, length m) the rows of `a` in the order P applies them.
lu_pivots_to_permutation(pivots) {permutation_size} -> permutation
    The permutation that applying the row swaps `pivots` in order makes of 0..size-1.
qr(a) {full_matrices} -> (q, r)
    Householder QR: q (m x m, or m x min(m, n)) with orthonormal columns, r upper triangular.
eigh(a) {lower, sort_eigenvalues} -> (v, w)
    Eigenvectors (columns of v) and real eigenvalues w, ascending, of Hermitian matrices;
    only the `lower` (or upper) triangle of `a` is read.
svd(a) {full_matrices, compute_uv} -> (s, u, vt) or (s,)
    Singular values, descending, and (compute_uv) the singular vectors: a = u diag(s) vt.
eig(a) {compute_left_eigenvectors, compute_right_eigenvectors} -> (w, [vl], [vr])
    Eigenvalues (complex) of general square matrices and, when asked, the left and right
    eigenvectors (complex, unit 2-norm, largest component real), as LAPACK geev returns them.
hessenberg(a) -> (h, q)
    The Hessenberg form a = q h q^H: h zero below its first subdiagonal, q unitary (LAPACK
    gehrd and orghr).
schur(a) -> (t, z)
    The Schur form a = z t z^H, z unitary: t upper triangular for complex a, quasi upper
    triangular for real a (2 x 2 diagonal blocks hold complex-conjugate eigenvalue pairs),
    as LAPACK gees returns it (unsorted).

Eigen- and singular vectors are unique only up to a phase; the NumPy reference rules use
NumPy's LAPACK and may differ from the compiled program there.
"""

from __future__ import annotations

import numpy as np
from purejit.ir.core import TensorType
from purejit.ir.ops import _schur_reference
from purejit.ir.ops._util import int_attr, nargs, need_attrs
from purejit.ir.registry import OpDef, fail, register

_LINALG_DTYPES = tuple(np.dtype(d) for d in (np.float32, np.float64, np.complex64, np.complex128))
_PURE = frozenset({"pure", "accumulates"})  # LAPACK / cuSOLVER kernels


def real_dtype(dt) -> np.dtype:
    """The real dtype of a (possibly complex) linalg dtype: c64 -> f32, c128 -> f64."""
    dt = np.dtype(dt)
    return np.dtype(np.float32 if dt in (np.float32, np.complex64) else np.float64)


def complex_dtype(dt) -> np.dtype:
    """The complex dtype of a linalg dtype: f32 -> c64, f64 -> c128."""
    return np.dtype(np.complex64 if real_dtype(dt) == np.float32 else np.complex128)


def _matrix(op: str, t: TensorType, *, square: bool = False, what: str = "operand"):
    if t.rank < 2:
        fail(op, f"{what} must have rank >= 2 (a batch of matrices), got {t}")
    if np.dtype(t.dtype) not in _LINALG_DTYPES:
        fail(op, f"{what} {t} must be f32, f64, c64 or c128")
    if square and t.shape[-1] != t.shape[-2]:
        fail(op, f"{what} must be a batch of square matrices, got {t}")
    return t.shape[:-2], t.shape[-2], t.shape[-1]


def _bool_attrs(op: str, attrs: dict, *names: str):
    need_attrs(op, attrs, *names)
    for n in names:
        if not isinstance(attrs[n], (bool, np.bool_)):
            fail(op, f"{n} must be a bool, got {attrs[n]!r}")


def _each_matrix(fn, *arrays):
    """Apply `fn` (matrices -> tuple of arrays) to every batch element; stack the results."""
    batch = arrays[0].shape[:-2]
    outs = None
    for idx in np.ndindex(*batch):
        res = fn(*(a[idx] for a in arrays))
        if outs is None:
            outs = [np.empty(batch + np.shape(r), np.asarray(r).dtype) for r in res]
        for o, r in zip(outs, res):
            o[idx] = r
    return outs


def _nan_fill(results: list[np.ndarray]) -> tuple:
    return tuple(np.full(r.shape, np.nan, r.dtype) for r in results)


def _hermitian_from(a: np.ndarray, lower: bool) -> np.ndarray:
    """The Hermitian matrix whose `lower` (or upper) triangle is that of `a`."""
    t = np.tril(a) if lower else np.triu(a)
    off = np.tril(a, -1) if lower else np.triu(a, 1)
    h = t + off.conj().T
    return h - np.diag(np.diag(h).imag * 1j) if np.iscomplexobj(h) else h


# cholesky ------------------------------------------------------------------------------------


def _cholesky_infer(types, attrs, regions):
    nargs("cholesky", types, 1)
    _matrix("cholesky", types[0], square=True)
    return [types[0]]


def _cholesky_ref(args, attrs, regions, run):
    (a,) = args

    def one(m):
        try:
            return (np.linalg.cholesky(_hermitian_from(m, True)).astype(m.dtype),)
        except np.linalg.LinAlgError:
            return (np.tril(_nan_fill([m])[0]),)

    return _each_matrix(one, a) if a.size else [a.copy()]


register(
    OpDef(
        "cholesky",
        _cholesky_infer,
        _cholesky_ref,
        _PURE,
        doc="cholesky(a) -> lower factor l (NaN where a is not positive definite)",
    )
)

# triangular_solve ----------------------------------------------------------------------------

TRIANGULAR_SOLVE_ATTRS = ("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")


def _triangular_solve_infer(types, attrs, regions):
    op = "triangular_solve"
    nargs(op, types, 2)
    a, b = types
    _bool_attrs(op, attrs, *TRIANGULAR_SOLVE_ATTRS)
    batch, m, _ = _matrix(op, a, square=True, what="a")
    bbatch, bm, bn = _matrix(op, b, what="b")
    if a.dtype != b.dtype:
        fail(op, f"a {a} and b {b} must have one dtype")
    if bbatch != batch:
        fail(op, f"a {a} and b {b} must have the same batch dimensions")
    k = bm if attrs["left_side"] else bn
    if k != m:
        side = "rows" if attrs["left_side"] else "columns"
        fail(op, f"b {b} must have {m} {side} to be solved against a {a}")
    return [b]


def _triangular_solve_ref(args, attrs, regions, run):
    a, b = args
    lower = attrs["lower"]

    def one(am, bm):
        t = np.tril(am) if lower else np.triu(am)
        if attrs["unit_diagonal"]:
            np.fill_diagonal(t, 1)
        if attrs["conjugate_a"]:
            t = t.conj()
        if attrs["transpose_a"]:
            t = t.T
        wide = complex_dtype(t.dtype) if np.iscomplexobj(t) else np.float64
        t, bw = t.astype(wide), bm.astype(wide)
        with np.errstate(all="ignore"):
            if attrs["left_side"]:
                x = _tri_solve(t, bw)
            else:  # x t = b  <=>  t^T x^T = b^T
                x = _tri_solve(t.T, bw.T).T
        return (x.astype(bm.dtype),)

    return _each_matrix(one, a, b) if b.size else [b.copy()]


def _tri_solve(t, b):
    """Substitution for triangular `t` (which triangle is read from its zeros)."""
    n = t.shape[0]
    x = np.zeros_like(b)
    is_lower = not np.triu(t, 1).any()
    order = range(n) if is_lower else range(n - 1, -1, -1)
    for i in order:
        x[i] = (b[i] - t[i] @ x) / t[i, i]
    return x


register(
    OpDef(
        "triangular_solve",
        _triangular_solve_infer,
        _triangular_solve_ref,
        _PURE,
        attrs=TRIANGULAR_SOLVE_ATTRS,
        doc="triangular_solve(a, b) {left_side, lower, transpose_a, conjugate_a, "
        "unit_diagonal} -> x",
    )
)

# lu ------------------------------------------------------------------------------------------


def _lu_infer(types, attrs, regions):
    nargs("lu", types, 1)
    (a,) = types
    batch, m, n = _matrix("lu", a)
    return [
        a,
        TensorType(batch + (min(m, n),), np.int32),
        TensorType(batch + (m,), np.int32),
    ]


def getrf(a: np.ndarray):
    """LAPACK getrf in NumPy: (lu, 0-based pivots) of one matrix, partial pivoting."""
    lu = a.astype(complex_dtype(a.dtype) if np.iscomplexobj(a) else np.float64)
    m, n = lu.shape
    piv = np.zeros(min(m, n), np.int32)
    for j in range(min(m, n)):
        col = lu[j:, j]
        size = np.abs(col.real) + np.abs(col.imag) if np.iscomplexobj(col) else np.abs(col)
        p = j + int(np.argmax(size))
        piv[j] = p
        if lu[p, j] != 0:
            lu[[j, p]] = lu[[p, j]]
            lu[j + 1 :, j] /= lu[j, j]
        lu[j + 1 :, j + 1 :] -= np.outer(lu[j + 1 :, j], lu[j, j + 1 :])
    return lu.astype(a.dtype), piv


def pivots_to_permutation(pivots: np.ndarray, size: int) -> np.ndarray:
    """The permutation of 0..size-1 that the row swaps `pivots` make, applied in order."""
    perm = np.arange(size, dtype=np.int32)
    for i, p in enumerate(pivots):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _lu_ref(args, attrs, regions, run):
    (a,) = args
    m = a.shape[-2]

    def one(x):
        lu, piv = getrf(x)
        return lu, piv, pivots_to_permutation(piv, m)

    if a.size == 0:
        batch, k = a.shape[:-2], min(a.shape[-2:])
        perm = np.broadcast_to(np.arange(m, dtype=np.int32), batch + (m,)).copy()
        return [a.copy(), np.zeros(batch + (k,), np.int32), perm]
    return _each_matrix(one, a)


register(
    OpDef(
        "lu",
        _lu_infer,
        _lu_ref,
        _PURE,
        doc="lu(a) -> (lu, s32 pivots, s32 permutation): LU with partial pivoting",
    )
)


def _perm_infer(types, attrs, regions):
    op = "lu_pivots_to_permutation"
    nargs(op, types, 1)
    (t,) = types
    need_attrs(op, attrs, "permutation_size")
    size = int_attr(op, "permutation_size", attrs["permutation_size"])
    if t.rank < 1 or t.dtype != np.int32:
        fail(op, f"pivots must be an s32 array of rank >= 1, got {t}")
    if size < t.shape[-1]:
        fail(op, f"permutation_size={size} is smaller than the {t.shape[-1]} pivots of {t}")
    return [TensorType(t.shape[:-1] + (size,), np.int32)]


def _perm_ref(args, attrs, regions, run):
    (piv,) = args
    size = attrs["permutation_size"]
    out = np.empty(piv.shape[:-1] + (size,), np.int32)
    for idx in np.ndindex(*piv.shape[:-1]):
        out[idx] = pivots_to_permutation(piv[idx], size)
    return [out]


register(
    OpDef(
        "lu_pivots_to_permutation",
        _perm_infer,
        _perm_ref,
        _PURE,
        attrs=("permutation_size",),
        doc="lu_pivots_to_permutation(pivots) {permutation_size} -> s32 permutation",
    )
)

# qr ------------------------------------------------------------------------------------------


def _qr_infer(types, attrs, regions):
    nargs("qr", types, 1)
    _bool_attrs("qr", attrs, "full_matrices")
    (a,) = types
    batch, m, n = _matrix("qr", a)
    k = m if attrs["full_matrices"] else min(m, n)
    return [TensorType(batch + (m, k), a.dtype), TensorType(batch + (k, n), a.dtype)]


def _qr_ref(args, attrs, regions, run):
    (a,) = args
    mode = "complete" if attrs["full_matrices"] else "reduced"
    m, n = a.shape[-2:]
    k = m if attrs["full_matrices"] else min(m, n)
    if a.size == 0:
        q = np.broadcast_to(np.eye(m, k, dtype=a.dtype), a.shape[:-2] + (m, k)).copy()
        return [q, np.zeros(a.shape[:-2] + (k, n), a.dtype)]
    return _each_matrix(lambda x: tuple(r.astype(x.dtype) for r in np.linalg.qr(x, mode)), a)


register(
    OpDef(
        "qr",
        _qr_infer,
        _qr_ref,
        _PURE,
        attrs=("full_matrices",),
        doc="qr(a) {full_matrices} -> (q, r)",
    )
)

# eigh ----------------------------------------------------------------------------------------


def _eigh_infer(types, attrs, regions):
    nargs("eigh", types, 1)
    _bool_attrs("eigh", attrs, "lower", "sort_eigenvalues")
    (a,) = types
    batch, n, _ = _matrix("eigh", a, square=True)
    return [a, TensorType(batch + (n,), real_dtype(a.dtype))]


def _eigh_ref(args, attrs, regions, run):
    (a,) = args
    rdt = real_dtype(a.dtype)

    def one(x):
        try:
            w, v = np.linalg.eigh(_hermitian_from(x, attrs["lower"]))
            return v.astype(x.dtype), w.astype(rdt)
        except np.linalg.LinAlgError:
            return _nan_fill([x, np.zeros(x.shape[-1], rdt)])

    if a.size == 0:
        return [a.copy(), np.zeros(a.shape[:-1], rdt)]
    return _each_matrix(one, a)


register(
    OpDef(
        "eigh",
        _eigh_infer,
        _eigh_ref,
        _PURE,
        attrs=("lower", "sort_eigenvalues"),
        doc="eigh(a) {lower, sort_eigenvalues} -> (eigenvectors v, real eigenvalues w)",
    )
)

# svd -----------------------------------------------------------------------------------------


def _svd_infer(types, attrs, regions):
    nargs("svd", types, 1)
    _bool_attrs("svd", attrs, "full_matrices", "compute_uv")
    (a,) = types
    batch, m, n = _matrix("svd", a)
    k = min(m, n)
    s = TensorType(batch + (k,), real_dtype(a.dtype))
    if not attrs["compute_uv"]:
        return [s]
    um, vn = (m, n) if attrs["full_matrices"] else (k, k)
    return [s, TensorType(batch + (m, um), a.dtype), TensorType(batch + (vn, n), a.dtype)]


def _svd_ref(args, attrs, regions, run):
    (a,) = args
    full, uv = attrs["full_matrices"], attrs["compute_uv"]
    rdt = real_dtype(a.dtype)
    m, n = a.shape[-2:]
    k = min(m, n)

    def one(x):
        try:
            if not uv:
                return (np.linalg.svd(x, compute_uv=False).astype(rdt),)
            u, s, vt = np.linalg.svd(x, full_matrices=full)
            return s.astype(rdt), u.astype(x.dtype), vt.astype(x.dtype)
        except np.linalg.LinAlgError:
            shapes = [(k,), (m, m if full else k), (n if full else k, n)]
            return _nan_fill([np.zeros(s, d) for s, d in zip(shapes, [rdt, x.dtype, x.dtype])])

    if a.size == 0:
        batch = a.shape[:-2]
        outs = [np.zeros(batch + (k,), rdt)]
        if uv:
            um, vn = (m, n) if full else (k, k)
            outs += [
                np.broadcast_to(np.eye(m, um, dtype=a.dtype), batch + (m, um)).copy(),
                np.broadcast_to(np.eye(vn, n, dtype=a.dtype), batch + (vn, n)).copy(),
            ]
        return outs
    return _each_matrix(one, a)


register(
    OpDef(
        "svd",
        _svd_infer,
        _svd_ref,
        _PURE,
        attrs=("full_matrices", "compute_uv"),
        doc="svd(a) {full_matrices, compute_uv} -> (s, u, vt) or (s,)",
    )
)

# eig -----------------------------------------------------------------------------------------

EIG_ATTRS = ("compute_left_eigenvectors", "compute_right_eigenvectors")


def _eig_infer(types, attrs, regions):
    nargs("eig", types, 1)
    _bool_attrs("eig", attrs, *EIG_ATTRS)
    (a,) = types
    batch, n, _ = _matrix("eig", a, square=True)
    cdt = complex_dtype(a.dtype)
    count = int(attrs["compute_left_eigenvectors"]) + int(attrs["compute_right_eigenvectors"])
    return [TensorType(batch + (n,), cdt)] + [TensorType(a.shape, cdt)] * count


def _normalize_columns(v: np.ndarray) -> np.ndarray:
    """Unit 2-norm columns whose largest-magnitude component is real and positive (geev's)."""
    v = v / np.linalg.norm(v, axis=0, keepdims=True)
    big = v[np.argmax(np.abs(v), axis=0), np.arange(v.shape[1])]
    return v * (np.abs(big) / np.where(big == 0, 1, big))


def _eig_ref(args, attrs, regions, run):
    (a,) = args
    left, right = (attrs[k] for k in EIG_ATTRS)
    cdt = complex_dtype(a.dtype)

    def one(x):
        try:
            w, vr = np.linalg.eig(x)
            outs = [w.astype(cdt)]
            if left:  # rows of vr^-1 are the left eigenvectors, conjugated
                outs.append(_normalize_columns(np.linalg.inv(vr).conj().T).astype(cdt))
            if right:
                outs.append(_normalize_columns(vr.astype(np.complex128)).astype(cdt))
            return tuple(outs)
        except np.linalg.LinAlgError:
            n = x.shape[-1]
            return _nan_fill([np.zeros(n, cdt)] + [np.zeros((n, n), cdt)] * (left + right))

    if a.size == 0:
        return [np.zeros(a.shape[:-1], cdt)] + [np.zeros(a.shape, cdt)] * (left + right)
    return _each_matrix(one, a)


register(
    OpDef(
        "eig",
        _eig_infer,
        _eig_ref,
        _PURE,
        attrs=EIG_ATTRS,
        doc="eig(a) {compute_left_eigenvectors, compute_right_eigenvectors} -> (w, [vl], [vr])",
    )
)

# hessenberg and schur --------------------------------------------------------------------------


def _square_pair_infer(name):
    def infer(types, attrs, regions):
        nargs(name, types, 1)
        _matrix(name, types[0], square=True)
        return [types[0], types[0]]

    return infer


def _hessenberg_ref(args, attrs, regions, run):
    (a,) = args
    if a.size == 0:
        return [a.copy(), a.copy()]
    return _each_matrix(
        lambda x: tuple(r.astype(x.dtype) for r in _schur_reference.hessenberg(x)), a
    )


def _schur_ref(args, attrs, regions, run):
    (a,) = args
    if a.size == 0:
        return [a.copy(), a.copy()]

    def one(x):
        out = _schur_reference.schur(x)
        if out is None:
            return _nan_fill([x, x])
        return tuple(r.astype(x.dtype) for r in out)

    return _each_matrix(one, a)


register(
    OpDef(
        "hessenberg",
        _square_pair_infer("hessenberg"),
        _hessenberg_ref,
        _PURE,
        doc="hessenberg(a) -> (h, q): a = q h q^H, h upper Hessenberg",
    )
)
register(
    OpDef(
        "schur",
        _square_pair_infer("schur"),
        _schur_ref,
        _PURE,
        doc="schur(a) -> (t, z): a = z t z^H, t (quasi) upper triangular",
    )
)
