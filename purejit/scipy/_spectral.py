"""Detrending and the windowed-FFT family of `purejit.scipy.signal`: `detrend`, `stft`,
`istft`, `csd` and `welch`, computed as JAX's are (segments cut by a vmapped dynamic slice,
scipy's scalings, the inverse by overlap-and-add), so that results under jit are bit for bit
JAX's on the same backend."""

from __future__ import annotations

import math
import operator
import warnings
from functools import partial

import numpy as np

import purejit.numpy as jnp
from purejit import dtypes as pdt
from purejit import lax
from purejit.lax._lift import convert
from purejit.numpy._grids_and_dtypes import _promote_inexact
from purejit.tracing import Tracer
from purejit.transforms.vmap import vmap


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):  # noqa: A002
    """Remove a linear (piecewise, between breakpoints) or constant trend along an axis, as
    `scipy.signal.detrend`.

    Args:
      data: the array.
      axis: the axis to detrend along.
      type: "linear" (a least-squares line per piece) or "constant" (the mean).
      bp: breakpoints (indices along `axis`) between which separate lines are fitted.
      overwrite_data: not supported (arrays are immutable); must be None.

    Returns:
      `data` less its trend, of `data`'s inexact dtype.
    """
    if overwrite_data is not None:
        raise NotImplementedError(
            "detrend: overwrite_data is not supported (purejit arrays are immutable); leave it None"
        )
    if type not in ("constant", "linear"):
        raise ValueError(f"detrend: trend type must be 'linear' or 'constant', got {type!r}")
    (arr,) = _promote_inexact(data)
    if type == "constant":
        return arr - arr.mean(axis, keepdims=True)
    n = arr.shape[axis]
    bps = np.sort(np.unique(np.r_[0, bp, n]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError(
            f"detrend: breakpoints must be non-negative and less than the length ({n}) of "
            "data along the given axis"
        )
    arr = jnp.moveaxis(arr, axis, 0)
    shape = arr.shape
    arr = arr.reshape(n, -1)
    for lo, hi in zip(bps[:-1], bps[1:]):
        npts = hi - lo
        design = jnp.vstack(
            [
                jnp.ones(npts, dtype=arr.dtype),
                jnp.arange(1, npts + 1, dtype=arr.dtype) / npts.astype(arr.dtype),
            ]
        ).T
        piece = slice(lo, hi)
        coef, *_ = jnp.linalg.lstsq(design, arr[piece])
        trend = jnp.matmul(design, coef, precision=lax.Precision.HIGHEST)
        arr = arr.at[piece].add(-trend)
    return jnp.moveaxis(arr.reshape(shape), 0, axis)


# ---- helpers --------------------------------------------------------------------------------


def _static_int(value, what: str) -> int:
    """A Python int from a concrete value; a traced one cannot size a segment."""
    if isinstance(value, Tracer):
        raise TypeError(
            f"{what} must be a concrete integer (it sets the shape of the result), got a "
            "traced value; pass it as a Python int or a static argument of jit"
        )
    return int(value)


def _complex_dtype(dt) -> np.dtype:
    """JAX's dtypes.to_complex_dtype: the complex type holding `dt`'s inexact type."""
    dt = np.dtype(dt)
    if not pdt.is_inexact(dt):
        dt = pdt.default_float()
    return np.dtype(np.complex128 if dt in (np.float64, np.complex128) else np.complex64)


def _promote_complex(x):
    (x,) = _promote_inexact(x)
    return convert(x, _complex_dtype(x.dtype), weak=x.weak_type)


def _hann(n: int):
    """The periodic Hann window sin(pi k / n)^2, as JAX computes it without scipy."""
    if n == 1:
        return jnp.array([1.0])
    return jnp.sin(jnp.linspace(0, np.pi, n, endpoint=False)) ** 2


def _named_window(window, n: int, name: str):
    if isinstance(window, str) and window == "hann":
        return _hann(n)
    try:
        from scipy.signal import get_window
    except ImportError as err:
        raise ImportError(
            f"{name}: scipy must be installed to use window={window!r} (only 'hann' is built "
            "in); pass the window as an array instead"
        ) from err
    return get_window(window, n)


def _triage_segments(window, nperseg: int | None, input_length: int, dtype, name: str):
    """The window array and segment length from `window` (a name, a (name, params...)
    tuple, or an array) and `nperseg`, as scipy's `_triage_segments`."""
    if isinstance(window, (str, tuple)):
        n = input_length if nperseg is None else int(nperseg)
        if n > input_length:
            warnings.warn(
                f"nperseg={n} is greater than input_length={input_length}, using "
                f"nperseg={input_length}",
                stacklevel=4,
            )
            n = input_length
        return jnp.array(_named_window(window, n, name), dtype=dtype), n
    win = jnp.asarray(window, dtype=dtype)
    n = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError(f"{name}: window must be 1-D, got shape {win.shape}")
    if input_length < win.size:
        raise ValueError(
            f"{name}: window (length {win.size}) is longer than the input signal ({input_length})"
        )
    if n != win.size:
        raise ValueError(f"{name}: nperseg={n} differs from the length of window ({win.size})")
    return win, n


def _median_bias(n: int):
    """The bias of the median of `n` periodograms relative to their mean (Allen et al.,
    FINDCHIRP, appendix B): 1 + sum over even i in [2, n) of 1/(i+1) - 1/i."""
    ii = jnp.arange(2.0, n, 2)
    return 1 + jnp.sum(1.0 / (ii + 1) - 1.0 / ii)


def _fft_helper(x, win, detrend_func, nperseg: int, noverlap: int, nfft: int, sides: str):
    """The windowed FFT of each segment of `x`'s last axis: (..., segments, frequencies)."""
    if x.dtype.kind == "i":
        x = x.astype(win.dtype)
    *batch_shape, length = x.shape
    if nperseg == 1 and noverlap == 0:
        segments = x[..., np.newaxis]
    else:
        starts = jnp.arange(length - nperseg + 1, step=nperseg - noverlap)
        cut = partial(lax.dynamic_slice_in_dim, x, slice_size=nperseg, axis=-1)
        segments = vmap(cut, out_axes=-2)(starts)
    segments = detrend_func(segments)
    if jnp.iscomplexobj(win):
        segments = _promote_complex(segments)
    segments = win.reshape((1,) * len(batch_shape) + (1, nperseg)) * segments
    if sides == "twosided":
        return jnp.fft.fft(segments, n=nfft)
    return jnp.fft.rfft(segments.real, n=nfft)


def _odd_ext(x, n: int, axis: int = -1):
    """`x` extended by `n` points at each end by odd reflection about its end points."""
    if n < 1:
        return x
    if n > x.shape[axis] - 1:
        raise ValueError(
            f"The extension length n ({n}) is too big. It must not exceed "
            f"x.shape[axis]-1, which is {x.shape[axis] - 1}."
        )
    left_end = lax.slice_in_dim(x, 0, 1, axis=axis)
    left_ext = jnp.flip(lax.slice_in_dim(x, 1, n + 1, axis=axis), axis=axis)
    right_end = lax.slice_in_dim(x, -1, None, axis=axis)
    right_ext = jnp.flip(lax.slice_in_dim(x, -(n + 1), -1, axis=axis), axis=axis)
    return jnp.concatenate((2 * left_end - left_ext, x, 2 * right_end - right_ext), axis=axis)


def _pad_by(mode: str, **kwargs):
    def pad(x, n, axis=-1):
        widths = [(0, 0)] * x.ndim
        widths[axis] = (n, n)
        return jnp.pad(x, widths, mode, **kwargs)

    return pad


_BOUNDARIES = {
    "even": _pad_by("reflect"),
    "odd": _odd_ext,
    "constant": _pad_by("edge"),
    "zeros": _pad_by("constant", constant_values=0.0),
    None: lambda x, *args, **kwargs: x,
}


def _detrend_func(detrend_type, axis: int):
    if isinstance(detrend_type, str):
        return partial(detrend, type=detrend_type, axis=-1)
    if callable(detrend_type):
        if axis == -1:
            return detrend_type

        # as JAX's: the user's function sees `axis` moved last
        def func(d):
            return jnp.moveaxis(detrend_type(jnp.moveaxis(d, axis, -1)), -1, axis)

        return func
    if not detrend_type:
        return lambda d: d
    raise ValueError(f"Unsupported detrend type: {detrend_type!r}")


def _spectral_helper(
    x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
    detrend_type="constant", return_onesided=True, scaling="density", axis=-1, mode="psd",
    boundary=None, padded=False, name="spectral_helper",
):  # fmt: skip
    """scipy's `_spectral_helper`: frequencies, segment times and the per-segment spectra
    (mode "stft") or (cross) periodograms (mode "psd"); `y` None means auto-spectra."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in _BOUNDARIES:
        raise ValueError(
            f"Unknown boundary option '{boundary}', must be one of: {list(_BOUNDARIES)}"
        )
    x = jnp.asarray(x)
    axis = operator.index(axis)
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {x.ndim}")
    axis = axis % max(x.ndim, 1)
    if y is None:
        (x,) = _promote_inexact(x)
        y_arr = x
        outershape = x.shape[:axis] + x.shape[axis + 1 :]
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        x, y_arr = _promote_inexact(x, y)
        if x.ndim != y_arr.ndim:
            raise ValueError(f"{name}: x and y must have the same rank ({x.ndim} vs {y_arr.ndim})")
        try:
            outershape = jnp.broadcast_shapes(
                x.shape[:axis] + x.shape[axis + 1 :], y_arr.shape[:axis] + y_arr.shape[axis + 1 :]
            )
        except ValueError as err:
            raise ValueError(f"{name}: x and y cannot be broadcast together") from err
    result_dtype = _complex_dtype(x.dtype)
    freq_dtype = np.finfo(result_dtype).dtype
    if nperseg is not None:
        nperseg = _static_int(nperseg, f"{name}: nperseg")
        if nperseg < 1:
            raise ValueError(f"{name}: nperseg must be a positive integer, got {nperseg}")
    win, nperseg = _triage_segments(window, nperseg, x.shape[axis], x.dtype, name)
    noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, f"{name}: noverlap")
    nfft = nperseg if nfft is None else _static_int(nfft, f"{name}: nfft")
    if y is None:
        if x.size == 0:
            return (jnp.zeros(x.shape, freq_dtype), jnp.zeros(x.shape, freq_dtype),
                    jnp.zeros(x.shape, result_dtype))  # fmt: skip
    elif x.size == 0 or y_arr.size == 0:
        n = min(x.shape[axis], y_arr.shape[axis])
        shape = tuple(outershape[:axis]) + (n,) + tuple(outershape[axis:])
        return (jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype),
                jnp.zeros(shape, result_dtype))  # fmt: skip
    x = jnp.moveaxis(x, axis, -1)
    if y is not None and y_arr.ndim > 1:
        y_arr = jnp.moveaxis(y_arr, axis, -1)
    if y is not None and x.shape[-1] != y_arr.shape[-1]:
        # the shorter signal is zero-padded to the longer's length
        if x.shape[-1] < y_arr.shape[-1]:
            pad_shape = (*x.shape[:-1], y_arr.shape[-1] - x.shape[-1])
            x = jnp.concatenate((x, jnp.zeros_like(x, shape=pad_shape)), -1)
        else:
            pad_shape = (*y_arr.shape[:-1], x.shape[-1] - y_arr.shape[-1])
            y_arr = jnp.concatenate((y_arr, jnp.zeros_like(x, shape=pad_shape)), -1)
    if nfft < nperseg:
        raise ValueError(f"{name}: nfft ({nfft}) must be greater than or equal to nperseg")
    if noverlap >= nperseg:
        raise ValueError(f"{name}: noverlap ({noverlap}) must be less than nperseg ({nperseg})")
    nstep = nperseg - noverlap
    if boundary is not None:
        extend = _BOUNDARIES[boundary]
        x = extend(x, nperseg // 2, axis=-1)
        if y is not None:
            y_arr = extend(y_arr, nperseg // 2, axis=-1)
    if padded:
        # zeros up to a whole number of segments
        nadd = -(x.shape[-1] - nperseg) % nstep % nperseg
        x = jnp.concatenate((x, jnp.zeros_like(x, shape=(*x.shape[:-1], nadd))), axis=-1)
        if y is not None:
            zeros = jnp.zeros_like(x, shape=(*y_arr.shape[:-1], nadd))
            y_arr = jnp.concatenate((y_arr, zeros), axis=-1)
    detrend_func = _detrend_func(detrend_type, axis)
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jnp.sqrt(scale)
    scale = _promote_complex(scale)
    sides = "onesided" if return_onesided else "twosided"
    if return_onesided and (jnp.iscomplexobj(x) or (y is not None and jnp.iscomplexobj(y))):
        sides = "twosided"
        warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
    if sides == "twosided":
        freqs = jnp.fft.fftfreq(nfft, 1 / fs, dtype=freq_dtype)
    else:
        freqs = jnp.fft.rfftfreq(nfft, 1 / fs, dtype=freq_dtype)
    result = _fft_helper(x, win, detrend_func, nperseg, noverlap, nfft, sides)
    if y is not None:
        result_y = _fft_helper(y_arr, win, detrend_func, nperseg, noverlap, nfft, sides)
        result = jnp.conjugate(result) * result_y
    elif mode == "psd":
        result = jnp.conjugate(result) * result
    result = result * scale
    if sides == "onesided" and mode == "psd":
        # one-sided power: every bin but DC (and Nyquist, for even nfft) counts twice
        end = None if nfft % 2 else -1
        result = result.at[..., 1:end].mul(2)
    time = jnp.arange(
        nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nperseg - noverlap, dtype=freq_dtype
    )
    time = time / fs
    if boundary is not None:
        time = time - nperseg / 2 / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = result.real
    return freqs, time, jnp.moveaxis(result, -1, axis)


# ---- the public functions ---------------------------------------------------------------------


def stft(
    x, fs=1.0, window="hann", nperseg: int = 256, noverlap: int | None = None,
    nfft: int | None = None, detrend=False, return_onesided: bool = True,
    boundary: str | None = "zeros", padded: bool = True, axis: int = -1,
):  # fmt: skip
    """The short-time Fourier transform, as `scipy.signal.stft`.

    Args:
      x: the time series.
      fs: its sampling frequency.
      window: a window name ("hann" built in, others through scipy.signal.get_window), a
        (name, params...) tuple, or a 1-d array.
      nperseg: the segment length; noverlap: points shared by neighbouring segments
        (default nperseg // 2); nfft: the FFT length (default nperseg).
      detrend: False, "constant", "linear" or a function of a segment.
      return_onesided: a one-sided spectrum for real input.
      boundary: how the signal is extended at both ends: "zeros", "even", "odd",
        "constant" or None.
      padded: zero-pad the end to a whole number of segments.
      axis: the time axis.

    Returns:
      (f, t, Zxx): the frequencies, the segment times and the STFT.
    """
    return _spectral_helper(
        x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
        scaling="spectrum", axis=axis, mode="stft", boundary=boundary, padded=padded,
        name="stft",
    )  # fmt: skip


def csd(
    x, y, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
    nfft: int | None = None, detrend="constant", return_onesided: bool = True,
    scaling: str = "density", axis: int = -1, average: str = "mean",
):  # fmt: skip
    """The cross power spectral density by Welch's method, as `scipy.signal.csd`.

    Args:
      x, y: the two time series (`y` None: the power spectral density of `x`, as
        `csd(x, x.copy())` in scipy).
      fs, window, nperseg, noverlap, nfft, detrend, return_onesided, axis: as in `stft`
        (nperseg defaults to 256, at most the signal's length).
      scaling: "density" (V**2/Hz) or "spectrum" (V**2).
      average: "mean" or "median" (bias-corrected) of the segments' periodograms.

    Returns:
      (f, Pxy): the frequencies and the cross spectral density.
    """
    freqs, _, pxy = _spectral_helper(
        x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis,
        mode="psd", name="csd",
    )  # fmt: skip
    if y is not None:
        pxy = pxy + 0j
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = _median_bias(pxy.shape[-1]).astype(pxy.dtype)
                if jnp.iscomplexobj(pxy):
                    pxy = jnp.median(jnp.real(pxy), axis=-1) + 1j * jnp.median(
                        jnp.imag(pxy), axis=-1
                    )
                else:
                    pxy = jnp.median(pxy, axis=-1)
                pxy = pxy / bias
            elif average == "mean":
                pxy = pxy.mean(axis=-1)
            else:
                raise ValueError(f'csd: average must be "median" or "mean", got {average!r}')
        else:
            pxy = jnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


def welch(
    x, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
    nfft: int | None = None, detrend="constant", return_onesided: bool = True,
    scaling: str = "density", axis: int = -1, average: str = "mean",
):  # fmt: skip
    """The power spectral density by Welch's method, as `scipy.signal.welch`: the average
    of the windowed segments' periodograms.

    Args:
      x: the time series; the other arguments as in `csd`.

    Returns:
      (f, Pxx): the frequencies and the power spectral density.
    """
    freqs, pxx = csd(
        x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap, nfft=nfft,
        detrend=detrend, return_onesided=return_onesided, scaling=scaling, axis=axis,
        average=average,
    )  # fmt: skip
    return freqs, pxx.real


def _overlap_and_add(x, step: int):
    """Sum the frames of x (..., frames, frame_length), frame k shifted by k * step: the
    frames are cut into step-long blocks, which are laid out so one sum adds them."""
    *batch_shape, nframes, seg_len = x.shape
    flat = math.prod(batch_shape)
    x = x.reshape((flat, nframes, seg_len))
    output_size = step * (nframes - 1) + seg_len
    blocks = 1 + (seg_len - 1) // step
    x = jnp.pad(x, ((0, 0), (0, 0), (0, blocks * step - seg_len)))
    x = x.reshape((flat, nframes, blocks, step))
    x = x.transpose((0, 2, 1, 3))
    x = jnp.pad(x, ((0, 0), (0, 0), (0, nframes), (0, 0)))
    shrunken = x.shape[2] - 1
    x = x.reshape((flat, -1))
    x = x[:, : blocks * shrunken * step]
    x = x.reshape((flat, blocks, shrunken * step))
    x = x.sum(axis=1)[:, :output_size]
    return x.reshape(tuple(batch_shape) + (-1,))


def istft(
    Zxx, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,
    nfft: int | None = None, input_onesided: bool = True, boundary: bool = True,
    time_axis: int = -1, freq_axis: int = -2,
):  # fmt: skip
    """The inverse short-time Fourier transform, as `scipy.signal.istft`: inverse FFTs of
    the segments, windowed, overlapped and added, divided by the summed squared window.

    Args:
      Zxx: the STFT (at least 2-d).
      fs: the sampling frequency.
      window: as in `stft`.
      nperseg: the segment length (default from Zxx's frequency axis); noverlap: default
        nperseg // 2 (also for 0, as JAX's); nfft: the FFT length.
      input_onesided: Zxx holds the non-negative frequencies of a real signal.
      boundary: the STFT extended the signal at both ends (their halves are cut off).
      time_axis, freq_axis: Zxx's segment and frequency axes.

    Returns:
      (t, x): the sample times and the reconstructed signal.
    """
    Zxx = jnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError(f"istft: input stft must be at least 2d, got shape {Zxx.shape}")
    ndim = Zxx.ndim
    freq_axis, time_axis = operator.index(freq_axis) % ndim, operator.index(time_axis) % ndim
    if freq_axis == time_axis:
        raise ValueError("istft: must specify differing time and frequency axes")
    Zxx = jnp.asarray(Zxx, dtype=_complex_dtype(Zxx.dtype))
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    nperseg_int = _static_int(nperseg or n_default, "istft: nperseg")
    if nperseg_int < 1:
        raise ValueError(f"istft: nperseg must be a positive integer, got {nperseg_int}")
    if nfft is None:
        nfft_int = n_default
        if input_onesided and nperseg_int == n_default + 1:
            nfft_int += 1  # an odd nperseg
    else:
        nfft_int = _static_int(nfft, "istft: nfft")
    if nfft_int < nperseg_int:
        raise ValueError(
            f"istft: FFT length ({nfft_int}) must be longer than nperseg ({nperseg_int})"
        )
    noverlap_int = _static_int(noverlap or nperseg_int // 2, "istft: noverlap")
    if noverlap_int >= nperseg_int:
        raise ValueError("istft: noverlap must be less than nperseg")
    nstep = nperseg_int - noverlap_int
    if time_axis != ndim - 1 or freq_axis != ndim - 2:
        outer = tuple(i for i in range(ndim) if i not in {time_axis, freq_axis})
        Zxx = jnp.transpose(Zxx, outer + (freq_axis, time_axis))
    # JAX passes the user's nfft (None: the axis length) to the inverse FFT
    ifunc = jnp.fft.irfft if input_onesided else jnp.fft.ifft
    xsubs = ifunc(Zxx, axis=-2, n=nfft)[..., :nperseg_int, :]
    if isinstance(window, str) and window == "hann":
        win = _hann(nperseg_int).astype(xsubs.dtype)
    elif isinstance(window, (str, tuple)):
        win = jnp.array(_named_window(window, nperseg_int, "istft"), dtype=xsubs.dtype)
    else:
        win = jnp.asarray(window)
        if win.ndim != 1:
            raise ValueError(f"istft: window must be 1-D, got shape {win.shape}")
        if win.shape[0] != nperseg_int:
            raise ValueError(f"istft: window must have length of {nperseg_int}")
    xsubs = xsubs * win.sum()
    win = lax.expand_dims(win, (*range(xsubs.ndim - 2), -1))
    x = _overlap_and_add((xsubs * win).swapaxes(-2, -1), nstep)
    win_squared = jnp.repeat(win * win, xsubs.shape[-1], axis=-1)
    norm = _overlap_and_add(win_squared.swapaxes(-2, -1), nstep)
    if boundary:
        half = nperseg_int // 2
        x, norm = x[..., half:-half], norm[..., half:-half]
    x = x / jnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != ndim - 1:
        if freq_axis < time_axis:
            time_axis -= 1
        x = jnp.moveaxis(x, -1, time_axis)
    # JAX counts the times along x's first axis
    time = jnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
    return time, x
