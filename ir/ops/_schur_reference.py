"""NumPy reference algorithms for the `hessenberg` and `schur` ops (ir/ops/linalg.py).

NumPy has neither decomposition, so the reference rules compute them here, in float64 /
complex128, one matrix at a time:

- hessenberg: Householder reflections applied from both sides (Golub and Van Loan, 7.4.2);
  Q accumulates them, H is zero below the first subdiagonal.
- schur: the Hessenberg form, then shifted QR iterations with deflation (Golub and Van Loan,
  7.5): complex matrices take Wilkinson's single shift, real ones Francis' double shift
  (the real quadratic (H - l1)(H - l2) of the trailing 2 x 2 block's eigenvalues, factored
  explicitly), so a real matrix keeps a real quasi-triangular T whose 2 x 2 diagonal blocks
  hold complex-conjugate eigenvalue pairs; a 2 x 2 block with real eigenvalues is split by
  one rotation. Every tenth step on a block uses an exceptional shift.

Schur forms are unique only up to the order of the eigenvalues and the phases of the
vectors, so these may differ from LAPACK's (gees) while both satisfy a = z t z^H.
"""

from __future__ import annotations

import numpy as np

_MAX_SWEEPS = 60  # QR steps per eigenvalue before the decomposition counts as failed


def hessenberg(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(h, q) with a = q h q^H, h zero below its first subdiagonal."""
    h = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    n = h.shape[0]
    q = np.eye(n, dtype=h.dtype)
    for k in range(n - 2):
        x = h[k + 1 :, k].copy()
        alpha = np.linalg.norm(x)
        if alpha == 0:
            continue
        phase = x[0] / abs(x[0]) if x[0] != 0 else 1.0
        v = x
        v[0] += phase * alpha
        v /= np.linalg.norm(v)
        h[k + 1 :, :] -= 2 * np.outer(v, v.conj() @ h[k + 1 :, :])
        h[:, k + 1 :] -= 2 * np.outer(h[:, k + 1 :] @ v, v.conj())
        q[:, k + 1 :] -= 2 * np.outer(q[:, k + 1 :] @ v, v.conj())
    return np.triu(h, -1), q


def _small(h: np.ndarray, i: int, eps: float) -> bool:
    """Whether the subdiagonal h[i, i - 1] is negligible against its neighbours."""
    scale = abs(h[i, i]) + abs(h[i - 1, i - 1])
    return abs(h[i, i - 1]) <= eps * (scale if scale else 1.0)


def _rotate(h, z, q, lo: int, hi: int):
    """h <- q^H h q and z <- z q, q acting on rows and columns lo..hi."""
    sl = slice(lo, hi + 1)
    h[sl, :] = q.conj().T @ h[sl, :]
    h[:, sl] = h[:, sl] @ q
    z[:, sl] = z[:, sl] @ q


def _split_real_pair(h, z, i: int):
    """Triangularise the 2 x 2 block at (i, i) when its eigenvalues are real."""
    a, b, c, d = h[i, i], h[i, i + 1], h[i + 1, i], h[i + 1, i + 1]
    tr, det = a + d, a * d - b * c
    disc = tr * tr / 4 - det
    if c == 0 or disc < 0:
        return
    lam = tr / 2 + np.copysign(np.sqrt(disc), tr / 2 - d if tr / 2 != d else 1.0)
    v = np.array([b, lam - a]) if abs(b) + abs(lam - a) > 0 else np.array([lam - d, c])
    v = v / np.linalg.norm(v)
    q = np.array([[v[0], -v[1]], [v[1], v[0]]])
    _rotate(h, z, q, i, i + 1)
    h[i + 1, i] = 0.0


def schur(a: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(t, z) with a = z t z^H, or None if the iteration does not converge."""
    h, z = hessenberg(a)
    real = not np.iscomplexobj(h)
    n = h.shape[0]
    eps = np.finfo(np.float64).eps
    hi, steps = n - 1, 0
    while hi > 0:
        if steps > _MAX_SWEEPS * n:
            return None
        lo = hi
        while lo > 0 and not _small(h, lo, eps):
            lo -= 1
        if lo > 0:
            h[lo, lo - 1] = 0.0
        if lo == hi:  # a 1 x 1 block has converged
            hi, steps = hi - 1, 0
            continue
        if real and lo == hi - 1:  # a 2 x 2 block: complex pair, or split by a rotation
            _split_real_pair(h, z, lo)
            hi, steps = hi - 2, 0
            continue
        steps += 1
        w = h[lo : hi + 1, lo : hi + 1]
        m = hi - lo + 1
        t2 = w[-2:, -2:]
        if steps % 10 == 0:  # exceptional shift: breaks cycles of the standard shifts
            tr = 1.5 * abs(w[-1, -2]) + w[-1, -1]
            det = tr * tr / 4 + abs(w[-1, -2]) ** 2
        else:
            tr, det = t2[0, 0] + t2[1, 1], t2[0, 0] * t2[1, 1] - t2[0, 1] * t2[1, 0]
        if real:
            shifted = w @ w - tr * w + det * np.eye(m)
        else:
            mids = tr / 2
            root = np.sqrt(mids * mids - det + 0j)
            mu = min(mids + root, mids - root, key=lambda r: abs(r - t2[1, 1]))
            shifted = w - mu * np.eye(m)
        q, _ = np.linalg.qr(shifted)
        _rotate(h, z, q, lo, hi)
        h[:] = np.triu(h, -1)  # what rounding leaves below the subdiagonal
    t = np.triu(h, -1) if real else np.triu(h)
    return t, z
