"""Convolutions in `purejit.lax`: `conv_general_dilated` and JAX's wrappers around it.

Every function binds the IR op `convolution` (`ir/ops/conv.py`). Dimension numbers follow
JAX: None (NCHW / OIHW / NCHW), a `ConvDimensionNumbers` of dimension indices, or a triple
of strings such as `("NHWC", "HWIO", "NHWC")`, whose spatial letters in the input and
output are matched to the kernel's order.
"""

from __future__ import annotations

import operator
from typing import NamedTuple, Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.lax._precision import canonical_precision
from purejit.lax.ops import _same_dtypes, rev
from purejit.tracing import bind1


class ConvDimensionNumbers(NamedTuple):
    """Where the batch/feature/spatial dimensions are: `lhs_spec` = (batch, feature,
    spatial...), `rhs_spec` = (out feature, in feature, spatial...), `out_spec` = (batch,
    feature, spatial...), each a tuple of dimension indices."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def _fail(fname: str, msg: str, exc=ValueError):
    raise exc(f"lax.{fname}: {msg}{errors.at(errors.user_location())}")


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """`dimension_numbers` (None, a ConvDimensionNumbers or three strings) as indices.

    Args:
        lhs_shape, rhs_shape: the shapes (only their ranks are read).
        dimension_numbers: None for NCHW / OIHW / NCHW; strings like "NHWC" use N/C for
            batch/feature, O/I for the kernel's output/input features, any other letters for
            spatial dimensions.
    Returns:
        A `ConvDimensionNumbers`.
    """
    rank = len(lhs_shape)
    if len(rhs_shape) != rank:
        _fail("conv_dimension_numbers", f"lhs rank {rank} and rhs rank {len(rhs_shape)} differ")
    if dimension_numbers is None:
        spec = tuple(range(rank))
        return ConvDimensionNumbers(spec, spec, spec)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(dimension_numbers) != 3:
        _fail("conv_dimension_numbers", f"expected 3 specs, got {dimension_numbers!r}")
    lhs, rhs, out = dimension_numbers
    if all(isinstance(s, (tuple, list)) for s in dimension_numbers):
        return ConvDimensionNumbers(tuple(lhs), tuple(rhs), tuple(out))
    for spec, pair in ((lhs, "NC"), (rhs, "OI"), (out, "NC")):
        if len(spec) != rank:
            _fail("conv_dimension_numbers", f"spec {spec!r} has {len(spec)} letters, rank {rank}")
        if any(spec.count(c) != 1 for c in pair) or len(set(spec)) != rank:
            _fail("conv_dimension_numbers", f"spec {spec!r} needs one each of {pair!r}")
    if set(lhs) - set("NC") != set(rhs) - set("OI") or set(out) - set("NC") != set(rhs) - set("OI"):
        _fail("conv_dimension_numbers", f"spatial letters of {dimension_numbers!r} differ")

    def perm(spec: str, pair: str) -> tuple[int, ...]:
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if spec is not rhs:
            spatial.sort(key=lambda i: rhs.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1]), *spatial)

    return ConvDimensionNumbers(perm(lhs, "NC"), perm(rhs, "OI"), perm(out, "NC"))


def padtype_to_pads(in_shape, window_shape, strides, padding: str) -> list[tuple[int, int]]:
    """(low, high) pads for "SAME", "SAME_LOWER" or "VALID" (XLA's convention)."""
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        _fail("conv", f"padding {padding!r} must be 'SAME', 'SAME_LOWER', 'VALID' or pairs")
    pads = []
    for n, k, s in zip(in_shape, window_shape, strides):
        out = -(-n // s)
        total = max((out - 1) * s + k - n, 0)
        lo = total // 2 if kind == "SAME" else total - total // 2
        pads.append((lo, total - lo))
    return pads


def _ints(fname: str, name: str, value, n: int) -> tuple[int, ...]:
    if value is None:
        return (1,) * n
    out = tuple(operator.index(v) for v in value)
    if len(out) != n:
        _fail(fname, f"{name}={list(out)} needs {n} entries (the spatial dimensions)")
    return out


def conv_general_dilated(
    lhs,
    rhs,
    window_strides: Sequence[int],
    padding,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers=None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision=None,
    preferred_element_type=None,
):
    """A general N-d convolution (XLA's ConvGeneralDilated), as `jax.lax.conv_general_dilated`.

    Args:
        lhs: the input; rhs: the kernel (same dtype).
        window_strides: a stride per spatial dimension.
        padding: "SAME", "SAME_LOWER", "VALID" or a (low, high) pair per spatial dimension.
        lhs_dilation: input dilation per spatial dimension (a transposed convolution).
        rhs_dilation: kernel dilation per spatial dimension (atrous convolution).
        dimension_numbers: see `conv_dimension_numbers`.
        feature_group_count: split input features into this many groups.
        batch_group_count: split the batch into this many groups.
        precision: None, a `Precision` (or its name) or a pair of them.
        preferred_element_type: the result dtype (e.g. float32 for bfloat16 operands).
    Returns:
        The convolution, laid out as `dimension_numbers`' output spec.
    """
    name = "conv_general_dilated"
    x, w = _lift(lhs), _lift(rhs)
    if x.ndim != w.ndim or x.ndim < 2:
        _fail(name, f"lhs {x.aval} and rhs {w.aval} need one rank >= 2", errors.PurejitTypeError)
    _same_dtypes(name, x, w)
    dn = conv_dimension_numbers(x.shape, w.shape, dimension_numbers)
    n = x.ndim - 2
    if window_strides is not None and len(window_strides) != n:
        _fail(
            name,
            f"window_strides={list(window_strides)} needs {n} entries, one per spatial "
            f"dimension of lhs {x.aval} and rhs {w.aval}",
        )
    strides = _ints(name, "window_strides", window_strides, n)
    lhs_dil = _ints(name, "lhs_dilation", lhs_dilation, n)
    rhs_dil = _ints(name, "rhs_dilation", rhs_dilation, n)
    if isinstance(padding, str):
        ks = [w.shape[d] for d in dn.rhs_spec[2:]]
        window = [(k - 1) * r + 1 for k, r in zip(ks, rhs_dil)]
        pads = padtype_to_pads([x.shape[d] for d in dn.lhs_spec[2:]], window, strides, padding)
    else:
        pads = [tuple(operator.index(p) for p in pair) for pair in padding]
        if len(pads) != n or any(len(p) != 2 for p in pads):
            _fail(name, f"padding={padding!r} needs a (low, high) pair per spatial dimension")
    attrs = {
        "window_strides": strides,
        "padding": tuple(pads),
        "lhs_dilation": lhs_dil,
        "rhs_dilation": rhs_dil,
        "input_batch_dimension": dn.lhs_spec[0],
        "input_feature_dimension": dn.lhs_spec[1],
        "input_spatial_dimensions": tuple(dn.lhs_spec[2:]),
        "kernel_output_feature_dimension": dn.rhs_spec[0],
        "kernel_input_feature_dimension": dn.rhs_spec[1],
        "kernel_spatial_dimensions": tuple(dn.rhs_spec[2:]),
        "output_batch_dimension": dn.out_spec[0],
        "output_feature_dimension": dn.out_spec[1],
        "output_spatial_dimensions": tuple(dn.out_spec[2:]),
        "feature_group_count": operator.index(feature_group_count),
        "batch_group_count": operator.index(batch_group_count),
    }
    prec = canonical_precision(precision, f"lax.{name}")
    if prec is not None:
        attrs["precision"] = prec
    if preferred_element_type is not None:
        dt = pdt.canonicalize(np.dtype(preferred_element_type))
        if dt != x.dtype:
            bad_complex = pdt.is_inexact(dt) and (x.dtype.kind == "c") != (dt.kind == "c")
            if (pdt.is_inexact(x.dtype) and not pdt.is_inexact(dt)) or bad_complex:
                _fail(name, f"preferred_element_type {dt.name} for {x.dtype.name} operands "
                      "(complex operands need a complex result, real ones a real result)",
                      errors.PurejitTypeError)  # fmt: skip
            if x.dtype.kind in "iu" and pdt.is_inexact(dt):
                x, w = convert(x, dt), convert(w, dt)  # XLA wants float operands for floats
            else:
                attrs["preferred_element_type"] = dt
    return bind1("convolution", x, w, weak=False, **attrs)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """`conv_general_dilated` in NCHW / OIHW layout without dilation."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_with_general_padding(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    precision=None,
    preferred_element_type=None,
):
    """`conv_general_dilated` in NCHW / OIHW layout with explicit pads and dilations."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def _transpose_pads(k: int, s: int, padding: str) -> tuple[int, int]:
    """The pads that make a strided convolution's transpose give the forward input size."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    else:
        _fail("conv_transpose", f"padding {padding!r} must be 'SAME', 'VALID' or pairs")
    return lo, total - lo


_TRANSPOSE_DEFAULTS = {
    2: ("NC", "IO", "NC"),
    3: ("NHC", "HIO", "NHC"),
    4: ("NHWC", "HWIO", "NHWC"),
    5: ("NHWDC", "HWDIO", "NHWDC"),
}


def conv_transpose(
    lhs,
    rhs,
    strides: Sequence[int],
    padding,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers=None,
    transpose_kernel: bool = False,
    precision=None,
    preferred_element_type=None,
):
    """The transposed (fractionally strided) convolution, as `jax.lax.conv_transpose`.

    Args:
        lhs, rhs: input and kernel; the default layout is NHWC / HWIO / NHWC (by rank).
        strides: the forward convolution's strides (they dilate the input here).
        padding: "SAME", "VALID" or (low, high) pairs.
        rhs_dilation: kernel dilation.
        dimension_numbers: as `conv_general_dilated`.
        transpose_kernel: flip the kernel's spatial dims and swap its feature dims (the
            gradient of a convolution).
        precision, preferred_element_type: as `conv_general_dilated`.
    """
    x, w = _lift(lhs), _lift(rhs)
    if dimension_numbers is None:
        if x.ndim not in _TRANSPOSE_DEFAULTS:
            _fail("conv_transpose", f"no default dimension numbers for rank {x.ndim}")
        dimension_numbers = _TRANSPOSE_DEFAULTS[x.ndim]
    dn = conv_dimension_numbers(x.shape, w.shape, dimension_numbers)
    n = x.ndim - 2
    rhs_dil = _ints("conv_transpose", "rhs_dilation", rhs_dilation, n)
    strides = _ints("conv_transpose", "strides", strides, n)
    if isinstance(padding, str):
        ks = [(w.shape[d] - 1) * r + 1 for d, r in zip(dn.rhs_spec[2:], rhs_dil)]
        pads = [_transpose_pads(k, s, padding) for k, s in zip(ks, strides)]
    else:
        pads = padding
    if transpose_kernel:
        w = rev(w, dn.rhs_spec[2:])
        perm = list(range(w.ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        w = bind1("transpose", w, permutation=tuple(perm))
    return conv_general_dilated(
        x,
        w,
        (1,) * n,
        pads,
        strides,
        rhs_dil,
        dn,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


__all__ = [
    "ConvDimensionNumbers",
    "conv",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "conv_transpose",
    "conv_with_general_padding",
    "padtype_to_pads",
]
