"""JVP and transpose rules of fft (`ir/ops/fft.py`): the transform is linear, so its JVP is
itself; the transposes are JAX's: FFT and IFFT are symmetric matrices (their own transpose),
RFFT transposes to the real part of an FFT of the zero-padded cotangent, IRFFT to a scaled
RFFT whose interior frequencies count twice (then conjugated, JAX's convention for complex
cotangents)."""

from __future__ import annotations

import math

import numpy as np

from purejit.transforms.autodiff._core import (
    Zero,
    aval,
    bcast,
    conj,
    convert,
    deftranspose,
    linear_jvp,
    mul,
    op,
)

linear_jvp("fft", lambda i, n: True)


@deftranspose("fft")
def _fft_t(cts, operands, attrs, regions):
    (ct,), (x,) = cts, operands
    if isinstance(ct, Zero):
        return [Zero(aval(x))]
    kind, lengths = attrs["fft_type"], tuple(attrs["fft_length"])
    if kind in ("FFT", "IFFT"):
        return [op("fft", ct, fft_type=kind, fft_length=lengths)]
    if kind == "RFFT":
        return [_rfft_transpose(ct, lengths)]
    return [_irfft_transpose(ct, lengths)]


def _rfft_transpose(ct, lengths):
    # rfft = slice(fft(complex(x))): pad back to full length, fft (symmetric), real part
    shape = aval(ct).shape
    n = lengths[-1]
    rank = len(shape)
    zero = np.zeros((), aval(ct).dtype)
    full = op(
        "pad",
        ct,
        zero,
        edge_padding_low=(0,) * rank,
        edge_padding_high=(0,) * (rank - 1) + (n - shape[-1],),
        interior_padding=(0,) * rank,
    )
    return op("real", op("fft", full, fft_type="FFT", fft_length=lengths))


def _irfft_transpose(ct, lengths):
    x = op("fft", ct, fft_type="RFFT", fft_length=lengths)
    shape = aval(x).shape
    m = shape[-1]
    odd = lengths[-1] % 2
    weights = np.concatenate([[1.0], np.full(m - 2 + odd, 2.0), np.ones(1 - odd)])[:m]
    weights = weights / math.prod(lengths)
    w = convert(op("constant", value=weights.astype(aval(ct).dtype)), aval(x).dtype)
    w = bcast(w, shape, (len(shape) - 1,))
    return conj(mul(w, x))
