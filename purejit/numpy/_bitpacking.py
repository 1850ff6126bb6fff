"""packbits / unpackbits: booleans packed eight to a uint8 and back (NumPy's bit orders)."""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit.numpy import _core as c
from purejit.numpy._creation import arange
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._shape import concatenate, expand_dims, ravel, reshape, swapaxes

_U8 = np.dtype(np.uint8)


def _bit_order(bitorder: str):
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    shifts = arange(8, dtype=_U8)
    return shifts[::-1] if bitorder == "big" else shifts


def packbits(a, axis=None, bitorder: str = "big"):
    """Pack the nonzero-ness of `a`'s elements into the bits of uint8s along `axis`.

    Args:
        a: an integer or boolean array.
        axis: the axis packed (the flattened array when None); its length is padded with
            zeros to a multiple of 8.
        bitorder: "big" (the first element is the highest bit) or "little".
    Returns:
        uint8, the packed axis ceil(n / 8) long.
    """
    x = c._lift(a)
    if not (pdt.issubdtype(x.dtype, np.integer) or x.dtype == np.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    shifts = _bit_order(bitorder)
    bits = c.convert(c.not_equal(x, c.convert(0, x.dtype)), _U8)
    if axis is None:
        bits, axis = ravel(bits), 0
    bits = swapaxes(bits, axis, -1)
    rem = bits.shape[-1] % 8
    if rem:
        pad = c.convert(c.broadcast_to(0, bits.shape[:-1] + (8 - rem,)), _U8)
        bits = concatenate([bits, pad], axis=-1)
    bits = reshape(bits, bits.shape[:-1] + (bits.shape[-1] // 8, 8))
    packed = _sum(c.left_shift(bits, shifts), axis=-1, dtype=_U8)
    return swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count=None, bitorder: str = "big"):
    """The bits of uint8 `a` along `axis`, eight elements per byte.

    Args:
        a: a uint8 array.
        axis: the axis unpacked (the flattened array when None).
        count: keep this many bits of the axis (padding with zeros if longer).
        bitorder: "big" (the highest bit first) or "little".
    Returns:
        uint8 zeros and ones.
    """
    x = c._lift(a)
    if x.dtype != _U8:
        raise TypeError("Expected an input array of unsigned byte data type")
    masks = c.left_shift(np.uint8(1), _bit_order(bitorder))
    if axis is None:
        x, axis = ravel(x), 0
    x = swapaxes(x, axis, -1)
    bits = c.bitwise_and(expand_dims(x, -1), masks)
    bits = c.convert(c.greater(bits, np.uint8(0)), _U8)
    bits = reshape(bits, bits.shape[:-2] + (bits.shape[-2] * 8,))
    if count is not None:
        count = int(count)
        if count > bits.shape[-1]:
            pad = c.convert(c.broadcast_to(0, bits.shape[:-1] + (count - bits.shape[-1],)), _U8)
            bits = concatenate([bits, pad], axis=-1)
        else:
            bits = bits[..., :count]
    return swapaxes(bits, axis, -1)
