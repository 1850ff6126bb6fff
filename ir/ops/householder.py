"""Householder ops: QR in LAPACK's compact form, and the orthogonal factor it stands for.

Like the linalg family (`ir/ops/linalg.py`), every op works on the last two dimensions of
its matrix operands, the leading dimensions being a batch that is the same for every
operand; element types are f32, f64, c64 and c128.

geqrf(a) -> (h, taus)
    Householder QR (LAPACK geqrf): r is the upper triangle of h; below the diagonal, column
    i holds the reflector v_i (its leading 1 implied) of H_i = I - taus_i v_i v_i^H, so that
    a = H_0 H_1 ... H_{k-1} r, k = min(m, n).
householder_product(a, taus) -> q
    The first n columns of H_0 ... H_{k-1} (LAPACK orgqr / ungqr), for a [m, n] with m >= n
    holding k <= n reflectors below its diagonal.
ormqr(a, taus, c) {left, transpose} -> c'
    Q c, Q^H c (left) or c Q, c Q^H without forming Q = H_0 ... H_{k-1} (LAPACK ormqr /
    unmqr); a [m, n] holds k <= min(m, n) reflectors, c has m rows (left) or m columns.
gehrd(a) -> (h, taus)
    Hessenberg reduction of square matrices (LAPACK gehrd): a = Q H Q^H with H in the upper
    triangle and first subdiagonal of h, the reflectors of Q = H_0 ... H_{n-2} below it
    (reflector i acts on rows i+1..n-1), taus [n - 1].
sytrd(a) {lower} -> (h, d, e, taus)
    Tridiagonal reduction of Hermitian matrices (LAPACK sytrd / hetrd), reading the `lower`
    (or upper) triangle only: a = Q T Q^H, T with diagonal d and off-diagonal e (real,
    [n] and [n - 1]); h holds d and e in that triangle and the reflectors beyond them, the
    other triangle as given.

JAX has these as `jax.lax.linalg.householder_product`, `ormqr`, `hessenberg` (gehrd),
`tridiagonal` (sytrd) and the internal `geqrf` (what `jnp.linalg.qr(mode="raw")` returns,
transposed); none has a derivative rule there.
"""

from __future__ import annotations

import numpy as np
from purejit.ir.core import TensorType
from purejit.ir.ops._util import nargs
from purejit.ir.ops.linalg import (
    _bool_attrs,
    _each_matrix,
    _matrix,
    complex_dtype,
    real_dtype,
)
from purejit.ir.registry import OpDef, fail, register

_PURE = frozenset({"pure", "accumulates"})  # LAPACK / cuSOLVER kernels


def _vector(op: str, t: TensorType, batch: tuple, dtype, what: str) -> int:
    if t.rank != len(batch) + 1 or t.shape[:-1] != batch or t.dtype != dtype:
        fail(op, f"{what} {t} must be a {np.dtype(dtype).name} vector per matrix, batch {batch}")
    return t.shape[-1]


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(complex_dtype(x.dtype) if np.iscomplexobj(x) else np.float64)


def reflect(h: np.ndarray, taus: np.ndarray, c: np.ndarray, *, left: bool, adjoint: bool):
    """Q c, Q^H c (left) or c Q, c Q^H for Q = H_0 ... H_{k-1}, in the widest float type;
    the reflectors are below the diagonal of `h` (one matrix)."""
    m, k = h.shape[0], taus.shape[0]
    h, taus, out = _wide(h), _wide(taus), _wide(c)
    # Q c applies H_{k-1} first; Q^H c and c Q apply H_0 first; c Q^H applies H_{k-1} first
    order = range(k) if left == adjoint else range(k - 1, -1, -1)
    for i in order:
        v = np.zeros(m, h.dtype)
        v[i] = 1
        v[i + 1 :] = h[i + 1 :, i]
        tau = np.conj(taus[i]) if adjoint else taus[i]
        if left:  # H c = c - tau v (v^H c)
            out = out - tau * np.outer(v, v.conj() @ out)
        else:  # c H = c - tau (c v) v^H
            out = out - tau * np.outer(out @ v, v.conj())
    return out


# geqrf ---------------------------------------------------------------------------------------


def _geqrf_infer(types, attrs, regions):
    nargs("geqrf", types, 1)
    (a,) = types
    batch, m, n = _matrix("geqrf", a)
    return [a, TensorType(batch + (min(m, n),), a.dtype)]


