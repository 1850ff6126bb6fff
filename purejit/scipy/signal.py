"""`purejit.scipy.signal`, as `jax.scipy.signal`: N-d convolution and correlation (direct,
through `conv_general_dilated`, or through FFTs), detrending, and the windowed-FFT family
(`stft`, `istft`, `csd`, `welch`, in `purejit.scipy._spectral`).

Each function runs the operations JAX's does, in the same order, so that results under jit
are bit for bit JAX's on the same backend."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import partial

import numpy as np

import purejit.numpy as jnp
from purejit import lax
from purejit.numpy._grids_and_dtypes import _promote_inexact
from purejit.scipy._spectral import csd, detrend, istft, stft, welch
from purejit.transforms.vmap import vmap

__all__ = [
    "convolve",
    "convolve2d",
    "correlate",
    "correlate2d",
    "csd",
    "detrend",
    "fftconvolve",
    "istft",
    "stft",
    "welch",
]

_MODES = ("full", "same", "valid")


def _canonical_axis(axis, ndim: int, what: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def fftconvolve(in1, in2, mode: str = "full", axes: Sequence[int] | int | None = None):
    """Convolve two N-d arrays through FFTs, as `scipy.signal.fftconvolve`.

    Args:
      in1, in2: the arrays to convolve, of one rank.
      mode: "full" (the whole convolution), "same" (centred, the shape of `in1`) or "valid"
        (only where the inputs overlap fully).
      axes: the axes to convolve over; the others are mapped (of one size in both inputs).
        None convolves over every axis.

    Returns:
      The convolution, of the inputs' promoted inexact dtype.
    """
    in1, in2 = _promote_inexact(in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("fftconvolve: in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError(f"fftconvolve: mode must be one of {list(_MODES)}, got {mode!r}")
    conv = partial(_fftconvolve_unbatched, mode=mode)
    if axes is None:
        return conv(in1, in2)
    axes = tuple(axes) if np.iterable(axes) else (axes,)
    axes = tuple(_canonical_axis(ax, in1.ndim, "fftconvolve") for ax in axes)
    mapped = set(range(in1.ndim)) - set(axes)
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise ValueError(
            f"fftconvolve: mapped axes must have same shape; got in1.shape={in1.shape} "
            f"in2.shape={in2.shape} axes={axes}"
        )
    # as in JAX, each mapped axis is a vmap, innermost first
    for ax in sorted(mapped):
        conv = vmap(conv, in_axes=ax, out_axes=ax)
    return conv(in1, in2)


def _fftconvolve_unbatched(in1, in2, mode: str):
    full_shape = tuple(s1 + s2 - 1 for s1, s2 in zip(in1.shape, in2.shape))
    if mode == "valid":
        no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
        swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
        if not (no_swap or swap):
            raise ValueError(
                "fftconvolve: for 'valid' mode, one input must be at least as large as the "
                f"other in every dimension, got shapes {in1.shape} and {in2.shape}"
            )
        if swap:
            in1, in2 = in2, in1
    if all(s1 == 1 or s2 == 1 for s1, s2 in zip(in1.shape, in2.shape)):
        conv = in1 * in2
    else:
        if jnp.iscomplexobj(in1):
            fft, ifft = jnp.fft.fftn, jnp.fft.ifftn
        else:
            fft, ifft = jnp.fft.rfftn, jnp.fft.irfftn
        conv = ifft(fft(in1, full_shape) * fft(in2, full_shape), full_shape)
    if mode == "full":
        out_shape = full_shape
    elif mode == "same":
        out_shape = in1.shape
    else:
        out_shape = tuple(s1 - s2 + 1 for s1, s2 in zip(in1.shape, in2.shape))
    starts = tuple((f - o) // 2 for f, o in zip(full_shape, out_shape))
    return lax.dynamic_slice(conv, starts, out_shape)


def _convolve_nd(in1, in2, mode: str, *, precision, name: str):
    """The direct N-d convolution: one `conv_general_dilated` of the larger input with the
    flipped smaller one. Its padding of "same" differs from `numpy.convolve`'s, as
    scipy's does."""
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {list(_MODES)}, got {mode!r}")
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError(
            f"{name}: in1 and in2 must have the same number of dimensions, got shapes "
            f"{in1.shape} and {in2.shape}"
        )
    if in1.size == 0 or in2.size == 0:
        raise ValueError(
            f"{name}: zero-size arrays not supported in convolutions, got shapes {in1.shape} "
            f"and {in2.shape}"
        )
    in1, in2 = _promote_inexact(in1, in2)
    no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise ValueError(
            f"{name}: one input must be smaller than the other in every dimension, got "
            f"shapes {in1.shape} and {in2.shape}"
        )
    shape_o = in2.shape
    if swap:
        in1, in2 = in2, in1
    shape = in2.shape
    in2 = jnp.flip(in2)
    if mode == "valid":
        padding = [(0, 0) for _ in shape]
    elif mode == "same":
        padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2) for s, so in zip(shape, shape_o)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    conv = partial(
        lax.conv_general_dilated,
        window_strides=(1,) * len(shape),
        padding=padding,
        precision=precision,
    )
    # a complex convolution is emitted as three real ones (backend/lowering/conv.py)
    return conv(in1[None, None], in2[None, None])[0, 0]


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """Convolve two N-d arrays, as `scipy.signal.convolve`.

    Args:
      in1, in2: the arrays to convolve, of one rank; one no larger than the other in every
        dimension.
      mode: "full", "same" (centred, the shape of `in1`) or "valid".
      method: "auto" and "direct" run one `lax.conv_general_dilated`; "fft" runs
        `fftconvolve`.
      precision: the `lax.Precision` of the direct convolution.

    Returns:
      The convolution, of the inputs' promoted inexact dtype.
    """
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method in ("direct", "auto"):
        return _convolve_nd(in1, in2, mode, precision=precision, name="convolve")
    raise ValueError(f"convolve: got method={method!r}; expected 'auto', 'fft', or 'direct'")


