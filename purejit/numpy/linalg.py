"""purejit.numpy.linalg: `jax.numpy.linalg` on batches of matrices, on CPU and GPU.

Inputs are promoted as JAX promotes them (integers and bools to the default float, see
`promote_args(..., to_inexact=True)`); every function batches over leading dimensions.
How each function is computed (the ops named are `purejit.lax.linalg`'s, whose CPU/GPU
lowering -- LAPACK or cuSOLVER custom calls, or StableHLO -- is listed in
`purejit/backend/lowering/linalg.py`):

| function | how |
|---|---|
| cholesky | `cholesky` op (LAPACK potrf / cuSOLVER potrf); `upper=True` is L^H |
| qr | `qr` op (geqrf + orgqr); modes reduced, complete, r; raw: the `geqrf` op |
| svd, svdvals | `svd` op (LAPACK gesdd / cuSOLVER gesvdj, gesvd); `hermitian=True` via eigh |
| eigh, eigvalsh | `eigh` op (syevd / heevd) on the symmetrized input, as JAX |
| eig, eigvals | `eig` op (LAPACK geev; cuSOLVER geev, right eigenvectors) |
| solve | `lu` op, then the row permutation and two `triangular_solve` ops (trsm) |
| inv | solve against the identity, as JAX |
| det | closed forms for 2x2 and 3x3 (as JAX), else sign * exp(logdet) from slogdet |
| slogdet | closed forms for 1x1, 2x2; else `lu`: the diagonal of U and the pivots' parity |
| lstsq | reduced `svd`: x = V diag(1/s) U^H b over singular values above rcond |
| pinv | reduced `svd`, singular values below rtol * max dropped |
| matrix_rank | `svd` values above rtol (default max(m, n) * eps * s_max) |
| cond | ratio of extreme singular values (p = None, 2, -2), else norm(x) * norm(inv(x)) |
| norm, vector_norm, matrix_norm | reductions; matrix 2, -2 and nuc norms from `svd` |
| matrix_power | repeated squaring with matmul (inv first for negative powers) |
| tensorsolve, tensorinv | reshape to one square system, then solve / inv |
| multi_dot | einsum over the chain (contraction order chosen by einsum) |
| cross, outer, trace, diagonal, matmul, vecdot, matrix_transpose | IR arithmetic and shape ops |
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import convert
from purejit.tracing import bind1
from purejit.lax import linalg as lax_linalg
from purejit.numpy._array_api import vecdot as _vecdot
from purejit.numpy._arithmetic import isnan, real
from purejit.numpy._core import (
    _lift,
    abs,
    astype,
    broadcast_shapes,
    broadcast_to,
    divide,
    exp,
    log,
    multiply,
    promote_args,
    sign,
    sqrt,
    subtract,
    where,
)
from purejit.numpy._creation import eye, zeros
from purejit.numpy._einsum import einsum
from purejit.numpy._indexing import take_along_axis
from purejit.numpy._linalg import matmul, tensordot
from purejit.numpy._manip import diagonal as _diagonal
from purejit.numpy._manip import flip
from purejit.numpy._manip import trace as _trace
from purejit.numpy._reductions import any as _any
from purejit.numpy._reductions import max as _max
from purejit.numpy._reductions import min as _min
from purejit.numpy._reductions import prod, sum
from purejit.numpy._shape import (
    concatenate,
    expand_dims,
    moveaxis,
    reshape,
    swapaxes,
)
from purejit.numpy._sorting import argsort

__all__ = [
    "EigResult",
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "multi_dot",
    "norm",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "tensorinv",
    "tensorsolve",
    "trace",
    "vecdot",
    "vector_norm",
]


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


# ---- solving ----------------------------------------------------------------------------------


def _lu_solve(lu, perm, b):
    """Solve a x = b from a's LU factors; b is [..., m, k] with a's batch shape."""
    x = _permute_rows(b, perm)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)


def _permute_rows(b, perm):
    """b[..., perm[...], :]: whole rows gathered per batch element (one gather of row
    slices, as JAX's vmapped indexing emits)."""
    *batch, m, k = b.shape
    nb = math.prod(batch)
    if nb * m * k == 0:  # nothing to permute (a gather cannot take a row of an empty axis)
        return b
    flat_b = reshape(b, (nb, m, k))
    rows = reshape(perm, (nb, m, 1))
    which = bind1("iota", shape=(nb, m, 1), dtype=np.dtype(np.int32), dimension=0)
    idx = bind1("concatenate", which, rows, dimension=2)
    out = bind1(
        "gather",
        flat_b,
        idx,
        offset_dims=(2,),
        collapsed_slice_dims=(0, 1),
        start_index_map=(0, 1),
        index_vector_dim=2,
        slice_sizes=(1, 1, k),
        indices_are_sorted=False,
    )
    return reshape(out, b.shape)


def solve(a, b):
    """Solve a x = b for x; b is one vector [..., m] or matrix [..., m, k] per matrix of a
    (batch dimensions broadcast)."""
    a, b = _inexact("solve", a, b)
    a = _matrices("solve", a, square=True)
    if b.ndim == 0:
        raise ValueError("linalg.solve: b must be at least one-dimensional")
    if b.ndim > 1 and a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"linalg.solve: invalid shapes {list(a.shape)}, {list(b.shape)} (for a batch of "
            "vectors use solve(a, b[..., None])[..., 0])"
        )
    vector = b.ndim == 1
    if vector:
        b = expand_dims(b, -1)
    m = a.shape[-1]
    if b.shape[-2] != m:
        raise ValueError(
            f"linalg.solve: a {list(a.shape)} and b {list(b.shape)} do not match"
            f"{errors.at(errors.user_location())}"
        )
    batch = tuple(broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    lu, _, perm = lax_linalg.lu(a)
    x = _lu_solve(lu, perm, b)
    return x[..., 0] if vector else x


def inv(a):
    """The inverse of each square matrix (solve against the identity, as JAX)."""
    a = _matrices("inv", _inexact("inv", a), square=True)
    n = a.shape[-1]
    return solve(a, broadcast_to(eye(n, dtype=a.dtype), a.shape))


def slogdet(a, *, method: str | None = None):
    """SlogdetResult(sign, logabsdet) of each square matrix, from its LU factors."""
    a = _matrices("slogdet", _inexact("slogdet", a), square=True)
    if method not in (None, "lu"):
        raise NotImplementedError(f"linalg.slogdet: method={method!r} (only 'lu')")
    n = a.shape[-1]
    if n == 1:
        x = a[..., 0, 0]
        return SlogdetResult(_sign_of(x), real(log(abs(x))))
    if n == 2:
        return _slogdet_from_det(_det_2x2(a))
    lu, pivots, _ = lax_linalg.lu(a)
    d = _diagonal(lu, 0, -2, -1)
    is_zero = _any(d == 0, axis=-1)
    iota = np.arange(n, dtype=np.int32)
    parity = sum(astype(pivots != iota, np.int32), axis=-1)
    if a.dtype.kind == "c":
        sign = prod(d / astype(abs(d), d.dtype), axis=-1)
    else:
        sign = astype(1, a.dtype)
        parity = parity + sum(astype(d < 0, np.int32), axis=-1)
    flip = astype(1 - 2 * (parity % 2), a.dtype)
    sign = where(is_zero, astype(0, a.dtype), sign * flip)
    logdet = where(is_zero, -np.inf, sum(real(log(abs(d))), axis=-1))
    return SlogdetResult(sign, astype(logdet, np.finfo(a.dtype).dtype))


def _sign_of(x):
    if x.dtype.kind == "c":
        mag = abs(x)
        return where(mag == 0, astype(0, x.dtype), x / astype(mag, x.dtype))
    return sign(x)


def _slogdet_from_det(d):
    return SlogdetResult(_sign_of(d), real(log(abs(d))))


def _det_2x2(a):
    return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a):
    return (
        a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2]
        + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
        + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1]
        - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
        - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1]
        - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2]
    )