def _geqrf_ref(args, attrs, regions, run):
    (a,) = args
    k = min(a.shape[-2:])
    if k == 0:
        return [a.copy(), np.zeros(a.shape[:-2] + (0,), a.dtype)]

    def one(x):
        h, taus = np.linalg.qr(_wide(x), mode="raw")  # NumPy's h is LAPACK's, transposed
        return h.T.astype(x.dtype), taus.astype(x.dtype)

    return _each_matrix(one, a)


register(
    OpDef(
        "geqrf",
        _geqrf_infer,
        _geqrf_ref,
        _PURE,
        doc="geqrf(a) -> (h, taus): Householder QR in LAPACK's compact form",
    )
)

# householder_product -------------------------------------------------------------------------


def _householder_product_infer(types, attrs, regions):
    op = "householder_product"
    nargs(op, types, 2)
    a, taus = types
    batch, m, n = _matrix(op, a, what="a")
    k = _vector(op, taus, batch, a.dtype, "taus")
    if m < n:
        fail(op, f"a {a} must have at least as many rows as columns")
    if k > n:
        fail(op, f"taus {taus} holds more than the {n} reflectors a {a} has room for")
    return [a]


def _householder_product_ref(args, attrs, regions, run):
    a, taus = args
    m, n = a.shape[-2:]
    if a.size == 0:
        return [a.copy()]

    def one(h, t):
        return (reflect(h, t, np.eye(m, n), left=True, adjoint=False).astype(h.dtype),)

    return _each_matrix(one, a, taus)


register(
    OpDef(
        "householder_product",
        _householder_product_infer,
        _householder_product_ref,
        _PURE,
        doc="householder_product(a, taus) -> q: the first n columns of H_0 ... H_{k-1}",
    )
)

# ormqr ---------------------------------------------------------------------------------------


def _ormqr_infer(types, attrs, regions):
    op = "ormqr"
    nargs(op, types, 3)
    _bool_attrs(op, attrs, "left", "transpose")
    a, taus, c = types
    batch, m, n = _matrix(op, a, what="a")
    k = _vector(op, taus, batch, a.dtype, "taus")
    cbatch, rows, cols = _matrix(op, c, what="c")
    if c.dtype != a.dtype or cbatch != batch:
        fail(op, f"c {c} must have the dtype and batch dimensions of a {a}")
    if k > min(m, n):
        fail(op, f"taus {taus} holds more than the {min(m, n)} reflectors a {a} has room for")
    if (rows if attrs["left"] else cols) != m:
        side = "rows" if attrs["left"] else "columns"
        fail(op, f"c {c} must have {m} {side}, as a {a} has rows (left={attrs['left']})")
    return [c]


def _ormqr_ref(args, attrs, regions, run):
    a, taus, c = args
    if c.size == 0:
        return [c.copy()]

    def one(h, t, x):
        out = reflect(h, t, x, left=attrs["left"], adjoint=attrs["transpose"])
        return (out.astype(x.dtype),)

    return _each_matrix(one, a, taus, c)


register(
    OpDef(
        "ormqr",
        _ormqr_infer,
        _ormqr_ref,
        _PURE,
        attrs=("left", "transpose"),
        doc="ormqr(a, taus, c) {left, transpose} -> Q c, Q^H c, c Q or c Q^H",
    )
)


# gehrd and sytrd -----------------------------------------------------------------------------


def larfg(alpha, x: np.ndarray):
    """LAPACK's elementary reflector (larfg): (beta, tau, v) with H = I - tau [1, v][1, v]^H
    and H^H [alpha, x] = [beta, 0], beta real."""
    xnorm = np.linalg.norm(x)
    if xnorm == 0 and np.imag(alpha) == 0:
        return np.real(alpha), 0 * alpha, x
    beta = -np.copysign(np.sqrt(np.abs(alpha) ** 2 + xnorm**2), np.real(alpha))
    tau = (beta - np.real(alpha)) / beta - 1j * np.imag(alpha) / beta
    tau = tau if np.iscomplexobj(x) or np.iscomplexobj(alpha) else np.real(tau)
    return beta, tau, x / (alpha - beta)


