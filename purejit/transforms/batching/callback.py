"""Batching of the callback ops (ir/ops/callback.py): as JAX's `debug.callback` and
`pure_callback(vmap_method="sequential")`, the callback runs once per example, in order
(a `scan` over the examples: the looping fallback)."""

from __future__ import annotations

from purejit.transforms.batching.core import deffallback

deffallback("host_callback", "a host callback runs once per example (JAX's debug.callback)")
deffallback("pure_callback", "a pure callback runs once per example (vmap_method='sequential')")
