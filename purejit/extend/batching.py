"""Batching rules of user-defined primitives, under the names of
`jax.interpreters.batching`: `primitive_batchers[prim] = rule(args, dims, **params) ->
(outs, out_dims)` and `axis_primitive_batchers[prim] = rule(axis_size, axis_name,
trace_type, args, dims, **params)`; a dimension is `not_mapped` (None) for an operand that
does not vary over the batch."""

from __future__ import annotations

from purejit.extend._tables import axis_primitive_batchers, primitive_batchers
from purejit.transforms.batching.core import not_mapped

__all__ = ["axis_primitive_batchers", "not_mapped", "primitive_batchers"]
