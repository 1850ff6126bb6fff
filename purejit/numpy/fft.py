"""purejit.numpy.fft: `jax.numpy.fft`, every transform through the IR's `fft` op
(StableHLO `fft`: DUCC on CPU, cuFFT on GPU).

XLA transforms only the innermost 1 to 3 dimensions, so other axes are moved last and back;
`s` crops or zero-pads the input first; more than 3 axes are done in rounds, as JAX does.
`norm` is "backward" (default: only the inverse transforms scale, by 1/n), "ortho"
(1/sqrt(n) both ways) or "forward" (the forward transforms scale by 1/n).

    fft, ifft, rfft, irfft, hfft, ihfft, fft2, ifft2, rfft2, irfft2, fftn, ifftn, rfftn,
    irfftn, fftfreq, rfftfreq, fftshift, ifftshift
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit.lax import linalg as lax_linalg
from purejit.lax.fourier import FftType
from purejit.lax.fourier import fft as lax_fft
from purejit.numpy._arithmetic import remainder
from purejit.numpy._core import _lift, astype, multiply, true_divide
from purejit.numpy._creation import arange
from purejit.numpy._manip import pad, roll
from purejit.numpy._shape import moveaxis

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]


def _scale(x, s: Sequence[int], name: str, norm: str | None):
    """Multiply by the `norm` factor of transform `name` over lengths `s`."""
    if norm is None or norm == "backward":
        return x
    n = float(math.prod(s))
    inverse = name.startswith("i")
    if norm == "ortho":
        f = math.sqrt(n) if inverse else 1 / math.sqrt(n)
    elif norm == "forward":
        f = n if inverse else 1 / n
    else:
        raise ValueError(
            f'numpy.fft.{name}: invalid norm value {norm!r}; should be "backward", "ortho" or '
            '"forward"'
        )
    return multiply(x, astype(f, x.dtype))


def _fft_nd(x, kind: FftType, s: tuple[int, ...]):
    """Transform the last len(s) dimensions, in rounds of at most 3 (XLA's limit)."""
    if len(s) <= 3:
        return lax_fft(x, kind, s)
    n = 2 if len(s) == 4 else 3
    src = tuple(range(x.ndim - len(s), x.ndim - n))
    dst = tuple(range(x.ndim - len(s) + n, x.ndim))
    if kind in (FftType.RFFT, FftType.FFT):
        x = lax_fft(x, kind, s[-n:])
        x = moveaxis(x, src, dst)
        x = _fft_nd(x, FftType.FFT, s[:-n])
        return moveaxis(x, dst, src)
    x = moveaxis(x, src, dst)
    x = _fft_nd(x, FftType.IFFT, s[:-n])
    x = moveaxis(x, dst, src)
    return lax_fft(x, kind, s[-n:])


def _fft_core(name: str, kind: FftType, a, s, axes, norm):
    x = _lift(a)
    if s is not None:
        s = tuple(operator.index(v) for v in s)
        if any(v <= 0 for v in s):
            raise ValueError(f"numpy.fft.{name}: shape should be positive, got s={list(s)}")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError(f"numpy.fft.{name}: shape and axes have different lengths")
    orig_axes = axes
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    else:
        axes = tuple(operator.index(ax) for ax in axes)
    if len({ax % x.ndim for ax in axes}) != len(axes) if x.ndim else False:
        raise ValueError(f"numpy.fft.{name} does not support repeated axes, got {list(axes)}")
    if orig_axes is not None:
        last = tuple(range(x.ndim - len(axes), x.ndim))
        x = moveaxis(x, axes, last)
        axes = last
    if s is not None:
        in_s = list(x.shape)
        for ax, v in zip(axes, s):
            in_s[ax] = v
        if kind == FftType.IRFFT:
            in_s[-1] = in_s[-1] // 2 + 1
        x = x[tuple(slice(v) for v in in_s)]
        if tuple(in_s) != x.shape:
            x = pad(x, [(0, v - w) for v, w in zip(in_s, x.shape)])
    elif kind == FftType.IRFFT:
        s = tuple(x.shape[ax] for ax in axes[:-1])
        if axes:
            s += (max(0, 2 * (x.shape[axes[-1]] - 1)),)
    else:
        s = tuple(x.shape[ax] for ax in axes)
    out = _scale(_fft_nd(x, kind, tuple(s)), s, name, norm)
    if orig_axes is not None:
        out = moveaxis(out, axes, orig_axes)
    return out


def _one_axis(name: str, axis):
    if isinstance(axis, (list, tuple)):
        raise ValueError(
            f"numpy.fft.{name} does not support multiple axes; use {name}n (got axis={axis!r})"
        )
    return None if axis is None else [axis]


def _two_axes(name: str, axes):
    if len(axes) != 2:
        raise ValueError(f"numpy.fft.{name} only supports 2 axes, got axes={axes!r}")
    return axes


def fft(a, n=None, axis: int = -1, norm=None):
    """One-dimensional discrete Fourier transform along `axis` (length `n`)."""
    return _fft_core(
        "fft", FftType.FFT, a, None if n is None else [n], _one_axis("fft", axis), norm
    )


def ifft(a, n=None, axis: int = -1, norm=None):
    """One-dimensional inverse DFT along `axis`."""
    axes = _one_axis("ifft", axis)
    return _fft_core("ifft", FftType.IFFT, a, None if n is None else [n], axes, norm)


def rfft(a, n=None, axis: int = -1, norm=None):
    """One-dimensional DFT of real input (n // 2 + 1 frequencies)."""
    axes = _one_axis("rfft", axis)
    return _fft_core("rfft", FftType.RFFT, a, None if n is None else [n], axes, norm)


def irfft(a, n=None, axis: int = -1, norm=None):
    """Inverse of rfft: real output of length n (default 2 * (m - 1))."""
    axes = _one_axis("irfft", axis)
    return _fft_core("irfft", FftType.IRFFT, a, None if n is None else [n], axes, norm)


def hfft(a, n=None, axis: int = -1, norm=None):
    """DFT of a signal with Hermitian symmetry (given by its first half): real output."""
    conj_a = lax_linalg.conj(_lift(a))
    axes = _one_axis("hfft", axis)
    nn = (conj_a.shape[axis] - 1) * 2 if n is None else n
    out = _fft_core("hfft", FftType.IRFFT, conj_a, None if n is None else [n], axes, norm)
    return multiply(out, astype(nn, out.dtype))


def ihfft(a, n=None, axis: int = -1, norm=None):
    """Inverse of hfft: the first half of the Hermitian spectrum of real input."""
    x = _lift(a)
    axes = _one_axis("ihfft", axis)
    nn = x.shape[axis] if n is None else n
    out = _fft_core("ihfft", FftType.RFFT, x, None if n is None else [n], axes, norm)
    return multiply(lax_linalg.conj(out), astype(1 / nn, out.dtype))


def fftn(a, s=None, axes=None, norm=None):
    """N-dimensional DFT over `axes` (all by default)."""
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """N-dimensional inverse DFT."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """N-dimensional DFT of real input (the last axis halved)."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """Inverse of rfftn."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional DFT."""
    return _fft_core("fft2", FftType.FFT, a, s, _two_axes("fft2", axes), norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional inverse DFT."""
    return _fft_core("ifft2", FftType.IFFT, a, s, _two_axes("ifft2", axes), norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional DFT of real input."""
    return _fft_core("rfft2", FftType.RFFT, a, s, _two_axes("rfft2", axes), norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """Inverse of rfft2."""
    return _fft_core("irfft2", FftType.IRFFT, a, s, _two_axes("irfft2", axes), norm)


def _freq_dtype(dtype):
    return pdt.canonicalize(np.dtype(dtype)) if dtype is not None else pdt.default_float()


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an n-point DFT: [0, 1, ..., -1] / (d * n)."""
    if isinstance(n, (list, tuple)) or isinstance(d, (list, tuple)):
        raise ValueError("numpy.fft.fftfreq: n and d must be single values")
    out_dtype = _freq_dtype(dtype)
    dt = np.dtype(np.finfo(out_dtype).dtype) if out_dtype.kind in "fc" else pdt.default_float()
    i = arange(n, dtype=dt)
    k = remainder(i + n // 2, astype(n, dt)) - astype(n // 2, dt)
    return astype(true_divide(k, astype(d * n, dt)), out_dtype)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of rfft: [0, 1, ..., n // 2] / (d * n)."""
    if isinstance(n, (list, tuple)) or isinstance(d, (list, tuple)):
        raise ValueError("numpy.fft.rfftfreq: n and d must be single values")
    dt = _freq_dtype(dtype)
    k = arange(0, n // 2 + 1, dtype=dt)
    return true_divide(k, astype(d * n, dt))


def _shift(x, axes, sign: int):
    x = _lift(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shift = [sign * (dim // 2) for dim in x.shape]
    elif isinstance(axes, int):
        shift = sign * (x.shape[axes] // 2)
    else:
        shift = [sign * (x.shape[ax] // 2) for ax in axes]
    return roll(x, shift, axes)


def fftshift(x, axes=None):
    """Move the zero-frequency entry to the middle (along `axes`, all by default)."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None):
    """Inverse of fftshift."""
    return _shift(x, axes, -1)