def det(a):
    """The determinant of each square matrix."""
    a = _matrices("det", _inexact("det", a), square=True)
    if a.shape[-1] == 2:
        return _det_2x2(a)
    if a.shape[-1] == 3:
        return _det_3x3(a)
    sign, logdet = slogdet(a)
    return sign * astype(exp(logdet), sign.dtype)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least squares: (x, residuals, rank, s) minimizing |a x - b| (a is one matrix)."""
    a, b = _inexact("lstsq", a, b)
    if a.ndim != 2:
        raise TypeError(f"linalg.lstsq: a must be two-dimensional, got {list(a.shape)}")
    if b.ndim not in (1, 2) or a.shape[0] != b.shape[0]:
        raise ValueError(f"linalg.lstsq: b {list(b.shape)} does not match a {list(a.shape)}")
    vector = b.ndim == 1
    if vector:
        b = expand_dims(b, -1)
    m, n = a.shape
    if a.size == 0:
        s = zeros((0,), real(a).dtype)
        rank = astype(0, np.int32)
        x = zeros((n,) + b.shape[1:], a.dtype)
    else:
        cut = _eps(a.dtype) * max(n, m) if rcond is None else rcond
        u, s, vt = svd(a, full_matrices=False)
        if rcond is not None and not isinstance(rcond, (int, float)):
            cut = where(_lift(rcond) < 0, _eps(a.dtype), rcond)
        mask = (s > 0) & (s >= astype(cut, s.dtype) * s[0])
        rank = sum(astype(mask, np.int32))
        safe = astype(where(mask, s, 1), a.dtype)
        s_inv = expand_dims(where(mask, 1 / safe, astype(0, a.dtype)), -1)
        uTb = matmul(_H(u), b, precision="highest")  # as JAX: full float32 on GPU too
        x = matmul(_H(vt), s_inv * uTb, precision="highest")
    if numpy_resid:
        raise NotImplementedError("linalg.lstsq: numpy_resid=True (a data-dependent shape)")
    resid = norm(subtract(b, matmul(a, x, precision="highest")), axis=0) ** 2
    if vector:
        x = reshape(x, (-1,))
    return x, resid, rank, s


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse of each matrix, from its reduced SVD."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("linalg.pinv: only one of rtol and rcond may be specified")
        rtol = rcond
    a = _matrices("pinv", _inexact("pinv", a))
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return zeros(a.shape[:-2] + (n, m), a.dtype)
    a = lax_linalg.conj(a)
    rdt = np.finfo(a.dtype).dtype
    if rtol is None:
        rtol = astype(10.0 * max(m, n) * _eps(a.dtype), rdt)
    rtol = astype(_lift(rtol), rdt)
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    rtol = reshape(rtol, rtol.shape + (1,) * (s.ndim - rtol.ndim))
    cutoff = rtol * s[..., 0:1]
    s = astype(where(s > cutoff, s, np.inf), u.dtype)
    return matmul(_mT(vh), divide(_mT(u), expand_dims(s, -1)), precision="highest")


def matrix_rank(M, rtol=None, *, tol=None, hermitian: bool = False):
    """The number of singular values above rtol (default max(m, n) * eps * largest)."""
    if tol is not None:
        if rtol is not None:
            raise ValueError("linalg.matrix_rank: only one of tol or rtol may be specified")
        rtol = tol
    M = _inexact("matrix_rank", M)
    if M.ndim < 2:
        return astype(_any(M != 0), np.int32)
    s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = _max(s, axis=-1) * astype(max(M.shape[-2:]) * _eps(s.dtype), s.dtype)
    rtol = _lift(rtol)
    rtol = expand_dims(rtol, rtol.ndim)
    return sum(astype(s > rtol, np.int32), axis=-1)


def cond(x, p=None):
    """The condition number of each matrix in norm `p` (None/2: largest over smallest
    singular value)."""
    x = _matrices("cond", _inexact("cond", x))
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        raise ValueError(f"linalg.cond: input array must not be empty; got {list(x.shape)}")
    if p is None or p == 2:
        s = svdvals(x)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(x)
        r = s[..., -1] / s[..., 0]
    else:
        _matrices("cond", x, square=True)
        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    nan_in = _any(isnan(x), axis=(-2, -1))
    return where(isnan(r) & ~nan_in, np.inf, r)


# ---- norms ------------------------------------------------------------------------------------


def _abs2(x):
    return real(x * lax_linalg.conj(x)) if x.dtype.kind == "c" else x * x


def _axes(axis, ndim: int) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"linalg.norm: axis {a} is out of bounds for rank {ndim}")
        out.append(a % ndim)
    return tuple(out)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The vector norm of order `ord` over `axis` (all axes by default)."""
    x = _inexact("vector_norm", x)
    if ord is None or ord == 2:
        return sqrt(sum(_abs2(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return _max(abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return _min(abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        rdt = np.zeros((), x.dtype).real.dtype  # np.finfo knows no bfloat16
        # counted in the float dtype itself, as jax.numpy (no float32 accumulation)
        return sum(x != 0, axis=axis, keepdims=keepdims, dtype=rdt)
    if ord == 1:
        return sum(abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"linalg.vector_norm: invalid order {ord!r}")
    ax = abs(x)
    p = astype(ord, ax.dtype)
    return sum(ax**p, axis=axis, keepdims=keepdims) ** astype(1.0 / ord, ax.dtype)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The matrix norm of order `ord` of each matrix (last two axes)."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector norm (one axis) or matrix norm (two axes), as numpy.linalg.norm."""
    x = _inexact("norm", x)
    if axis is None:
        if ord is None:
            return sqrt(sum(_abs2(x), keepdims=keepdims))
        axis = tuple(range(x.ndim))
    axes = _axes(axis, x.ndim)
    if len(axes) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axes, keepdims=keepdims)
    if len(axes) != 2:
        raise ValueError(f"linalg.norm: improper number of axes {axis!r} (one or two)")
    row, col = axes
    if ord is None or ord in ("f", "fro"):
        return sqrt(sum(_abs2(x), axis=axes, keepdims=keepdims))
    if ord in (1, -1):
        red = _max if ord == 1 else _min
        if not keepdims and col > row:
            col -= 1
        kw = {"initial": 0} if ord == 1 else {}
        return red(sum(abs(x), axis=row, keepdims=keepdims), axis=col, keepdims=keepdims, **kw)
    if ord in (np.inf, -np.inf):
        red = _max if ord == np.inf else _min
        if not keepdims and row > col:
            row -= 1
        kw = {"initial": 0} if ord == np.inf else {}
        return red(sum(abs(x), axis=col, keepdims=keepdims), axis=row, keepdims=keepdims, **kw)
    if ord in ("nuc", 2, -2):
        s = svd(moveaxis(x, axes, (-2, -1)), compute_uv=False)
        if ord == 2:
            y = _max(s, axis=-1, initial=0)
        elif ord == -2:
            y = _min(s, axis=-1)
        else:
            y = sum(s, axis=-1)
        return expand_dims(y, axes) if keepdims else y
    raise ValueError(f"linalg.norm: invalid order {ord!r} for a matrix norm")


# ---- products and tensors ---------------------------------------------------------------------


def matrix_power(a, n: int):
    """a raised to the integer power n (by repeated squaring; inverse for n < 0)."""
    a = _lift(a)
    if a.ndim < 2:
        raise TypeError(f"linalg.matrix_power: {a.ndim}-dimensional array given; need >= 2")
    if a.shape[-2] != a.shape[-1]:
        raise TypeError("linalg.matrix_power: last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"linalg.matrix_power: exponent must be an integer, got {n!r}") from err
    if n == 0:
        return broadcast_to(eye(a.shape[-2], dtype=a.dtype), a.shape)
    if n < 0:
        a, n = inv(a), -n
    if n == 1:
        return a
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def tensorinv(a, ind: int = 2):
    """The inverse of a tensor seen as a square matrix of its first `ind` dims by the rest."""
    a = _lift(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be a positive integer; got {ind}")
    head, tail = a.shape[:ind], a.shape[ind:]
    rows, cols = math.prod(head), math.prod(tail)
    if rows != cols:
        raise ValueError(
            f"linalg.tensorinv: prod(a.shape[:{ind}]) != prod(a.shape[{ind}:]) for {a.shape}"
        )
    return reshape(inv(reshape(a, (rows, cols))), tail + head)


def tensorsolve(a, b, axes=None):
    """Solve tensordot(a, x, x.ndim) = b for x."""
    a, b = _lift(a), _lift(b)
    if axes is not None:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        a = moveaxis(a, axes, len(axes) * (a.ndim - 1,))
    out_shape = a.shape[b.ndim :]
    if a.shape[: b.ndim] != b.shape:
        raise ValueError(f"linalg.tensorsolve: leading shape of a {a.shape} must match b {b.shape}")
    if b.size != math.prod(out_shape):
        raise ValueError("linalg.tensorsolve: prod(a.shape[:b.ndim]) != prod(a.shape[b.ndim:])")
    x = solve(reshape(a, (b.size, math.prod(out_shape))), reshape(b, (-1,)))
    return reshape(x, out_shape)


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices (the first and last may be vectors)."""
    arrs = [_lift(x) for x in arrays]
    if len(arrs) < 2:
        raise ValueError(f"linalg.multi_dot: needs at least two arrays, got {len(arrs)}")
    if not (
        arrs[0].ndim in (1, 2) and arrs[-1].ndim in (1, 2) and all(x.ndim == 2 for x in arrs[1:-1])
    ):
        raise ValueError(
            "linalg.multi_dot: arrays must be two-dimensional (the first and last may be 1-D),"
            f" got shapes {[x.shape for x in arrs]}"
        )
    if any(x.shape[-1] != y.shape[0] for x, y in zip(arrs[:-1], arrs[1:])):
        raise ValueError(f"linalg.multi_dot: shapes do not chain: {[x.shape for x in arrs]}")
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    if len(arrs) + 1 > len(letters):
        raise ValueError("linalg.multi_dot: too many arrays")
    subs = [letters[i] + letters[i + 1] for i in range(len(arrs))]
    if arrs[0].ndim == 1:
        subs[0] = subs[0][1:]
    if arrs[-1].ndim == 1:
        subs[-1] = subs[-1][:1]
    out = "".join(sorted(set("".join(subs)) - _inner(subs), key=letters.index))
    return einsum(",".join(subs) + "->" + out, *arrs, optimize="auto")


def _inner(subs) -> set:
    seen: dict[str, int] = {}
    for s in subs:
        for c in s:
            seen[c] = seen.get(c, 0) + 1
    return {c for c, k in seen.items() if k > 1}


def cross(x1, x2, /, *, axis: int = -1):
    """The cross product of 3-vectors along `axis`."""
    x1, x2 = promote_args("linalg.cross", x1, x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            "linalg.cross: both inputs must be (arrays of) 3-dimensional vectors, got "
            f"{x1.shape[axis]} and {x2.shape[axis]} along axis {axis}"
        )
    a, b = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    shape = tuple(broadcast_shapes(a.shape, b.shape))
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    c = [
        a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
        a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
        a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
    ]
    out = concatenate([reshape(v, v.shape + (1,)) for v in c], axis=-1)
    return moveaxis(out, -1, axis)


def outer(x1, x2, /):
    """The outer product of two vectors."""
    x1, x2 = _lift(x1), _lift(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            f"linalg.outer: inputs must be one-dimensional, got {x1.ndim} and {x2.ndim} dims"
        )
    return multiply(expand_dims(x1, 1), expand_dims(x2, 0))


def trace(x, /, *, offset: int = 0, dtype=None):
    """The sum of each matrix's diagonal (offset above it for offset > 0)."""
    return _trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset: int = 0):
    """The diagonal of each matrix (last two axes)."""
    return _diagonal(x, offset, -2, -1)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    x = _lift(x)
    if x.ndim < 2:
        raise ValueError(f"linalg.matrix_transpose: needs at least 2 dims, got {x.ndim}")
    return _mT(x)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """sum(conj(x1) * x2) along `axis`, broadcasting the rest (`purejit.numpy.vecdot`, as in
    JAX: the contracted axes must have one size, and the result keeps the inputs' dtype)."""
    return _vecdot(
        x1, x2, axis=axis, precision=precision, preferred_element_type=preferred_element_type
    )
