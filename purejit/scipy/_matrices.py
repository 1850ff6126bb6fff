"""More of `jax.scipy.linalg`: scipy's signatures over purejit.numpy.linalg and
purejit.lax.linalg (cholesky(lower=), det, inv, solve(assume_a=, lower=), qr(mode=), svd,
eigh(lower=, eigvals_only=)) and the special-matrix constructors (circulant, companion,
convolution_matrix, dft, fiedler, fiedler_companion, hadamard, hankel, helmert, hilbert,
invhilbert, invpascal, leslie, pascal, toeplitz), computed as jax.scipy computes them
(toeplitz and hankel gather from the concatenated first column and row instead of JAX's
patch convolution; the values are the same). The constructors take batches in leading
dimensions, as jax.scipy's vectorized ones do.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from purejit import dtypes as pdt
from purejit import lax
from purejit.lax import linalg as lax_linalg
from purejit.lax._lift import convert
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy import linalg as np_linalg
from purejit.numpy._creation import arange, eye, ones, zeros
from purejit.numpy._indexing import take
from purejit.numpy._linalg import matmul
from purejit.numpy._manip import atleast_1d, diag, flip, pad
from purejit.numpy._element_edits import block
from purejit.numpy._shape import concatenate, expand_dims, swapaxes
from purejit.scipy.special import comb


def _inexact(name: str, *xs):
    """The arguments promoted to one inexact dtype (not broadcast)."""
    arrs = [c._lift(x) for x in xs]
    dt, weak = pdt.result_type_weak(*[(a.dtype, a.weak_type) for a in arrs])
    if not pdt.is_inexact(dt):
        dt = pdt.default_float()
    out = [convert(a, dt, weak=weak) for a in arrs]
    return out if len(xs) > 1 else out[0]


def _mT(x):
    return swapaxes(x, -1, -2)


# ---- scipy's signatures over numpy.linalg -----------------------------------------------------


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of a: upper triangular U (a = U^H U), or lower L with lower=True."""
    a = _inexact("cholesky", a)
    return np_linalg.cholesky(a, upper=not lower, symmetrize_input=False)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """The determinant of each square matrix."""
    return np_linalg.det(a)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverse of each square matrix."""
    return np_linalg.inv(a)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):  # fmt: skip
    """Solve a x = b; assume_a='pos' solves through the Cholesky factor of a's `lower` (or
    upper) triangle, the other kinds through LU."""
    valid = ["gen", "sym", "her", "pos"]
    if assume_a not in valid:
        raise ValueError(f"solve: expected assume_a to be one of {valid}; got {assume_a!r}")
    if assume_a != "pos":
        return np_linalg.solve(a, b)
    a, b = _inexact("solve", a, b)
    fac = np_linalg.cholesky(a, upper=not lower, symmetrize_input=False)
    vector = b.ndim == a.ndim - 1
    if vector:
        b = expand_dims(b, -1)
    batch = c.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    fac = c.broadcast_to(fac, batch + fac.shape[-2:])
    b = c.broadcast_to(b, batch + b.shape[-2:])
    y = lax_linalg.triangular_solve(fac, b, left_side=True, lower=lower,
                                    transpose_a=not lower, conjugate_a=not lower)  # fmt: skip
    x = lax_linalg.triangular_solve(fac, y, left_side=True, lower=lower,
                                    transpose_a=lower, conjugate_a=lower)  # fmt: skip
    return x[..., 0] if vector else x


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):  # fmt: skip
    """QR decomposition: (q, r) for mode 'full' or 'economic', (r,) for mode 'r'."""
    if mode in ("full", "r"):
        full = True
    elif mode == "economic":
        full = False
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    if pivoting:
        raise NotImplementedError("scipy.linalg.qr: pivoting=True (LAPACK geqp3) is not "
                                  "supported")  # fmt: skip
    q, r = lax_linalg.qr(_inexact("qr", a), full_matrices=full)
    return (r,) if mode == "r" else (q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):  # fmt: skip
    """Singular value decomposition: (u, s, vh), or s alone when not compute_uv."""
    return lax_linalg.svd(_inexact("svd", a), full_matrices=full_matrices,
                          compute_uv=compute_uv)  # fmt: skip


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,  # noqa: A002
         check_finite: bool = True):  # fmt: skip
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices, reading the `lower`
    (or upper) triangle: (w, v), or w alone with eigvals_only."""
    if b is not None:
        raise NotImplementedError("scipy.linalg.eigh: only the b=None case is implemented")
    if type != 1:
        raise NotImplementedError("scipy.linalg.eigh: only the type=1 case is implemented")
    if eigvals is not None:
        raise NotImplementedError("scipy.linalg.eigh: only the eigvals=None case is implemented")
    v, w = lax_linalg.eigh(_inexact("eigh", a), lower=lower, symmetrize_input=False)
    return w if eigvals_only else (w, v)


# ---- special matrices -------------------------------------------------------------------------


def _batch(*xs):
    """The arrays with their leading (batch) dimensions broadcast together."""
    batch = c.broadcast_shapes(*[x.shape[:-1] for x in xs])
    return [c.broadcast_to(x, batch + x.shape[-1:]) for x in xs]


