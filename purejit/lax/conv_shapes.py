"""jax.lax's static shape helpers of convolutions and windowed reductions, and the typing
aliases of their arguments:

    conv_general_permutations, conv_shape_tuple, conv_general_shape_tuple,
    conv_transpose_shape_tuple, reduce_window_shape_tuple,
    ConvGeneralDilatedDimensionNumbers, PrecisionLike

Dimension numbers here are JAX's string specs ("NCHW", "OIHW", "NCHW"); each helper
computes on Python ints what the op's shape rule gives.
"""

from __future__ import annotations

from typing import Union

import numpy as np

from purejit.lax._precision import Precision
from purejit.lax.conv import ConvDimensionNumbers, _transpose_pads, padtype_to_pads

ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]
PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision]]


def _stride_dim(d: int, window: int, stride: int) -> int:
    # max(0, (d - window) // stride + 1)
    return max((d - window) // stride + 1, 0)


def conv_general_permutations(dimension_numbers):
    """The permutations that put lhs, rhs and output specs in the canonical (N, C, spatial),
    (O, I, spatial), (N, C, spatial) order, spatial dims in the rhs spec's order."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pairs = ("N", "C"), ("O", "I"), ("N", "C")
    for i, (a, b) in enumerate(pairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(
                f"convolution dimension_numbers[{i}] must contain the characters '{a}' and "
                f"'{b}' exactly once, got {spec}."
            )
        if len(spec) != len(set(spec)):
            raise TypeError(
                f"convolution dimension_numbers[{i}] cannot have duplicate characters, got {spec}."
            )
    if not set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}:
        raise TypeError(
            "convolution dimension_numbers elements must each have the same set of spatial "
            f"characters, got {dimension_numbers}."
        )

    def perm(spec, pair):
        spatial = [i for i, ch in enumerate(spec) if ch not in pair]
        if spec is not rhs_spec:
            spatial.sort(key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1]), *spatial)

    return tuple(perm(s, p) for s, p in zip(dimension_numbers, pairs))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
    """The output shape of a convolution of canonical-order shapes (N, C, spatial...) and
    (O, I, spatial...), `pads` a padding string or (low, high) pairs."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(
            f"Wrong number of explicit pads for convolution: expected {len(lhs_shape) - 2}, "
            f"got {len(pads)}."
        )
    padded = np.add(lhs_shape[2:], np.sum(np.array(pads).reshape(-1, 2), axis=1))
    if np.any(padded < 0):
        raise ValueError(
            "Negative padding is larger than the size of the corresponding dimension: got "
            f"padding={pads} for lhs_shape[2:]={lhs_shape[2:]}"
        )
    space = tuple(
        _stride_dim(int(d), int(k), int(s)) for d, k, s in zip(padded, rhs_shape[2:], strides)
    )
    n = lhs_shape[0]
    if batch_group_count > 1:
        if n % batch_group_count:
            raise ValueError(
                f"batch {n} is not a multiple of batch_group_count {batch_group_count}"
            )
        n //= batch_group_count
    return (int(n), int(rhs_shape[0]), *space)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of `conv_general_dilated` (no dilation) with string specs."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                           window_strides, padding)  # fmt: skip
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of `conv_transpose` with string specs and a padding string or
    (low, high) pairs."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t, rhs_t = np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        padding = [
            _transpose_pads(int(k), int(s), padding) for k, s in zip(rhs_t[2:], window_strides)
        ]
    pad = [int(np.sum(p)) for p in padding]
    space = [
        (i - 1) * s - k + 2 + p for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, pad)
    ]
    out = (int(lhs_t[0]), int(rhs_t[0]), *(int(d) for d in space))
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


def _dilate(shape, dilation):
    if not all(d > 0 for d in dilation):
        raise TypeError(f"All dilations must be positive, got {dilation}.")
    dilation = (1,) * (len(shape) - len(dilation)) + tuple(dilation)
    return tuple(0 if d == 0 else 1 + k * (d - 1) for d, k in zip(shape, dilation))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):  # fmt: skip
    """The output shape of `reduce_window` with explicit (low, high) padding pairs."""
    if base_dilation is not None:
        operand_shape = _dilate(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = _dilate(window_dimensions, window_dilation)
    padded = [d + lo + hi for d, (lo, hi) in zip(operand_shape, padding)]
    return tuple(_stride_dim(d, w, s) for d, w, s in zip(padded, window_dimensions, window_strides))
