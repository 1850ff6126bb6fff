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

import numpy as np

from purejit import errors
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
    subtract,
    where,
)
from purejit.numpy._creation import eye, zeros
from purejit.numpy._einsum import einsum
from purejit.numpy._linalg import matmul, tensordot
from purejit.numpy._manip import diagonal as _diagonal
from purejit.numpy._manip import trace as _trace
from purejit.numpy._reductions import any as _any
from purejit.numpy._reductions import max as _max
from purejit.numpy._reductions import prod, sum
from purejit.numpy._shape import concatenate, expand_dims, moveaxis, reshape

# the decompositions and norms live in their own modules; their public names are this one's
from purejit.numpy._linalg_decompositions import (  # noqa: F401 - re-exported
    EigResult,
    EighResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    _eps,
    _H,
    _inexact,
    _matrices,
    _mT,
    cholesky,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    qr,
    svd,
    svdvals,
)
from purejit.numpy._linalg_norms import matrix_norm, norm, vector_norm  # noqa: F401

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
