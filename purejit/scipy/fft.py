"""purejit.scipy.fft: `jax.scipy.fft`'s discrete cosine transforms (type 2, as JAX has),
computed with one complex FFT of the reordered input (Makhoul's method) through
`purejit.numpy.fft`.

`dct(x)[k] = 2 sum_n x[n] cos(pi k (2n + 1) / (2N))`; norm None or "backward" leaves it
so and scales `idct` by 1/(2N) (`idct(dct(x)) == x`), "ortho" makes both orthonormal
(`[0]` scaled by sqrt(1/(4N)), the rest by sqrt(1/(2N))). `n`/`s` crop or zero-pad.

    dct, idct, dctn, idctn
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from purejit import numpy as jnp

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(type: int, norm, name: str) -> None:
    if type != 2:
        raise NotImplementedError(f"{name}: only type=2 is implemented (as in JAX), got {type}")
    if norm not in (None, "backward", "ortho"):
        raise NotImplementedError(f"{name}: norm={norm!r}; None, 'backward' or 'ortho' only")


def _prepare(x, n, axis: int):
    """`x` as a float array with `axis` last, cropped or zero-padded to `n` along it."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(x.dtype, float))
    x = jnp.moveaxis(x, axis, -1)
    if n is not None:
        length = x.shape[-1]
        if n < length:
            x = x[..., :n]
        elif n > length:
            x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - length)])
    return x


def _ortho_scale(length: int, dtype):
    # what an orthonormal DCT-II multiplies the unnormalised one by, per frequency
    scale = np.full(length, np.sqrt(1.0 / (2.0 * length)))
    scale[0] = np.sqrt(1.0 / (4.0 * length))
    return jnp.asarray(scale.astype(dtype))


def _twiddle(length: int, dtype, sign: float):
    k = np.arange(length)
    return jnp.asarray(np.exp(sign * 1j * np.pi * k / (2.0 * length)).astype(dtype))


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm=None):
    """The discrete cosine transform of `x` along `axis` (`jax.scipy.fft.dct`)."""
    _check(type, norm, "dct")
    x = _prepare(x, n, axis)
    length = x.shape[-1]
    # even entries in order, then the odd ones reversed: the DCT is then one FFT
    v = jnp.concatenate([x[..., ::2], jnp.flip(x[..., 1::2], axis=-1)], axis=-1)
    spectrum = jnp.fft.fft(v, axis=-1)
    ctype = spectrum.dtype
    out = 2.0 * jnp.real(spectrum * _twiddle(length, ctype, -1.0))
    out = out.astype(x.dtype)
    if norm == "ortho":
        out = out * _ortho_scale(length, x.dtype)
    return jnp.moveaxis(out, -1, axis)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm=None):
    """The inverse of `dct` along `axis` (`jax.scipy.fft.idct`)."""
    _check(type, norm, "idct")
    y = _prepare(x, n, axis)
    length = y.shape[-1]
    if norm == "ortho":
        y = y / _ortho_scale(length, y.dtype)
    # y[N - k] for k = 1..N-1, and 0 at k = 0
    mirrored = jnp.concatenate([jnp.zeros_like(y[..., :1]), jnp.flip(y[..., 1:], axis=-1)], -1)
    ctype = jnp.result_type(y.dtype, np.complex64)
    spectrum = _twiddle(length, ctype, 1.0) * (y - 1j * mirrored) / 2.0
    v = jnp.real(jnp.fft.ifft(spectrum, axis=-1)).astype(y.dtype)
    half = (length + 1) // 2
    # undo the reordering: v holds the even entries, then the odd ones reversed
    out = jnp.zeros_like(v)
    out = out.at[..., ::2].set(v[..., :half])
    out = out.at[..., 1::2].set(jnp.flip(v[..., half:], axis=-1))
    return jnp.moveaxis(out, -1, axis)


def _axes_and_sizes(x, s, axes, name: str):
    ndim = jnp.ndim(x)
    if axes is None:
        axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
    axes = tuple(axes)
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{name}: s and axes must have the same length, got {s} and {axes}")
    return axes, (None,) * len(axes) if s is None else tuple(s)


def dctn(x, type: int = 2, s: Sequence[int] | None = None, axes=None, norm=None):
    """`dct` along each of `axes` (all by default) in turn (`jax.scipy.fft.dctn`)."""
    _check(type, norm, "dctn")
    axes, sizes = _axes_and_sizes(x, s, axes, "dctn")
    for axis, n in zip(axes, sizes):
        x = dct(x, type, n, axis, norm)
    return jnp.asarray(x)


def idctn(x, type: int = 2, s: Sequence[int] | None = None, axes=None, norm=None):
    """`idct` along each of `axes` (all by default) in turn (`jax.scipy.fft.idctn`)."""
    _check(type, norm, "idctn")
    axes, sizes = _axes_and_sizes(x, s, axes, "idctn")
    for axis, n in zip(axes, sizes):
        x = idct(x, type, n, axis, norm)
    return jnp.asarray(x)
