"""`lax.fft`: the discrete Fourier transform op (`ir/ops/fft.py`), as `jax.lax.fft`."""

from __future__ import annotations

import enum
from collections.abc import Sequence

import numpy as np

from purejit import errors
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.tracing import bind1


class FftType(enum.IntEnum):
    """The four transforms of `lax.fft` (JAX's `jax.lax.FftType`)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def _fft_type(fft_type) -> FftType:
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str) and fft_type.upper() in FftType.__members__:
        return FftType[fft_type.upper()]
    raise ValueError(
        f"lax.fft: unknown fft_type {fft_type!r}; use one of FFT, IFFT, RFFT, IRFFT "
        f"(or lax.FftType){errors.at(errors.user_location())}"
    )


def fft(x, fft_type, fft_lengths: Sequence[int]):
    """The FFT of the last len(fft_lengths) dimensions of `x` (1 to 3).

    Args:
        x: complex for FFT, IFFT, IRFFT; real for RFFT (integers and narrow floats are
            converted, as JAX does).
        fft_type: FftType or its name.
        fft_lengths: the logical lengths of the transformed dimensions.
    Returns:
        FFT/IFFT: complex like x; RFFT: complex, last dimension fft_lengths[-1] // 2 + 1;
        IRFFT: real, last dimensions fft_lengths.
    """
    kind = _fft_type(fft_type)
    x = _lift(x)
    lengths = tuple(int(n) for n in fft_lengths)
    wide = x.dtype in (np.float64, np.complex128)
    if kind == FftType.RFFT:
        if x.dtype.kind == "c":
            raise errors.PurejitTypeError(
                f"lax.fft: RFFT needs a real operand, got {x.dtype.name}"
                f"{errors.at(errors.user_location())}"
            )
        want = np.dtype(np.float64 if wide else np.float32)
    else:
        want = np.dtype(np.complex128 if wide else np.complex64)
    if x.dtype != want:
        x = convert(x, want)
    if not 1 <= len(lengths) <= 3 or len(lengths) > x.ndim:
        raise ValueError(
            f"lax.fft: fft_lengths={list(lengths)} must name 1 to 3 of the {x.ndim} "
            f"dimensions of the operand{errors.at(errors.user_location())}"
        )
    return bind1("fft", x, fft_type=kind.name, fft_length=lengths)
