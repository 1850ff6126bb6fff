"""Bit-level float arithmetic for references that must match XLA bit for bit.

`reduce_precision` rounds each element to a float format with fewer exponent and mantissa
bits, keeping the operand's type, exactly as XLA's `ReducePrecision` does (its elemental
emitter, with NaNs left as they are):

  * the mantissa is rounded to nearest, ties to even, by adding a bias to the bit pattern
    and masking the dropped bits (a carry into the exponent is the correct rounding up);
  * with fewer exponent bits, a value above the largest finite exponent becomes an infinity
    of its sign and a value at or below the smallest normal exponent becomes a zero of its
    sign (subnormals of the narrow format are flushed, not rounded);
  * a NaN stays the same NaN, with no mantissa bits left too (checked against XLA 0.10 on
    every float16 and bfloat16 and random float32/float64 bit patterns). XLA's CPU backend
    computes bfloat16 in float32 and returns a bfloat16 NaN as the quiet NaN of its sign,
    as it does for any bfloat16 arithmetic; NaN payloads are outside what this promises.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def float_format(dt) -> tuple[int, int]:
    """(exponent bits, explicit mantissa bits) of a float dtype: f32 -> (8, 23)."""
    info = ml_dtypes.finfo(dt)
    return int(info.nexp), int(info.nmant)


def reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """`x` rounded to a float format of `exponent_bits` and `mantissa_bits`, in x's dtype."""
    x = np.asarray(x)
    src_exp, src_mant = float_format(x.dtype)
    nbits = 8 * x.dtype.itemsize
    ut = _UINT[x.dtype.itemsize]
    one = ut(1)
    bits = np.ascontiguousarray(x).view(ut).reshape(x.shape).copy()
    if mantissa_bits < src_mant:
        drop = src_mant - mantissa_bits
        last_kept = ut(one << ut(drop))  # the lowest mantissa bit that survives
        base_bias = ut((last_kept >> one) - one)
        # ties to even: round up half-way cases only when the kept lowest bit is odd
        bias = ((bits & last_kept) >> ut(drop)) + base_bias
        bits = (bits + bias) & ~ut(last_kept - one)  # wraps modulo 2**nbits, as XLA's adds
    if exponent_bits < src_exp:
        sign_mask = ut(one << ut(nbits - 1))
        exp_mask = ut(((one << ut(src_exp)) - one) << ut(src_mant))
        bias = (1 << (src_exp - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        max_exp = ut((bias + reduced_bias) << src_mant)
        min_exp = ut((bias - reduced_bias) << src_mant)
        exponent = bits & exp_mask
        signed_zero = bits & sign_mask
        bits = np.where(exponent > max_exp, signed_zero | exp_mask, bits)
        bits = np.where(exponent <= min_exp, signed_zero, bits).astype(ut)
    out = bits.view(x.dtype).reshape(x.shape)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(x), x, out).astype(x.dtype)
