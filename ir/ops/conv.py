"""Convolutions: StableHLO's `convolution`, with every dimension number and group count.

convolution(lhs, rhs) {window_strides, padding, lhs_dilation, rhs_dilation,
                       input_batch_dimension, input_feature_dimension, input_spatial_dimensions,
                       kernel_input_feature_dimension, kernel_output_feature_dimension,
                       kernel_spatial_dimensions, output_batch_dimension,
                       output_feature_dimension, output_spatial_dimensions,
                       feature_group_count, batch_group_count, precision,
                       preferred_element_type}
    XLA's ConvGeneralDilated. The input is dilated by `lhs_dilation` (zeros between
    elements: a transposed convolution) and padded by `padding` (low, high per spatial dim,
    negative pads crop); the kernel is dilated by `rhs_dilation` (atrous); windows step by
    `window_strides`. With `feature_group_count` G the input features split into G groups,
    each convolved with its own G-th of the output features (depthwise when G equals the
    input features); with `batch_group_count` B the batch splits into B groups, each making
    its own B-th of the output features (the kernel gradient of a grouped convolution). At
    most one of G and B is above 1. `precision` is None or a pair of "DEFAULT" / "HIGH" /
    "HIGHEST" (StableHLO's precision_config; HIGHEST keeps float32 out of TF32 on GPU).
    With `preferred_element_type` the result has that dtype (bf16 operands, f32 result).
"""

from __future__ import annotations

import numpy as np
from purejit.ir import dtypes
from purejit.ir.core import TensorType
from purejit.ir.ops._util import compute_dtype, int_attr, int_list
from purejit.ir.registry import OpDef, fail, register

CONV_DIM_ATTRS = (
    "input_batch_dimension",
    "input_feature_dimension",
    "input_spatial_dimensions",
    "kernel_input_feature_dimension",
    "kernel_output_feature_dimension",
    "kernel_spatial_dimensions",
    "output_batch_dimension",
    "output_feature_dimension",
    "output_spatial_dimensions",
)
CONV_ATTRS = (
    "window_strides",
    "padding",
    "lhs_dilation",
    "rhs_dilation",
    *CONV_DIM_ATTRS,
    "feature_group_count",
    "batch_group_count",
    "precision",
    "preferred_element_type",
)
PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")


def check_precision(op: str, precision):
    """`precision` as None or a pair of StableHLO precision names; fails otherwise."""
    if precision is None:
        return None
    ok = isinstance(precision, (tuple, list)) and len(precision) == 2
    if not ok or any(p not in PRECISIONS for p in precision):
        fail(op, f"precision={precision!r} must be None or a pair of {list(PRECISIONS)}")
    return tuple(precision)


def _layout(op: str, rank: int, what: str, dims: list[int]):
    if sorted(dims) != list(range(rank)):
        fail(op, f"{what} dimension numbers {dims} are not a permutation of range({rank})")


def _conv_infer(types, attrs, regions):
    op = "convolution"
    if len(types) != 2:
        fail(op, f"expects lhs and rhs, got {len(types)} operands")
    lhs, rhs = types
    missing = [k for k in CONV_ATTRS if k not in attrs and k not in ("precision",
               "preferred_element_type")]  # fmt: skip
    if missing:
        fail(op, f"missing attributes {', '.join(missing)}")
    if lhs.rank != rhs.rank or lhs.rank < 2:
        fail(op, f"lhs {lhs} and rhs {rhs} must have one rank >= 2")
    if lhs.dtype != rhs.dtype:
        fail(op, f"operand dtypes differ: {lhs} vs {rhs}")
    if lhs.dtype == np.bool_:
        fail(op, f"does not accept bool operands {lhs}")
    n = lhs.rank - 2
    a = {k: int_list(op, k, attrs[k]) for k in CONV_DIM_ATTRS if k.endswith("dimensions")}
    a.update({k: int_attr(op, k, attrs[k]) for k in CONV_DIM_ATTRS if k.endswith("dimension")})
    ib, if_, isp = a["input_batch_dimension"], a["input_feature_dimension"], a[
        "input_spatial_dimensions"]  # fmt: skip
    ki, ko, ksp = a["kernel_input_feature_dimension"], a["kernel_output_feature_dimension"], a[
        "kernel_spatial_dimensions"]  # fmt: skip
    ob, of, osp = a["output_batch_dimension"], a["output_feature_dimension"], a[
        "output_spatial_dimensions"]  # fmt: skip
    _layout(op, lhs.rank, "input", [ib, if_, *isp])
    _layout(op, rhs.rank, "kernel", [ki, ko, *ksp])
    _layout(op, lhs.rank, "output", [ob, of, *osp])
    strides = int_list(op, "window_strides", attrs["window_strides"])
    lhs_dil = int_list(op, "lhs_dilation", attrs["lhs_dilation"])
    rhs_dil = int_list(op, "rhs_dilation", attrs["rhs_dilation"])
    padding = [tuple(int_list(op, "padding", p)) for p in attrs["padding"]]
    for k, v in (("window_strides", strides), ("lhs_dilation", lhs_dil),
                 ("rhs_dilation", rhs_dil), ("padding", padding)):  # fmt: skip
        if len(v) != n:
            fail(op, f"{k}={list(v)} needs {n} entries (spatial dims of {lhs})")
    for k, v in (("window_strides", strides), ("lhs_dilation", lhs_dil),
                 ("rhs_dilation", rhs_dil)):  # fmt: skip
        if any(x < 1 for x in v):
            fail(op, f"{k}={list(v)} must be positive")
    if any(len(p) != 2 for p in padding):
        fail(op, "padding must be (low, high) pairs")
    g = int_attr(op, "feature_group_count", attrs["feature_group_count"])
    b = int_attr(op, "batch_group_count", attrs["batch_group_count"])
    if g < 1 or b < 1 or (g > 1 and b > 1):
        fail(op, f"feature_group_count={g} and batch_group_count={b}: both >= 1, one of them 1")
    c, kin, kout = lhs.shape[if_], rhs.shape[ki], rhs.shape[ko]
    if c % g or c // g != kin:
        fail(op, f"input features {c} / feature_group_count {g} != kernel input features {kin}")
    if kout % g:
        fail(op, f"kernel output features {kout} not divisible by feature_group_count {g}")
    if lhs.shape[ib] % b or kout % b:
        fail(op, f"batch {lhs.shape[ib]} and output features {kout} must divide by "
                 f"batch_group_count {b}")  # fmt: skip
    check_precision(op, attrs.get("precision"))
    out_dt = attrs.get("preferred_element_type")
    if out_dt is not None and not isinstance(out_dt, np.dtype):
        fail(op, f"preferred_element_type must be a dtype, got {out_dt!r}")
    spatial = conv_output_spatial(
        [lhs.shape[d] for d in isp], [rhs.shape[d] for d in ksp], strides, padding, lhs_dil,
        rhs_dil,
    )  # fmt: skip
    shape = [0] * lhs.rank
    shape[ob], shape[of] = lhs.shape[ib] // b, kout
    for d, s in zip(osp, spatial):
        shape[d] = s
    return [TensorType(tuple(shape), lhs.dtype if out_dt is None else out_dt)]


