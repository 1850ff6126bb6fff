"""Patch extraction and locally connected convolution, as jax.lax composes them:

conv_general_dilated_patches  a grouped convolution with a one-hot kernel: every input
                              channel's window becomes prod(filter_shape) channels
conv_general_dilated_local    those patches contracted with a kernel that differs at
                              every output position (one dot_general)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from purejit.lax._lift import lift as _lift
from purejit.lax._precision import Precision, canonical_precision
from purejit.lax.conv import conv_dimension_numbers, conv_general_dilated
from purejit.lax.ops import broadcast_in_dim, dot_general, reshape, transpose


def _moveaxis(x, sources: Sequence[int], targets: Sequence[int]):
    """x with axis sources[i] moved to targets[i] (NumPy's moveaxis)."""
    sources = [s % x.ndim for s in sources]
    targets = [t % x.ndim for t in targets]
    order = [d for d in range(x.ndim) if d not in sources]
    for t, s in sorted(zip(targets, sources)):
        order.insert(t, s)
    return transpose(x, order)


def conv_general_dilated_patches(
    lhs,
    filter_shape: Sequence[int],
    window_strides: Sequence[int],
    padding,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers=None,
    precision=None,
    preferred_element_type=None,
):
    """The patches a `conv_general_dilated` with a `filter_shape` window would see, as
    `jax.lax.conv_general_dilated_patches`: the output has C * prod(filter_shape) feature
    channels (channel-major, then the window position in row-major order)."""
    x = _lift(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    dn = conv_dimension_numbers(x.shape, (1, 1) + filter_shape, dimension_numbers)
    lhs_spec, rhs_spec, _ = dn
    size = math.prod(filter_shape)
    channels = x.shape[lhs_spec[1]]
    # one output channel per (input channel, window position), picking that position
    eye = np.eye(size, dtype=x.dtype)
    rhs = broadcast_in_dim(eye, (channels, size, size), (1, 2))
    rhs = reshape(rhs, (channels * size, 1, *filter_shape))
    rhs = _moveaxis(rhs, (0, 1), (rhs_spec[0], rhs_spec[1]))
    prec = None if precision is None else (precision, Precision.DEFAULT)
    return conv_general_dilated(
        x,
        rhs,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dn,
        precision=prec,
        feature_group_count=channels,
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_local(
    lhs,
    rhs,
    window_strides: Sequence[int],
    padding,
    filter_shape: Sequence[int],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers=None,
    precision=None,
):
    """A locally connected (unshared-weight) convolution, as
    `jax.lax.conv_general_dilated_local`: `rhs` holds one kernel per output position, laid
    out as the rhs spec says with the input feature dim of size C * prod(filter_shape)."""
    x = _lift(lhs)
    prec = canonical_precision(precision, "conv_general_dilated_local")
    lhs_prec = None if prec is None else Precision[prec[0]]
    patches = conv_general_dilated_patches(
        x,
        filter_shape,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dimension_numbers,
        precision=lhs_prec,
    )
    _, rhs_spec, out_spec = conv_dimension_numbers(
        x.shape, (1, 1) + tuple(filter_shape), dimension_numbers
    )
    lhs_b = list(out_spec[2:])
    rhs_b = [rhs_spec[2:][i] for i in sorted(range(len(lhs_b)), key=lambda k: lhs_b[k])]
    dn = (([out_spec[1]], [rhs_spec[1]]), (sorted(lhs_b), rhs_b))
    out = dot_general(patches, _lift(rhs), dn, precision)
    return _moveaxis(out, (-2, -1), (out_spec[0], out_spec[1]))
