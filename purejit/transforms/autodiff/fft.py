"""JVP and transpose rules of `fft` (`ir/ops/fft.py`): the DFT is linear, so its tangent is the
same transform of the tangent; the transposes are JAX's (`jax/_src/lax/fft.py`).

    FFT, IFFT   the DFT matrix is symmetric: the transpose is the same transform.
    RFFT        N * IRFFT(conj(ct) / mask): the half spectrum stands for both halves, so
                every bin but DC (and Nyquist for even lengths) is counted twice (mask 2).
    IRFFT       conj(mask * RFFT(ct) / N), the same mask.

The conjugates are JAX's convention for maps between real and complex values (as the
transposes of `real`, `imag` and `complex`).
"""

from __future__ import annotations

import math

import numpy as np

from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    aval,
    bcast,
    conj,
    deftranspose,
    linear_jvp,
    mul,
    op,
)

linear_jvp("fft", lambda i, n: True)


def _mask(n_bins: int, length: int, dt) -> np.ndarray:
    """2 for every bin of a half spectrum except DC and (even lengths) Nyquist, which are 1."""
    m = np.full((n_bins,), 2, dt)
    m[0] = 1
    if length % 2 == 0:
        m[-1] = 1
    return m


def _times_last(x, vec):
    """x times `vec` along its last dimension."""
    shp = aval(x).shape
    return mul(x, bcast(vec, shp, (len(shp) - 1,)))


@deftranspose("fft")
def _fft_t(cts, operands, attrs, regions):
    (ct,), (x,) = cts, operands
    if isinstance(ct, Zero):
        return [Zero(aval(x))]
    kind, lengths = attrs["fft_type"], tuple(attrs["fft_length"])
    if kind in ("FFT", "IFFT"):
        return [op("fft", ct, fft_type=kind, fft_length=lengths)]
    n = math.prod(lengths)
    if kind == "RFFT":
        cdt = aval(ct).dtype
        inv = (1 / _mask(aval(ct).shape[-1], lengths[-1], np.float64) * n).astype(cdt)
        return [op("fft", _times_last(conj(ct), inv), fft_type="IRFFT", fft_length=lengths)]
    y = op("fft", ct, fft_type="RFFT", fft_length=lengths)
    scale = (_mask(aval(y).shape[-1], lengths[-1], np.float64) / n).astype(aval(y).dtype)
    return [conj(_times_last(y, scale))]


LINEAR_OPS.add("fft")
