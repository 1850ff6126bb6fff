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

JAX has these as `jax.lax.linalg.householder_product`, `ormqr` and the internal `geqrf`
(what `jnp.linalg.qr(mode="raw")` returns, transposed); none has a derivative rule there.
"""

from __future__ import annotations

import numpy as np
from purejit.ir.core import TensorType
from purejit.ir.ops._util import nargs
from purejit.ir.ops.linalg import _bool_attrs, _each_matrix, _matrix, complex_dtype
from purejit.ir.registry import OpDef, fail, register

_PURE = frozenset({"pure"})


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