def _gehrd_one(a: np.ndarray):
    h = _wide(a)
    n = h.shape[0]
    taus = np.zeros(max(n - 1, 0), h.dtype)
    for i in range(n - 1):
        beta, tau, v = larfg(h[i + 1, i], h[i + 2 :, i])
        w = np.concatenate([[1], v]).astype(h.dtype)
        # H = I - tau w w^H on rows/columns i+1..: A <- H^H A H
        h[:, i + 1 :] -= tau * np.outer(h[:, i + 1 :] @ w, w.conj())
        h[i + 1 :, i + 1 :] -= np.conj(tau) * np.outer(w, w.conj() @ h[i + 1 :, i + 1 :])
        h[i + 1, i], h[i + 2 :, i], taus[i] = beta, v, tau
    return h.astype(a.dtype), taus.astype(a.dtype)


def _gehrd_infer(types, attrs, regions):
    nargs("gehrd", types, 1)
    (a,) = types
    batch, n, _ = _matrix("gehrd", a, square=True)
    return [a, TensorType(batch + (max(n - 1, 0),), a.dtype)]


def _gehrd_ref(args, attrs, regions, run):
    (a,) = args
    n = a.shape[-1]
    if a.size == 0 or n == 1:
        return [a.copy(), np.zeros(a.shape[:-2] + (max(n - 1, 0),), a.dtype)]
    return _each_matrix(_gehrd_one, a)


register(
    OpDef(
        "gehrd",
        _gehrd_infer,
        _gehrd_ref,
        _PURE,
        doc="gehrd(a) -> (h, taus): Hessenberg reduction in LAPACK's compact form",
    )
)


def _sytrd_one(a: np.ndarray, lower: bool):
    n = a.shape[0]
    full = _wide(
        np.tril(a) + np.tril(a, -1).conj().T if lower else np.triu(a) + np.triu(a, 1).conj().T
    )
    if np.iscomplexobj(full):
        np.fill_diagonal(full, np.real(np.diag(full)))
    out = a.copy()
    e = np.zeros(n - 1, real_dtype(a.dtype))
    taus = np.zeros(n - 1, a.dtype)
    # lower: reflector i zeroes column i below its subdiagonal; upper: reflector j zeroes
    # column j + 1 above its superdiagonal, the last first, the 1 of v at its bottom
    order = range(n - 1) if lower else range(n - 2, -1, -1)
    for i in order:
        rows = slice(i + 1, n) if lower else slice(0, i + 1)
        col = full[rows, i] if lower else full[rows, i + 1]
        alpha, x = (col[0], col[1:]) if lower else (col[-1], col[:-1])
        beta, tau, v = larfg(alpha, x)
        w = np.concatenate([[1], v] if lower else [v, [1]]).astype(full.dtype)
        blk = full[rows, rows]  # A <- H^H A H on the trailing (leading) block
        blk = blk - tau * np.outer(blk @ w, w.conj())
        full[rows, rows] = blk - np.conj(tau) * np.outer(w, w.conj() @ blk)
        e[i], taus[i] = beta, tau
        if lower:
            out[i + 2 :, i] = v
        else:
            out[:i, i + 1] = v
    d = np.real(np.diag(full)).astype(real_dtype(a.dtype))
    np.fill_diagonal(out, d)
    k = np.arange(n - 1)
    if lower:
        out[k + 1, k] = e
    else:
        out[k, k + 1] = e
    return out, d, e, taus


def _sytrd_infer(types, attrs, regions):
    nargs("sytrd", types, 1)
    _bool_attrs("sytrd", attrs, "lower")
    (a,) = types
    batch, n, _ = _matrix("sytrd", a, square=True)
    if n == 0:
        fail("sytrd", f"a {a} must hold matrices of at least one row")
    r = real_dtype(a.dtype)
    return [
        a,
        TensorType(batch + (n,), r),
        TensorType(batch + (n - 1,), r),
        TensorType(batch + (n - 1,), a.dtype),
    ]


def _sytrd_ref(args, attrs, regions, run):
    (a,) = args
    if a.size == 0:
        r, n = real_dtype(a.dtype), a.shape[-1]
        b = a.shape[:-2]
        z = [np.zeros(b + (k,), t) for k, t in ((n, r), (n - 1, r), (n - 1, a.dtype))]
        return [a.copy(), *z]
    return _each_matrix(lambda x: _sytrd_one(x, attrs["lower"]), a)


register(
    OpDef(
        "sytrd",
        _sytrd_infer,
        _sytrd_ref,
        _PURE,
        attrs=("lower",),
        doc="sytrd(a) {lower} -> (h, d, e, taus): tridiagonal reduction, LAPACK's form",
    )
)
