"""Batching rule of `convolution` (ir/ops/conv.py), as JAX's: the vmapped axis folds into a
dimension the convolution already has, never a loop where groups allow it.

Input batched: the vmapped axis joins the input's batch dimension. Kernel batched: it joins
the kernel's output features. Both batched: it joins the input features and the output
features with `feature_group_count` multiplied by the batch size (one group per example).
With a `batch_group_count` above 1 (or feature groups with only the kernel batched) the
groups would interleave: those run once per example (the looping fallback).
"""

from __future__ import annotations

from purejit.tracing import bind1
from purejit.transforms.batching.core import bdim_at_front, defrule, loop_rule, shape


def _merge(axis, x, dim, target: int):
    """`x` (batched at `dim`) with the batch folded into its per-example dimension
    `target`, batch-major: size B * n."""
    x = bdim_at_front(axis, x, dim)
    s = shape(x)[1:]
    perm = list(range(1, target + 1)) + [0] + list(range(target + 1, len(s) + 1))
    x = bind1("transpose", x, permutation=tuple(perm))
    new = (*s[:target], axis.size * s[target], *s[target + 1 :])
    return bind1("reshape", x, shape=new)


def _split(axis, out, target: int):
    """The result with its dimension `target` (size B * n) split into (B, n); the batch
    dimension is then at `target`."""
    s = shape(out)
    new = (*s[:target], axis.size, s[target] // axis.size, *s[target + 1 :])
    return bind1("reshape", out, shape=new)


@defrule("convolution")
def convolution_rule(axis, args, dims, **attrs):
    (lhs, rhs), (dl, dr) = args, dims
    g, b = attrs["feature_group_count"], attrs["batch_group_count"]
    if b > 1 or (dl is None and g > 1):
        return loop_rule(
            axis, args, dims, _op_name="convolution",
            _reason="grouped convolution whose groups would interleave with the batch",
            **attrs,
        )  # fmt: skip
    if dr is None:  # input batched: more images
        x = _merge(axis, lhs, dl, attrs["input_batch_dimension"])
        out = bind1("convolution", x, rhs, **attrs)
        return [_split(axis, out, attrs["output_batch_dimension"])], [
            attrs["output_batch_dimension"]
        ]
    if dl is None:  # kernel batched: more output features
        w = _merge(axis, rhs, dr, attrs["kernel_output_feature_dimension"])
        out = bind1("convolution", lhs, w, **attrs)
        return [_split(axis, out, attrs["output_feature_dimension"])], [
            attrs["output_feature_dimension"]
        ]
    x = _merge(axis, lhs, dl, attrs["input_feature_dimension"])
    w = _merge(axis, rhs, dr, attrs["kernel_output_feature_dimension"])
    out = bind1("convolution", x, w, **{**attrs, "feature_group_count": g * axis.size})
    return [_split(axis, out, attrs["output_feature_dimension"])], [
        attrs["output_feature_dimension"]
    ]