def _check_2d(name: str, in1, in2, boundary, fillvalue) -> None:
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(
            f"{name} supports only boundary='fill', fillvalue=0 (as JAX's), got "
            f"boundary={boundary!r}, fillvalue={fillvalue!r}; pad the input with jnp.pad first"
        )
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(
            f"{name} only supports 2-dimensional inputs, got ranks {np.ndim(in1)} and "
            f"{np.ndim(in2)}"
        )


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    """Convolve two 2-d arrays, as `scipy.signal.convolve2d` (zero fill only).

    Args:
      in1, in2: 2-d arrays.
      mode: "full", "same" or "valid".
      boundary, fillvalue: only "fill" with 0 is supported (NotImplementedError otherwise).
      precision: the `lax.Precision` of the convolution.

    Returns:
      The 2-d convolution.
    """
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd(in1, in2, mode, precision=precision, name="convolve2d")


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """Cross-correlate two N-d arrays, as `scipy.signal.correlate`: the convolution of `in1`
    with `in2` conjugated and flipped.

    Args:
      in1, in2: arrays of one rank.
      mode: "full", "same" or "valid".
      method: "auto", "direct" or "fft", as in `convolve`.
      precision: the `lax.Precision` of the direct convolution.

    Returns:
      The cross-correlation.
    """
    in2 = jnp.asarray(in2)
    return convolve(in1, jnp.flip(in2.conj()), mode, precision=precision, method=method)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0, precision=None):
    """Cross-correlate two 2-d arrays, as `scipy.signal.correlate2d` (zero fill only).

    Args:
      in1, in2: 2-d arrays.
      mode: "full", "same" or "valid".
      boundary, fillvalue: only "fill" with 0 is supported (NotImplementedError otherwise).
      precision: the `lax.Precision` of the convolution.

    Returns:
      The 2-d cross-correlation.
    """
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    same_shape = in1.shape == in2.shape
    conv = partial(_convolve_nd, mode=mode, precision=precision, name="correlate2d")
    # scipy's orientation of each mode, as JAX writes it: the flips land the output where
    # scipy's correlate2d puts it
    if mode == "same":
        return jnp.flip(conv(jnp.flip(in1), in2.conj()))
    if mode == "valid":
        if swap and not same_shape:
            return conv(jnp.flip(in2), in1.conj())
        return jnp.flip(conv(jnp.flip(in1), in2.conj()))
    if swap:
        return conv(jnp.flip(in2), in1.conj()).conj()
    return jnp.flip(conv(jnp.flip(in1), in2.conj()))
