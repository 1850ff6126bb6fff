"""Batching of user-defined primitives (`ir/ops/user_primitive.py`): the primitive's entry
in `purejit.extend.batching.primitive_batchers` (`rule(args, dims, **params) -> (outs,
out_dims)`) or `axis_primitive_batchers` (`rule(axis_size, axis_name, trace_type, args,
dims, **params)`), dims `None` for an unbatched operand, as JAX's."""

from __future__ import annotations

from purejit.ir.ops.user_primitive import OPS, lookup_use
from purejit.transforms.batching.core import defrule


@defrule(*OPS)
def user_primitive_rule(axis, args, dims, *, primitive, regions=()):
    return lookup_use(primitive).batch(axis, list(args), list(dims))