def _promote(*xs):
    dt, weak = pdt.result_type_weak(*[(x.dtype, x.weak_type) for x in xs])
    return [convert(x, dt, weak=weak) for x in xs]


def toeplitz(c_, r=None):
    """The Toeplitz matrix with first column c and first row r (r defaults to conj(c); r[0]
    is ignored)."""
    col = atleast_1d(c.asarray(c_))
    row = arith.conj(col) if r is None else atleast_1d(c.asarray(r))
    col, row = _promote(col, row)
    m, n = col.shape[-1], row.shape[-1]
    col, row = _batch(col, row)
    if m == 0 or n == 0:
        return zeros(col.shape[:-1] + (m, n), col.dtype)
    elems = concatenate([flip(col, axis=-1), row[..., 1:]], axis=-1)
    idx = np.arange(n)[None, :] - np.arange(m)[:, None] + (m - 1)
    return take(elems, idx, axis=-1)


def hankel(c_, r=None):
    """The Hankel matrix with first column c and last row r (zeros by default; r[0] is
    ignored)."""
    col = c.asarray(c_)
    row = zeros(col.shape, col.dtype) if r is None else c.asarray(r)
    if col.ndim == 0 or row.ndim == 0:
        raise ValueError("hankel: c and r must be at least 1-dimensional, got a scalar")
    col, row = _promote(col, row)
    m, n = col.shape[-1], row.shape[-1]
    col, row = _batch(col, row)
    if m == 0 or n == 0:
        return zeros(col.shape[:-1] + (m, n), col.dtype)
    elems = concatenate([col, row[..., 1:]], axis=-1)
    return take(elems, np.arange(m)[:, None] + np.arange(n)[None, :], axis=-1)


def circulant(c_):
    """The circulant matrix with first column c."""
    col = atleast_1d(c.asarray(c_))
    n = col.shape[-1]
    return take(col, (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1), axis=-1)


def companion(a):
    """The companion matrix of the polynomial with coefficients a (highest power first)."""
    a = atleast_1d(_inexact("companion", a))
    if a.shape[-1] < 2:
        raise ValueError(f"companion: the length of `a` along the last axis must be at least "
                         f"2; got shape {a.shape}")  # fmt: skip
    first = c.negative(a[..., 1:]) / a[..., :1]
    m = a.shape[-1] - 1
    sub = c.broadcast_to(eye(m, m, k=-1, dtype=first.dtype)[1:], a.shape[:-1] + (m - 1, m))
    return concatenate([expand_dims(first, -2), sub], axis=-2)


def leslie(f, s):
    """The Leslie matrix: fecundities f in the first row, survival rates s below the
    diagonal."""
    fa, sa = atleast_1d(c.asarray(f)), atleast_1d(c.asarray(s))
    if fa.shape[-1] < 2:
        raise ValueError(f"leslie: the length of f along the last axis must be at least 2; "
                         f"got shape {fa.shape}")  # fmt: skip
    if sa.shape[-1] != fa.shape[-1] - 1:
        raise ValueError(f"leslie: the length of s along the last axis must be one less than "
                         f"the length of f; got {fa.shape} and {sa.shape}")  # fmt: skip
    fa, sa = _promote(fa, sa)
    fa, sa = _batch(fa, sa)
    n = fa.shape[-1]
    if fa.ndim == 1:
        return diag(sa, k=-1).at[0].set(fa)
    return concatenate([expand_dims(fa, -2), _subdiag_rows(sa, n)], axis=-2)


def _subdiag_rows(s, n: int):
    """Rows 1..n-1 of the matrix with s on its first sub-diagonal: [..., n-1, n]."""
    idx = np.minimum(np.arange(n)[None, :], n - 2) + 0 * np.arange(n - 1)[:, None]
    vals = take(s, idx, axis=-1)
    mask = np.arange(n)[None, :] == np.arange(n - 1)[:, None]
    return c.where(mask, vals, convert(0, s.dtype, weak=s.weak_type))


def fiedler(a):
    """The symmetric Fiedler matrix |a_i - a_j|."""
    arr = atleast_1d(c.asarray(a))
    return c.abs(arr[..., :, None] - arr[..., None, :])


def fiedler_companion(a):
    """The Fiedler companion matrix of the polynomial with coefficients a."""
    a = atleast_1d(_inexact("fiedler_companion", a))
    if a.shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {a.shape}")  # fmt: skip
    n = a.shape[-1] - 1
    if n == 0:
        return zeros(a.shape[:-1] + (0, 0), a.dtype)
    a = a / a[..., :1]
    if n == 1:
        return c.negative(a[..., 1:])[..., None]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    super_val = c.negative(take(a, np.broadcast_to(np.minimum(i + 2, n), (n, n)), axis=-1))
    sub_val = c.negative(take(a, np.broadcast_to(np.minimum(i + 1, n), (n, n)), axis=-1))
    first = c.negative(a[..., 1:2])[..., None]
    one, zero = convert(1, a.dtype), convert(0, a.dtype)
    even, odd = i % 2 == 0, i % 2 == 1
    out = c.broadcast_to(zero, a.shape[:-1] + (n, n))
    for cond, val in [((j == i - 2) & odd & (i >= 3), one), ((j == i - 1) & even & (i >= 2),
                      sub_val), ((j == i + 2) & even, one), ((j == i + 1) & even, super_val),
                      ((i == 1) & (j == 0), one), ((i == 0) & (j == 0), first)]:  # fmt: skip
        out = c.where(cond, val, out)
    return out


