"""The discrete Fourier transform (StableHLO `fft`).

fft(x) {fft_type, fft_length} -> y
    Transforms the last len(fft_length) dimensions (1 to 3 of them):
    FFT    complex -> complex, forward, unnormalized;
    IFFT   complex -> complex, inverse, scaled by 1/prod(fft_length);
    RFFT   real -> complex, forward: the last dimension keeps fft_length[-1] // 2 + 1
           (the other half is the conjugate mirror);
    IRFFT  complex -> real, inverse of RFFT: the operand's last dimension is
           fft_length[-1] // 2 + 1, the result's fft_length[-1].
    The transformed dimensions of the real side equal fft_length, as XLA requires.
"""

from __future__ import annotations

import numpy as np
from purejit.ir.core import TensorType
from purejit.ir.ops._util import int_list, nargs, need_attrs
from purejit.ir.registry import OpDef, fail, register

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
_REAL = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
}
_COMPLEX = {c: r for r, c in _REAL.items()}


def _fft_infer(types, attrs, regions):
    nargs("fft", types, 1)
    need_attrs("fft", attrs, "fft_type", "fft_length")
    (t,) = types
    kind = attrs["fft_type"]
    if kind not in FFT_TYPES:
        fail("fft", f"fft_type={kind!r} must be one of {', '.join(FFT_TYPES)}")
    length = int_list("fft", "fft_length", attrs["fft_length"])
    if not 1 <= len(length) <= 3 or len(length) > t.rank:
        fail("fft", f"fft_length={list(length)} must name 1 to 3 of the dimensions of {t}")
    dt = np.dtype(t.dtype)
    nd = len(length)
    lead = t.shape[: t.rank - nd]
    if kind == "RFFT":
        if dt not in _REAL:
            fail("fft", f"RFFT needs a f32 or f64 operand, got {t}")
        if t.shape[-nd:] != length:
            fail("fft", f"RFFT of {t}: the last dimensions must equal fft_length={list(length)}")
        return [TensorType(lead + length[:-1] + (length[-1] // 2 + 1,), _REAL[dt])]
    if dt not in _COMPLEX:
        fail("fft", f"{kind} needs a c64 or c128 operand, got {t}")
    if kind == "IRFFT":
        want = length[:-1] + (length[-1] // 2 + 1,)
        if t.shape[-nd:] != want:
            fail("fft", f"IRFFT of {t} with fft_length={list(length)} needs last dims {list(want)}")
        return [TensorType(lead + length, _COMPLEX[dt])]
    if t.shape[-nd:] != length:
        fail("fft", f"{kind} of {t}: the last dimensions must equal fft_length={list(length)}")
    return [t]


def _fft_ref(args, attrs, regions, run):
    (x,) = args
    kind, length = attrs["fft_type"], tuple(attrs["fft_length"])
    axes = tuple(range(x.ndim - len(length), x.ndim))
    if kind == "FFT":
        y = np.fft.fftn(x, length, axes)
        return [y.astype(x.dtype)]
    if kind == "IFFT":
        return [np.fft.ifftn(x, length, axes).astype(x.dtype)]
    if kind == "RFFT":
        return [np.fft.rfftn(x, length, axes).astype(_REAL[x.dtype])]
    return [np.fft.irfftn(x, length, axes).astype(_COMPLEX[x.dtype])]


register(
    OpDef(
        "fft",
        _fft_infer,
        _fft_ref,
        frozenset({"pure", "accumulates"}),
        attrs=("fft_type", "fft_length"),
        doc="fft(x) {fft_type=FFT|IFFT|RFFT|IRFFT, fft_length} over the last dimensions",
    )
)
