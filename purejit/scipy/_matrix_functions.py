"""The matrix functions of `jax.scipy.linalg`: expm, expm_frechet, sqrtm and funm.

expm is the scaling-and-squaring Pade approximant of degree 13 (Higham 2005): the matrix is
scaled by 2^-s with s chosen from its 1-norm, the [13/13] approximant solved with LU, and
the result squared s times in a while loop (each batch element stops at its own s).

expm_frechet(A, E) is the derivative of expm at A in the direction E, by forward-mode
differentiation of expm (as jax.scipy).
"""

from __future__ import annotations

import numpy as np

from purejit import lax
from purejit.autodiff import jvp
from purejit.numpy import linalg as np_linalg
from purejit.numpy._core import _lift, abs, astype, broadcast_to, ceil, log2, maximum
from purejit.numpy._core import result_type, where
from purejit.numpy._creation import eye
from purejit.numpy._linalg import matmul
from purejit.numpy._reductions import max as _max
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._shape import expand_dims


def _inexact(name: str, *xs):
    arrs = [_lift(x) for x in xs]
    dt = result_type(*arrs)
    if dt.kind not in "fc":
        dt = result_type(dt, 1.0)
    out = [astype(a, dt) for a in arrs]
    return out if len(xs) > 1 else out[0]


_PADE13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)  # fmt: skip
_THETA13 = 5.371920351148152


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential of each square matrix of A."""
    A = _inexact("expm", A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"scipy.linalg.expm: expected square matrices, got {list(A.shape)}")
    n = A.shape[-1]
    norm1 = _max(_sum(abs(A), axis=-2), axis=-1)
    real_t = norm1.dtype
    s = maximum(ceil(log2(norm1 / astype(_THETA13, real_t))), astype(0, real_t))
    s = where(norm1 == 0, astype(0, real_t), s)
    s = astype(s, np.int32)
    scale = astype(lax.pow(astype(2.0, real_t), astype(s, real_t)), A.dtype)
    A = A / expand_dims(expand_dims(scale, -1), -1)
    b = [astype(c, A.dtype) for c in _PADE13]
    ident = broadcast_to(eye(n, dtype=A.dtype), A.shape)
    A2 = matmul(A, A)
    A4 = matmul(A2, A2)
    A6 = matmul(A4, A2)
    U = matmul(A, matmul(A6, b[13] * A6 + b[11] * A4 + b[9] * A2)
               + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)  # fmt: skip
    V = matmul(A6, b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2
    V = V + b[0] * ident
    R = np_linalg.solve(V - U, V + U)
    steps = _max(s) if s.ndim else s
    s_b = expand_dims(expand_dims(s, -1), -1)

    def cond(carry):
        i, _ = carry
        return i < steps

    def body(carry):
        i, r = carry
        return i + 1, where(i < s_b, matmul(r, r), r)

    _, R = lax.while_loop(cond, body, (astype(0, np.int32), R))
    return R


def expm_frechet(A, E, *, method: str | None = None, compute_expm: bool = True):
    """The Frechet derivative of expm at A in the direction E.

    Args:
        A, E: arrays of one shape (..., n, n).
        method: ignored (as in jax.scipy: forward-mode differentiation is exact).
        compute_expm: also return expm(A).

    Returns:
        (expm(A), L) if compute_expm else L.
    """
    A, E = _inexact("expm_frechet", A, E)
    if A.ndim < 2 or A.shape[-2] != A.shape[-1]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={A.shape}")
    if E.ndim < 2 or E.shape[-2] != E.shape[-1]:
        raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={E.shape}")
    if A.shape != E.shape:
        raise ValueError(
            f"expected A and E to be the same shape, got A.shape={A.shape} E.shape={E.shape}"
        )
    expm_a, frechet = jvp(lambda x: expm(x, max_squarings=16), (A,), (E,))
    return (expm_a, frechet) if compute_expm else frechet
