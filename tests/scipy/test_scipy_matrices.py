"""scipy.linalg's signatures over numpy.linalg, the special-matrix constructors and
stats.norm's sf/logsf/isf against jax.scipy."""

import jax
import jax.numpy as jjnp
import jax.scipy as jsp
import numpy as np
import pytest
from jnp_compare import _compare

import purejit
import purejit.numpy as jnp
import purejit.scipy as psp

RNG = np.random.default_rng(3)
M = RNG.normal(size=(2, 4, 4)).astype(np.float32)
SPD = (M @ M.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)).astype(np.float32)
B = RNG.normal(size=(2, 4, 3)).astype(np.float32)
V = np.array([1.0, -2.0, 3.0, 0.5], np.float32)

CASES = {
    "factorizations": lambda s, n, m, spd, b, v: (
        s.linalg.cholesky(spd), s.linalg.cholesky(spd, lower=True), s.linalg.det(m),
        s.linalg.inv(m), s.linalg.solve(m, b), s.linalg.solve(spd, b, assume_a="pos"),
        s.linalg.solve(spd, b[..., 0], assume_a="pos", lower=True),
        s.linalg.solve(spd[0], b[0], assume_a="sym"),
        s.linalg.qr(m[..., :3])[1], s.linalg.qr(m[:, :, :3], mode="economic")[1],
        s.linalg.qr(m, mode="r")[0], s.linalg.svd(m, compute_uv=False),
        s.linalg.eigh(spd, eigvals_only=True), s.linalg.eigh(spd, lower=False)[0]),
    "constructors": lambda s, n, m, spd, b, v: (
        s.linalg.toeplitz(v), s.linalg.toeplitz(v, v[:3] * 2), s.linalg.toeplitz(m[0, :2], v),
        s.linalg.hankel(v), s.linalg.hankel(v[:3], v), s.linalg.hankel(m[0], v),
        s.linalg.circulant(v), s.linalg.circulant(m[0]), s.linalg.companion(v),
        s.linalg.companion(m[0]), s.linalg.leslie(v, v[:3]), s.linalg.leslie(m[0], m[0, :, :3]),
        s.linalg.fiedler(v), s.linalg.fiedler_companion(v), s.linalg.fiedler_companion(
            n.concatenate([v, v])), s.linalg.fiedler_companion(v[:2]),
        s.linalg.convolution_matrix(v, 3), s.linalg.convolution_matrix(v, 5, "same"),
        s.linalg.convolution_matrix(v, 2, "valid"), s.linalg.hadamard(4),
        s.linalg.hadamard(2, n.float32), s.linalg.helmert(4), s.linalg.helmert(3, True),
        s.linalg.hilbert(3), s.linalg.invhilbert(4), s.linalg.pascal(4),
        s.linalg.pascal(3, "lower"), s.linalg.invpascal(4), s.linalg.invpascal(3, "upper"),
        s.linalg.dft(4), s.linalg.dft(3, "sqrtn"), s.linalg.dft(3, "n")),
    "norm": lambda s, n, m, spd, b, v: (s.stats.norm.sf(v), s.stats.norm.sf(v, 1.0, 2.0),
                                     s.stats.norm.logsf(v * 4), s.stats.norm.isf(v * 0.1 + 0.5),
                                     s.stats.norm.isf(0.2, 1.0, 3.0)),
}  # fmt: skip


def test_against_jax():
    names = list(CASES)
    args = (M, SPD, B, V)
    refs = jax.jit(lambda *a: [CASES[k](jsp, jjnp, *a) for k in names])(*args)
    outs = purejit.jit(lambda *a: [CASES[k](psp, jnp, *a) for k in names])(*args)
    for k, r, g in zip(names, refs, outs):
        _compare(r, g, 2e-4, 2e-4, True, f"jit {k!r}")
    for k in ("norm",):
        g = CASES[k](psp, jnp, *[jnp.asarray(x) for x in args])
        _compare(refs[names.index(k)], g, 2e-4, 2e-4, True, f"eager {k!r}")


def test_errors():
    with pytest.raises(ValueError):
        psp.linalg.solve(SPD, B, assume_a="tri")
    with pytest.raises(ValueError):
        psp.linalg.qr(M, mode="raw")
    with pytest.raises(ValueError):
        psp.linalg.hadamard(3)
    with pytest.raises(ValueError):
        psp.linalg.companion(V[:1])
    with pytest.raises(ValueError):
        psp.linalg.dft(3, dtype=np.float32)
    with pytest.raises(NotImplementedError):
        psp.linalg.eigh(SPD, SPD)
