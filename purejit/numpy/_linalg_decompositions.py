"""The decompositions of `purejit.numpy.linalg` (cholesky, qr, svd, eigh, eig and their
value-only forms), their result tuples, and the argument checks every linalg function shares.

Apart from `linalg.py` because solving, norms and products all build on these; `linalg.py`
re-exports every public name here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import convert
from purejit.lax import linalg as lax_linalg
from purejit.numpy._core import _lift, abs, astype, broadcast_to, sign
from purejit.numpy._indexing import take_along_axis
from purejit.numpy._manip import flip
from purejit.numpy._shape import expand_dims, swapaxes
from purejit.numpy._sorting import argsort


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


def _inexact(name: str, *xs):
    """Lift and promote to one inexact dtype (JAX's promote_dtypes_inexact); no broadcast."""
    arrs = [_lift(x) for x in xs]
    dt, weak = pdt.result_type_weak(*[(a.dtype, a.weak_type) for a in arrs])
    if not pdt.is_inexact(dt):
        dt = pdt.default_float()
    out = [convert(a, dt, weak=weak) for a in arrs]
    return out if len(xs) > 1 else out[0]


def _matrices(name: str, a, *, square: bool = False):
    if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
        kind = "square matrices [..., n, n]" if square else "matrices [..., m, n]"
        raise ValueError(
            f"linalg.{name}: expected {kind}, got shape {list(a.shape)}"
            f"{errors.at(errors.user_location())}"
        )
    return a


def _mT(x):
    return swapaxes(x, -1, -2)


def _H(x):
    return lax_linalg.conj(_mT(x))


def _eps(dtype) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


# ---- decompositions ---------------------------------------------------------------------------


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor of Hermitian positive-definite matrices: L (a = L L^H), or L^H when
    `upper`; NaN for a matrix that is not positive definite."""
    a = _matrices("cholesky", _inexact("cholesky", a), square=True)
    low = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(low) if upper else low


def qr(a, mode: str = "reduced"):
    """QR decomposition: QRResult(Q, R) for mode 'reduced' or 'complete', R for mode 'r',
    and for mode 'raw' LAPACK's Householder form QRResult(h^T, taus) from `geqrf` (h [..., n,
    m] transposed, as JAX and NumPy return it; not differentiable, as in JAX)."""
    a = _matrices("qr", _inexact("qr", a))
    if mode == "raw":
        h, taus = lax_linalg.geqrf(a)
        return QRResult(_mT(h), taus)
    if mode not in ("reduced", "complete", "r", "full"):
        raise ValueError(f"linalg.qr: unsupported mode {mode!r}")
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):  # fmt: skip
    """Singular value decomposition: SVDResult(U, S, Vh) with a = U diag(S) Vh, or S alone."""
    a = _matrices("svd", _inexact("svd", a))
    if hermitian:
        v, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
        s = abs(w)
        order = flip(argsort(s, axis=-1), -1)
        s = take_along_axis(s, order, axis=-1)
        if not compute_uv:
            return s
        sgn = take_along_axis(sign(w), order, axis=-1)
        u = take_along_axis(v, broadcast_to(expand_dims(order, -2), v.shape), axis=-1)
        vh = _H(u * astype(expand_dims(sgn, -2), u.dtype))
        return SVDResult(u, s, vh)
    if compute_uv:
        u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, subset_by_index=subset_by_index)
        return SVDResult(u, s, vh)
    return lax_linalg.svd(
        a, full_matrices=full_matrices, compute_uv=False, subset_by_index=subset_by_index
    )


def svdvals(x, /):
    """The singular values of each matrix, in descending order."""
    return svd(x, compute_uv=False)


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices: EighResult(w, v)."""
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"linalg.eigh: UPLO must be one of None, 'L', or 'U', got {UPLO!r}")
    a = _matrices("eigh", _inexact("eigh", a), square=True)
    v, w = lax_linalg.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO: str | None = "L", symmetrize_input: bool = True):
    """The eigenvalues (ascending) of Hermitian matrices."""
    return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices (complex)."""
    a = _matrices("eig", _inexact("eig", a), square=True)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """The eigenvalues (complex) of general square matrices."""
    a = _matrices("eigvals", _inexact("eigvals", a), square=True)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]
