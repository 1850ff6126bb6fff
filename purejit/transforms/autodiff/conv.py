"""JVP and transpose rules of `convolution` (`ir/ops/conv.py`).

A convolution is bilinear: the tangent is conv(t_lhs, rhs) + conv(lhs, t_rhs). Each transpose
is again a convolution with the cotangent (JAX's `_conv_general_dilated_transpose_lhs/rhs`):

    w.r.t. lhs   the cotangent convolved with the spatially reversed kernel, whose input and
                 output feature roles swap; strides become input dilation and input dilation
                 becomes strides; a feature-grouped kernel moves its group factor from the
                 output into the input features, and a batch-grouped one too, its group
                 factor then moved from the result's features into its batch;
    w.r.t. rhs   the input convolved with the cotangent as the kernel, batch and features
                 swapped in every operand; strides become kernel dilation; feature groups
                 become batch groups and batch groups feature groups.

Padding of each transpose is what makes the result the shape of the operand (negative pads
crop what the forward convolution never read). With `preferred_element_type`, the other
operand is converted to the cotangent's dtype and the result back to the operand's.
"""

from __future__ import annotations

import numpy as np

from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    aval,
    defbilinear,
    convert,
    deftranspose,
    is_linear,
    op,
    reshape,
    transpose,
)


def _conv(lhs, rhs, attrs):
    return op("convolution", lhs, rhs, **attrs)


defbilinear("convolution")


# ---- helpers ---------------------------------------------------------------------------------


