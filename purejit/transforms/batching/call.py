"""Batching rule of `call` (`ir/ops/call.py`): a call of the batched function.

The region is batched as a function of its parameters batched where the operands are, and
the results come out wherever its rules put them, so a called function stays one call under
`vmap` (JAX's `jit_p` batching rule).
"""

from __future__ import annotations

from purejit.tracing import aval_of, bind
from purejit.transforms.batching.core import batch_region, defrule


@defrule("call")
def call_rule(axis, args, dims, *, regions, callee=""):
    (fn,) = regions
    batched, out_dims = batch_region(fn, dims, axis, [aval_of(a) for a in args])
    return bind("call", *args, regions=[batched], callee=callee or fn.name), out_dims
