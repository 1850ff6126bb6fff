"""Batching rule of `convolution` (ir/ops/conv.py), as JAX batches it: no loop.

    lhs batched      the batch joins the input batch dimension (N -> B*N) and is split out
                     of the output batch dimension;
    rhs batched      the batch joins the kernel's output features, inside each feature
                     group (O -> G*B*O/G), and is split out of the output features;
    both batched     each example is its own feature group: the batch joins the input
                     features and the kernel's output features, feature_group_count * B.

A batch-grouped convolution (batch_group_count > 1, the kernel gradient of a grouped one)
with a batched operand runs once per example (a scan), which `explain` reports.
"""

from __future__ import annotations

from purejit.tracing import aval_of, bind1
from purejit.transforms.batching.core import defrule, loop_rule, matchaxis, shape


def fold(axis, x, d, dim: int):
    """`x` batched at `d` with the batch merged into its dimension `dim`, batch-major."""
    per = aval_of(x).shape[:d] + aval_of(x).shape[d + 1 :]
    x = matchaxis(axis, x, d, dim)  # (..., B, n, ...)
    return bind1("reshape", x, shape=(*per[:dim], axis.size * per[dim], *per[dim + 1 :]))


def split(axis, y, dim: int):
    """`y` with its dimension `dim` (batch-major B*n) split: the batch at `dim`."""
    s = shape(y)
    return bind1("reshape", y, shape=(*s[:dim], axis.size, s[dim] // axis.size, *s[dim + 1 :]))


def _grouped(x, dim: int, outer: int, inner: int, swap_to: tuple):
    """Reshape dimension `dim` of `x` (size outer*inner*...) and transpose two factors."""
    s = shape(x)
    x = bind1("reshape", x, shape=(*s[:dim], *swap_to, *s[dim + 1 :]))
    perm = list(range(len(s) + len(swap_to) - 1))
    perm[dim], perm[dim + 1] = perm[dim + 1], perm[dim]
    x = bind1("transpose", x, permutation=tuple(perm))
    return bind1("reshape", x, shape=(*s[:dim], outer * inner * swap_to[2], *s[dim + 1 :]))


@defrule("convolution")
def convolution_rule(axis, args, dims, **attrs):
    (lhs, rhs), (dl, dr) = args, dims
    if attrs.get("batch_group_count", 1) != 1:
        return loop_rule(
            axis,
            args,
            dims,
            _op_name="convolution",
            _reason="a batch-grouped convolution has no batched form",
            **attrs,
        )
    n, b = attrs["input_batch_dimension"], axis.size
    ifd, ofd = attrs["input_feature_dimension"], attrs["output_feature_dimension"]
    kofd = attrs["kernel_output_feature_dimension"]
    groups = attrs.get("feature_group_count", 1)
    if dr is None:  # examples are more images of the input batch
        out = bind1("convolution", fold(axis, lhs, dl, n), rhs, **attrs)
        return [split(axis, out, attrs["output_batch_dimension"])], [
            attrs["output_batch_dimension"]
        ]
    if dl is None:  # examples are more output features, inside each feature group
        k = fold(axis, rhs, dr, kofd)  # (B, O) batch-major
        o = shape(k)[kofd] // b
        if groups > 1:  # (B, G, O/G) -> (G, B, O/G)
            k = _grouped(k, kofd, groups, b, (b, groups, o // groups))
        out = bind1("convolution", lhs, k, **attrs)
        if groups > 1:  # (G, B, O/G) -> (B, G, O/G)
            out = _grouped(out, ofd, groups, b, (groups, b, o // groups))
        return [split(axis, out, ofd)], [ofd]
    # both batched: each example is its own group of features
    x = fold(axis, lhs, dl, ifd)
    k = fold(axis, rhs, dr, kofd)
    out = bind1("convolution", x, k, **{**attrs, "feature_group_count": groups * b})
    return [split(axis, out, ofd)], [ofd]
