"""Batching of the callback ops (ir/ops/callback.py): as JAX's `debug.callback` and
`pure_callback(vmap_method="sequential")`, the callback runs once per example, in order
(a `scan` over the examples: the looping fallback)."""

from __future__ import annotations

from purejit.transforms.batching.core import FALLBACKS, defrule, loop_rule

_REASONS = {
    "host_callback": "a host callback runs once per example (JAX's debug.callback)",
    "pure_callback": "a pure callback runs once per example (vmap_method='sequential')",
}
FALLBACKS.update(_REASONS)


@defrule("host_callback")
def host_callback_rule(axis, args, dims, **attrs):
    return loop_rule(axis, args, dims, _op_name="host_callback", **attrs)


@defrule("pure_callback")
def pure_callback_rule(axis, args, dims, **attrs):
    return loop_rule(axis, args, dims, _op_name="pure_callback", **attrs)
