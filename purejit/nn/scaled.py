"""Block-scaled matmuls (jax.nn's scaled_matmul, scaled_dot_general and their configs).

A block-scaled operand is a narrow-type array (float8_e4m3fn, float8_e5m2, float4_e2m1fn)
with one scale per block of `block_size` consecutive elements along the contracting (last)
dimension: `x_true = x * repeat(scales, block_size, axis=-1)`. JAX computes these with
cuDNN on NVIDIA Blackwell GPUs and has no CPU lowering; purejit computes the definition on
every backend: both operands and their scales converted to float32, the scales repeated over
their blocks and multiplied in (exact: a scale times a float8 or float4 value fits float32's
mantissa), one float32 `dot_general`, then the preferred element type.

`scaled_dot_general` quantizes high-precision operands first, as JAX's does: MXFP8 (blocks
of 32, float8_e4m3fn data, power-of-two float8_e8m0fnu scales rounded up) or NVFP4 (blocks of
16, float4_e2m1fn data, float8_e4m3fn scales, a float32 global scale). Its gradient is JAX's
custom VJP: the cotangent and the other operand quantized with the third config and
contracted the same way (NVFP4 gradients are plain matmuls with a straight-through estimator
that zeroes the gradient of clipped inputs).
"""

from __future__ import annotations

import dataclasses
import warnings

import ml_dtypes
import numpy as np

from purejit import lax
from purejit import numpy as jnp
from purejit.custom_derivatives import custom_vjp

_F32 = np.dtype(np.float32)


@dataclasses.dataclass(slots=True)
class BlockScaleConfig:
    """How `scaled_dot_general` quantizes one operand (JAX's fields)."""

    mode: str
    block_size: int
    data_type: object
    scale_type: object
    global_scale: object
    infer_only: bool