def convolution_matrix(a, n: int, mode: str = "full"):
    """The matrix whose product with a length-n vector is its convolution with a."""
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"convolution_matrix: n must be a positive integer; got {n}")
    arr = c.asarray(a)
    if arr.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar")
    m = arr.shape[-1]
    if m < 1:
        raise ValueError(f"convolution_matrix: len(a) must be at least 1; got {arr.shape}")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}")
    widths = [(0, 0)] * (arr.ndim - 1) + [(0, n - 1)]
    az, raz = pad(arr, widths), pad(flip(arr, axis=-1), widths)
    length = m + n - 1
    if mode == "same":
        trim = min(n, m) - 1
        tb, te = trim // 2, trim - trim // 2
    elif mode == "valid":
        tb = te = min(n, m) - 1
    else:
        tb = te = 0
    return toeplitz(az[..., tb : length - te], raz[..., length - n - tb : length - tb])


def hadamard(n: int, dtype=int):
    """The Hadamard matrix of order n (a power of 2), by Sylvester's construction."""
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"hadamard: n must be a positive power of 2; got {n}")
    h = ones((1, 1), dtype)
    for _ in range(int(math.log2(n))):
        h = block([[h, h], [h, c.negative(h)]])
    return h


def helmert(n: int, full: bool = False):
    """The Helmert matrix of order n (without its first row unless `full`)."""
    if n < 1:
        raise ValueError(f"helmert: n must be a positive integer; got {n}")
    dt = pdt.default_float()
    i, j = np.arange(n - 1)[:, None], np.arange(n)[None, :]
    k = convert(c.asarray(i + 1), dt)
    denom = c.sqrt(k * (k + 1))
    h = c.where(j <= i, 1.0 / denom, c.where(j == i + 1, c.negative(k) / denom,
                                             zeros(denom.shape, dt)))  # fmt: skip
    if full:
        h = concatenate([c.broadcast_to(1.0 / c.sqrt(convert(n, dt)), (1, n)), h], axis=0)
    return h


def hilbert(n: int):
    """The Hilbert matrix 1 / (i + j + 1)."""
    a = arange(n, dtype=pdt.default_float())[:, None]
    return 1 / (a + _mT(a) + 1)


def invhilbert(n: int):
    """The inverse of the Hilbert matrix of order n."""
    a = arange(n, dtype=pdt.default_float())
    i, j = a[:, None], a[None, :]
    s = i + j
    return (arith.power(-1.0, s) * (s + 1.0) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1)
            * arith.power(comb(s, i), 2))  # fmt: skip


def _binom(n, k):
    return c.exp(lax.lgamma(n + 1.0) - lax.lgamma(n - k + 1.0) - lax.lgamma(k + 1.0))


def pascal(n: int, kind: str | None = None):
    """The Pascal matrix: 'symmetric' (default), 'lower' or 'upper' (binomial coefficients,
    float32 as jax.scipy)."""
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"pascal: expected kind to be one of ['symmetric', 'lower', 'upper']; "
                         f"got {kind}")  # fmt: skip
    a = arange(n, dtype=np.float32)
    low = _binom(a[:, None], a[None, :])
    if kind == "lower":
        return low
    if kind == "upper":
        return _mT(low)
    return matmul(low, _mT(low))


def invpascal(n: int, kind: str | None = None):
    """The inverse of the Pascal matrix of the given kind."""
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"invpascal: expected kind to be one of ['symmetric', 'lower', "
                         f"'upper']; got {kind}")  # fmt: skip
    a = arange(n, dtype=pdt.default_float())
    i, j = a[:, None], a[None, :]
    low = arith.power(-1.0, i - j) * _binom(i, j)
    if kind == "lower":
        return low
    if kind == "upper":
        return _mT(low)
    return matmul(_mT(low), low)


def dft(n: int, scale: str | None = None, *, dtype=None):
    """The discrete Fourier transform matrix exp(-2 pi i j k / n), optionally scaled by
    1/sqrt(n) ('sqrtn') or 1/n ('n')."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn', or 'n'; got {scale!r}")
    if dtype is None:
        dt = pdt.default_complex()
    else:
        dt = pdt.canonicalize(np.dtype(dtype))
        if dt.kind != "c":
            raise ValueError(f"dft: dtype must be a complex floating-point type; got {dt}")
    a = arange(n, dtype=dt)
    w = c.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
    if scale == "sqrtn":
        w = w / c.sqrt(convert(n, pdt.default_float()))
    elif scale == "n":
        w = w / n
    return w