def _split_axis(x, src: int, outer: int):
    """Dimension `src` of size outer*inner split into (outer, inner) at `src`."""
    shape = list(aval(x).shape)
    shape[src : src + 1] = [outer, shape[src] // outer]
    return reshape(x, shape)


def _merge_axis(x, src: int, dst: int):
    """Dimension `src` folded into dimension `dst` (numbered without `src`) as its major part."""
    shape = list(aval(x).shape)
    perm = [d for d in range(len(shape)) if d != src]
    perm.insert(dst, src)
    new = [shape[d] for d in range(len(shape)) if d != src]
    new[dst] *= shape[src]
    return reshape(transpose(x, perm), new)


def _dilate(sizes, dilation):
    return [0 if d == 0 else 1 + r * (d - 1) for d, r in zip(sizes, dilation)]


def _dims(attrs, prefix):
    """(batch, feature, spatial...) of the input or output, (out, in, spatial...) of the kernel."""
    if prefix == "kernel":
        return (
            attrs["kernel_output_feature_dimension"],
            attrs["kernel_input_feature_dimension"],
            *attrs["kernel_spatial_dimensions"],
        )
    return (
        attrs[f"{prefix}_batch_dimension"],
        attrs[f"{prefix}_feature_dimension"],
        *attrs[f"{prefix}_spatial_dimensions"],
    )


def _with_dims(attrs, lhs_spec, rhs_spec, out_spec, **changes):
    """`attrs` with new dimension numbers (specs ordered as `_dims` gives them)."""
    new = dict(attrs)
    new.update(
        input_batch_dimension=lhs_spec[0],
        input_feature_dimension=lhs_spec[1],
        input_spatial_dimensions=tuple(lhs_spec[2:]),
        kernel_output_feature_dimension=rhs_spec[0],
        kernel_input_feature_dimension=rhs_spec[1],
        kernel_spatial_dimensions=tuple(rhs_spec[2:]),
        output_batch_dimension=out_spec[0],
        output_feature_dimension=out_spec[1],
        output_spatial_dimensions=tuple(out_spec[2:]),
    )
    new.update(changes)
    new.pop("preferred_element_type", None)  # the operands already have the cotangent's dtype
    return new


def _swap01(spec):
    return (spec[1], spec[0], *spec[2:])


def _spatial(shape, spec):
    return [shape[d] for d in spec[2:]]


# ---- transposes ------------------------------------------------------------------------------


def _transpose_lhs(g, lhs_aval, w, attrs):
    lhs_spec, rhs_spec, out_spec = (
        _dims(attrs, "input"),
        _dims(attrs, "kernel"),
        _dims(attrs, "output"),
    )
    groups, batch_groups = attrs["feature_group_count"], attrs["batch_group_count"]
    strides, lhs_dil = attrs["window_strides"], attrs["lhs_dilation"]
    rhs_dil = attrs["rhs_dilation"]
    k = groups if groups > 1 else batch_groups
    if k > 1:  # the group factor of the kernel's output features joins its input features
        w = _merge_axis(_split_axis(w, rhs_spec[0], k), rhs_spec[0], rhs_spec[1])
    ins = _dilate(_spatial(lhs_aval.shape, lhs_spec), lhs_dil)
    win = _dilate(_spatial(aval(w).shape, rhs_spec), rhs_dil)
    outs = _dilate(_spatial(aval(g).shape, out_spec), strides)
    before = [r - lo - 1 for r, (lo, _) in zip(win, attrs["padding"])]
    after = [i + r - 1 - o - b for i, r, o, b in zip(ins, win, outs, before)]
    w = op("reverse", w, dimensions=tuple(rhs_spec[2:]))
    w = convert(w, aval(g).dtype)
    new = _with_dims(
        attrs,
        out_spec,
        _swap01(rhs_spec),
        lhs_spec,
        window_strides=tuple(lhs_dil),
        lhs_dilation=tuple(strides),
        padding=tuple(zip(before, after)),
        feature_group_count=k,
        batch_group_count=1,
    )
    out = convert(_conv(g, w, new), lhs_aval.dtype)
    if batch_groups > 1:  # the group factor of the features goes back into the batch
        out = _merge_axis(_split_axis(out, lhs_spec[1], batch_groups), lhs_spec[1], lhs_spec[0])
    return out


def _transpose_rhs(g, x, rhs_aval, attrs):
    if int(np.prod(aval(g).shape, dtype=np.int64)) == 0:
        return Zero(rhs_aval)
    lhs_spec, rhs_spec, out_spec = (
        _dims(attrs, "input"),
        _dims(attrs, "kernel"),
        _dims(attrs, "output"),
    )
    groups, batch_groups = attrs["feature_group_count"], attrs["batch_group_count"]
    strides, lhs_dil = attrs["window_strides"], attrs["lhs_dilation"]
    rhs_dil = attrs["rhs_dilation"]
    ins = _dilate(_spatial(aval(x).shape, lhs_spec), lhs_dil)
    win = _dilate(_spatial(rhs_aval.shape, rhs_spec), rhs_dil)
    outs = _dilate(_spatial(aval(g).shape, out_spec), strides)
    lows = [lo for lo, _ in attrs["padding"]]
    highs = [o - i + r - lo - 1 for o, i, r, lo in zip(outs, ins, win, lows)]
    x = convert(x, aval(g).dtype)
    new = _with_dims(
        attrs,
        _swap01(lhs_spec),
        _swap01(out_spec),
        _swap01(rhs_spec),
        window_strides=tuple(rhs_dil),
        rhs_dilation=tuple(strides),
        padding=tuple(zip(lows, highs)),
        feature_group_count=batch_groups,
        batch_group_count=groups,
    )
    return convert(_conv(x, g, new), rhs_aval.dtype)


@deftranspose("convolution")
def _conv_t(cts, operands, attrs, regions):
    (ct,), (x, w) = cts, operands
    if is_linear(x) and is_linear(w):
        raise NotImplementedError("convolution of two tangents is not linear")
    if is_linear(x):
        if isinstance(ct, Zero):
            return [Zero(aval(x)), None]
        return [_transpose_lhs(ct, aval(x), w, attrs), None]
    if isinstance(ct, Zero):
        return [None, Zero(aval(w))]
    return [None, _transpose_rhs(ct, x, aval(w), attrs)]


LINEAR_OPS.add("convolution")
