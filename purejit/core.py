"""The primitives' entry point under its public name: `purejit.core.bind(name, *args,
**attrs)` applies an IR op in the current trace (see `purejit.tracing`), and what libraries
read from `jax.core`: `Primitive`, `Tracer` (the base class of every purejit tracer),
`ShapedArray`, and the trace-state identity `get_opaque_trace_state`."""

from __future__ import annotations

from purejit.extend.core import (
    Effect,
    OpaqueTraceState,
    Primitive,
    get_aval,
    get_opaque_trace_state,
    mapped_aval,
    unmapped_aval,
)
from purejit.tracing import ShapedArray, Tracer, bind, bind1, find_top_trace


__all__ = [
    "Effect",
    "OpaqueTraceState",
    "Primitive",
    "ShapedArray",
    "Tracer",
    "bind",
    "bind1",
    "find_top_trace",
    "get_aval",
    "get_opaque_trace_state",
    "mapped_aval",
    "unmapped_aval",
]