def get_scaled_dot_general_config(mode, global_scale=None) -> BlockScaleConfig:
    """The quantization config of `mode` ("mxfp8" or "nvfp4") for `scaled_dot_general`.

    Args:
        mode: "mxfp8" (blocks of 32, float8_e4m3fn data, float8_e8m0fnu scales) or "nvfp4"
            (blocks of 16, float4_e2m1fn data, float8_e4m3fn scales).
        global_scale: NVFP4's float32 global scale, shape (1,) (default: one).
    Returns:
        A BlockScaleConfig.
    """
    if mode == "nvfp4":
        one = jnp.ones((1,), dtype=np.float32)
        return BlockScaleConfig(
            mode="nvfp4",
            block_size=16,
            data_type=ml_dtypes.float4_e2m1fn,
            scale_type=ml_dtypes.float8_e4m3fn,
            global_scale=one if global_scale is None else global_scale,
            infer_only=False,
        )
    if mode == "mxfp8":
        return BlockScaleConfig(
            mode="mxfp8",
            block_size=32,
            data_type=ml_dtypes.float8_e4m3fn,
            scale_type=ml_dtypes.float8_e8m0fnu,
            global_scale=None,
            infer_only=False,
        )
    raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """Block-scaled batched matmul: `einsum("BMK,BNK->BMN", a * A, b * B)` in float32, where
    A and B repeat each scale over its block of K (block size K // scales' last dim).

    Args:
        lhs: (B, M, K).
        rhs: (B, N, K).
        lhs_scales: (B, M, K_s), K a multiple of K_s.
        rhs_scales: (B, N, K_s).
        preferred_element_type: the result's dtype (float32 by default).
    Returns:
        (B, M, N) in `preferred_element_type`.
    """
    a, b, sa, sb = (jnp.asarray(x) for x in (lhs, rhs, lhs_scales, rhs_scales))
    if not all(x.ndim == 3 for x in (a, b, sa, sb)):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    (ba, ma, ka), (bb, nb, kb) = a.shape, b.shape
    if ka != kb or ba != bb:
        raise ValueError(
            "scaled_matmul requires inputs a and b to have matching batch (B) and contract "
            f"(K) dimensions, but got shapes {a.shape} and {b.shape}"
        )
    (bas, mas, kas), (bbs, nbs, kbs) = sa.shape, sb.shape
    if kas != kbs or bas != bbs:
        raise ValueError(
            "scaled_matmul requires scales to have matching batch (B) and contract (K) "
            f"dimensions, but got shapes {sa.shape} and {sb.shape}"
        )
    if mas != ma or nbs != nb:
        raise ValueError(
            "scaled_matmul requires scales to match non-contract dimensions of inputs, but "
            f"got shapes a: {a.shape}, b: {b.shape}, a_scales: {sa.shape}, b_scales: "
            f"{sb.shape}"
        )
    if kas == 0 or ka % kas:
        raise ValueError(
            f"scaled_matmul: the contract dimension {ka} is not a multiple of the scales' "
            f"{kas} (each scale covers one block of K)"
        )
    out_dt = np.dtype(preferred_element_type)
    a = jnp.multiply(a.astype(_F32), jnp.repeat(sa.astype(_F32), ka // kas, axis=-1))
    b = jnp.multiply(b.astype(_F32), jnp.repeat(sb.astype(_F32), kb // kbs, axis=-1))
    out = lax.dot_general(a, b, (((2,), (2,)), ((0,), (0,))), preferred_element_type=_F32)
    return out.astype(out_dt)


# ---- quantization (JAX's MXFP8 / NVFP4 recipes) ------------------------------------------


def _to_3d(x, contracting, batch):
    """x transposed to (batch..., kept..., contracting...) and reshaped to (B, M, K)."""
    dims = range(x.ndim)
    b = [d for d in dims if d in batch]
    k = [d for d in dims if d in contracting]
    m = [d for d in dims if d not in contracting and d not in batch]
    size = lambda ds: int(np.prod([x.shape[d] for d in ds], dtype=np.int64))  # noqa: E731
    return jnp.reshape(jnp.transpose(x, b + m + k), (size(b), size(m), size(k)))


def _dot_shape(lhs_shape, rhs_shape, lhs_dn, rhs_dn):
    (lc, lb), (rc, rb) = lhs_dn, rhs_dn
    out = [n for i, n in enumerate(lhs_shape) if i in lb]
    out += [n for i, n in enumerate(lhs_shape) if i not in lc and i not in lb]
    out += [n for i, n in enumerate(rhs_shape) if i not in rc and i not in rb]
    return tuple(out)


def _e8m0_round_up(s):
    """The float8_e8m0fnu exponent (as uint8) of the power of two at or above `s`."""
    bits = lax.bitcast_convert_type(s.astype(_F32), np.uint32)
    exp, mant = jnp.right_shift(bits, 23), jnp.bitwise_and(bits, np.uint32(0x7FFFFF))
    # round up unless exact, at the top exponent, or a subnormal at most half the smallest
    up = (mant > 0) & (exp != 0xFE) & ~((exp == 0) & (mant <= 0x400000))
    return jnp.where(up, exp + np.uint32(1), exp).astype(np.uint8)


def _e8m0_value(e, dtype):
    """The power of two an e8m0 exponent stands for, in `dtype` (0 -> the smallest normal)."""
    v = lax.bitcast_convert_type(jnp.left_shift(e.astype(np.uint32), np.uint32(23)), _F32)
    tiny = 2.0**-15 if np.dtype(dtype) == np.float16 else 2.0**-127
    return jnp.where(v == 0, np.float32(tiny), v).astype(dtype)


def _quantize(x, config: BlockScaleConfig):
    """x (B, M, K) as narrow data and per-block scales (B, M, K // block_size)."""
    shape, bs = x.shape, config.block_size
    if shape[-1] < bs or shape[-1] % bs:
        raise ValueError(
            f"scaled_dot_general: the contracting size {shape[-1]} must be a multiple of the "
            f"{config.mode} block size {bs}"
        )
    x = jnp.reshape(x, shape[:-1] + (shape[-1] // bs, bs))
    big = np.asarray(ml_dtypes.finfo(config.data_type).max).astype(x.dtype)

    def per_block(x):
        return jnp.max(jnp.abs(x), axis=-1, keepdims=True) / big

    if config.mode == "mxfp8":
        scales = _e8m0_round_up(per_block(x))
        x = x / _e8m0_value(scales, x.dtype)
    elif config.mode == "nvfp4":
        scale_max = np.asarray(ml_dtypes.finfo(config.scale_type).max).astype(x.dtype)
        x = x / jnp.asarray(config.global_scale)
        scales = jnp.clip(per_block(x), 0, scale_max).astype(config.scale_type)
        x = x / scales.astype(_F32)
    else:
        raise ValueError(f"Unrecognized mode: {config.mode}.")
    q = jnp.clip(x, -big, big).astype(config.data_type)
    scales = jnp.reshape(scales, scales.shape[:-1])
    scales = lax.bitcast_convert_type(scales, np.dtype(config.scale_type))
    return jnp.reshape(q, shape), scales


def _scaled_dot(lhs, rhs, dn, pet, configs):
    (lc, rc), (lb, rb) = dn
    lhs_q, lhs_s = _quantize(_to_3d(lhs, lc, lb), configs[0])
    rhs_q, rhs_s = _quantize(_to_3d(rhs, rc, rb), configs[1])
    nvfp4 = configs[0].mode == "nvfp4"
    out = scaled_matmul(lhs_q, rhs_q, lhs_s, rhs_s, _F32 if nvfp4 else pet)
    if nvfp4:
        g = jnp.asarray(configs[0].global_scale) * jnp.asarray(configs[1].global_scale)
        out = (out * g).astype(pet)
    return jnp.reshape(out, _dot_shape(lhs.shape, rhs.shape, (lc, lb), (rc, rb)))


def _kept(ndim, contract, batch):
    return [d for d in range(ndim) if d not in contract and d not in batch]


def _grad_of_lhs(g, x, y, dn, pet, configs, swap_ans=False):
    """The cotangent of x in `out = scaled_dot(x, y)` (y's when `swap_ans`): g contracted
    with y over y's kept dims, quantized with `configs` = (g's, y's), then transposed to x's
    dimension order."""
    (xc, yc), (xb, yb) = dn
    x_kept, y_kept = _kept(x.ndim, xc, xb), _kept(y.ndim, yc, yb)
    nb = len(xb)
    ans_batch = list(range(nb))
    if swap_ans:  # out = (batch, y kept, x kept)
        ans_y = list(range(nb, nb + len(y_kept)))
    else:  # out = (batch, x kept, y kept)
        ans_y = list(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
    x_contract_by_y = list(np.take(xc, np.argsort(yc))) if len(xc) else []
    out_axes = tuple(int(a) for a in np.argsort(list(xb) + x_kept + x_contract_by_y))
    y_dn, g_dn = (y_kept, yb), (ans_y, ans_batch)
    y3, g3 = _to_3d(y, *y_dn), _to_3d(g, *g_dn)
    if configs[0].mode != "nvfp4":
        gq, gs = _quantize(g3, configs[0])
        yq, ys = _quantize(y3, configs[1])
        out = scaled_matmul(gq, yq, gs, ys, pet)
    else:
        out = jnp.matmul(g3, jnp.transpose(y3, (0, 2, 1)), preferred_element_type=pet)
    out = jnp.reshape(out, _dot_shape(g.shape, y.shape, g_dn, y_dn))
    return jnp.transpose(out, out_axes)


def _make_scaled_dot(dn, pet, configs):
    @custom_vjp
    def f(lhs, rhs):
        return _scaled_dot(lhs, rhs, dn, pet, configs)

    def fwd(lhs, rhs):
        return _scaled_dot(lhs, rhs, dn, pet, configs), (lhs, rhs)

    def bwd(res, g):
        lhs, rhs = res
        (lc, rc), (lb, rb) = dn
        d_lhs = _grad_of_lhs(g, lhs, rhs, dn, pet, [configs[2], configs[1]])
        d_rhs = _grad_of_lhs(g, rhs, lhs, ((rc, lc), (rb, lb)), pet, [configs[2], configs[0]],
                             swap_ans=True)  # fmt: skip
        if configs[2].mode == "nvfp4":
            # straight-through estimator: inputs clipped by the quantization get no gradient
            big = np.asarray(ml_dtypes.finfo(configs[0].data_type).max).astype(lhs.dtype)
            smax = np.asarray(ml_dtypes.finfo(configs[0].scale_type).max).astype(lhs.dtype)
            lim_l = jnp.asarray(configs[0].global_scale) * big * smax
            lim_r = jnp.asarray(configs[1].global_scale) * big * smax
            d_lhs = jnp.where(jnp.abs(lhs) <= lim_l, d_lhs, 0)
            d_rhs = jnp.where(jnp.abs(rhs) <= lim_r, d_rhs, 0)
        return d_lhs, d_rhs

    f.defvjp(fwd, bwd)
    return f


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):  # fmt: skip
    """`lax.dot_general` with both operands block-quantized by `configs` (see the module
    docstring); plain `lax.dot_general` when `configs` is None.

    Args:
        lhs, rhs: the high-precision operands.
        dimension_numbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).
        preferred_element_type: float32 (default), bfloat16 or float16.
        configs: three BlockScaleConfigs (lhs, rhs, gradients), e.g.
            `[get_scaled_dot_general_config("mxfp8")] * 3`.
        implementation: deprecated and ignored, as in JAX.
    Returns:
        Batch dims first, then lhs's kept dims, then rhs's.
    """
    if implementation is not None:
        warnings.warn(
            "Backend selector, now ignored. The system chooses the backend automatically.",
            DeprecationWarning,
            stacklevel=2,
        )
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)  # fmt: skip
    pet = np.dtype(preferred_element_type)
    if pet not in (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)):
        raise TypeError(f"Only support preferred_element_type in (f32, bf16, f16), but got {pet}")
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    squeeze = not dn[1][0] or not dn[1][1]
    if not dn[1][0]:  # a trailing batch dim of size 1, squeezed from the result again
        lhs, dn = jnp.expand_dims(lhs, lhs.ndim), (dn[0], ((lhs.ndim,), dn[1][1]))
    if not dn[1][1]:
        rhs, dn = jnp.expand_dims(rhs, rhs.ndim), (dn[0], (dn[1][0], (rhs.ndim,)))
    out = _make_scaled_dot(dn, pet, list(configs))(lhs, rhs)
    return jnp.squeeze(out, axis=0) if squeeze else out