def conv_output_spatial(ins, ks, strides, padding, lhs_dil, rhs_dil) -> list[int]:
    """The output's spatial sizes (XLA's formula; 0 where the window does not fit)."""
    out = []
    for i, k, s, (lo, hi), ld, rd in zip(ins, ks, strides, padding, lhs_dil, rhs_dil):
        padded = ((i - 1) * ld + 1 if i else 0) + lo + hi
        window = (k - 1) * rd + 1 if k else 0
        out.append(max((padded - window) // s + 1, 0) if padded >= window else 0)
    return out


def _dilate_pad(x: np.ndarray, dil, padding) -> np.ndarray:
    """x (N, C, spatial...) with zeros between elements and (possibly negative) padding."""
    for ax, (d, (lo, hi)) in enumerate(zip(dil, padding), start=2):
        if d > 1 and x.shape[ax] > 1:
            shape = list(x.shape)
            shape[ax] = (x.shape[ax] - 1) * d + 1
            y = np.zeros(shape, x.dtype)
            index = [slice(None)] * x.ndim
            index[ax] = slice(None, None, d)
            y[tuple(index)] = x
            x = y
        widths = [(0, 0)] * x.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths)
        index = [slice(None)] * x.ndim
        index[ax] = slice(max(-lo, 0), x.shape[ax] - max(-hi, 0))
        x = x[tuple(index)]
    return x


def _accumulator(dt: np.dtype) -> np.dtype:
    if dtypes.is_integer(dt):
        return np.dtype(np.uint64 if dt.kind == "u" else np.int64)
    if dtypes.is_complex(dt):
        return np.dtype(np.complex128)
    return np.dtype(np.float64)  # f32 and narrower floats: closer to XLA than f32 sums


def _conv_ref(args, attrs, regions, run):
    lhs, rhs = args
    a = attrs
    out_dt = a.get("preferred_element_type") or lhs.dtype
    acc = _accumulator(compute_dtype(np.dtype(out_dt)))
    x = np.transpose(lhs, [a["input_batch_dimension"], a["input_feature_dimension"],
                           *a["input_spatial_dimensions"]]).astype(out_dt).astype(acc)  # fmt: skip
    w = np.transpose(rhs, [a["kernel_output_feature_dimension"],
                           a["kernel_input_feature_dimension"],
                           *a["kernel_spatial_dimensions"]]).astype(out_dt).astype(acc)  # fmt: skip
    n = x.ndim - 2
    x = _dilate_pad(x, a["lhs_dilation"], a["padding"])
    ks = w.shape[2:]
    rd, strides = a["rhs_dilation"], a["window_strides"]
    g, b = a["feature_group_count"], a["batch_group_count"]
    (nb, c), o = x.shape[:2], w.shape[0]
    out_sp = conv_output_spatial(x.shape[2:], ks, strides, [(0, 0)] * n, [1] * n, rd)
    # every kernel tap reads a strided view of the padded input
    xg = x.reshape(b, nb // b, g, c // g, *x.shape[2:])
    wg = w.reshape(b, g, o // (b * g), c // g, *ks)
    out = np.zeros((b, nb // b, g, o // (b * g), *out_sp), acc)
    for tap in np.ndindex(*ks):
        index = tuple(
            slice(t * r, t * r + (m - 1) * s + 1, s) if m else slice(0, 0)
            for t, r, s, m in zip(tap, rd, strides, out_sp)
        )
        window = xg[(Ellipsis, *index)]  # (b, N/b, g, C/g, out...)
        taps = wg[(Ellipsis, *tap)]  # (b, g, O/(b g), C/g)
        out += np.einsum("bngc...,bgoc->bngo...", window, taps)
    out = np.moveaxis(out, 0, 1).reshape(nb // b, o, *out_sp)  # features ordered (b, g, o)
    perm = np.argsort([a["output_batch_dimension"], a["output_feature_dimension"],
                       *a["output_spatial_dimensions"]])  # fmt: skip
    return [np.transpose(out, perm).astype(out_dt)]


register(
    OpDef(
        "convolution",
        _conv_infer,
        _conv_ref,
        frozenset({"pure", "contraction", "accumulates"}),
        attrs=CONV_ATTRS,
        doc="convolution(lhs, rhs) {strides, padding, dilations, dimension numbers, groups}",
    )
)
