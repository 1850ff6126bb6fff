"""The primitives' entry point under its public name: `purejit.core.bind(name, *args,
**attrs)` applies an IR op in the current trace (see `purejit.tracing`), and what libraries
read from `jax.core`: `Primitive`, `Tracer` (the base class of every purejit tracer),
`ShapedArray`, the trace-state identity `get_opaque_trace_state`, and the jaxpr API
(`ClosedJaxpr`, `Jaxpr`, `JaxprEqn`, `Var`, `Literal`, `eval_jaxpr`, `jaxpr_as_fun`)."""

from __future__ import annotations

from purejit.extend.core import (
    ClosedJaxpr,
    Effect,
    Jaxpr,
    JaxprEqn,
    Literal,
    OpaqueTraceState,
    Primitive,
    Var,
    eval_jaxpr,
    jaxpr_as_fun,
    get_aval,
    get_opaque_trace_state,
    mapped_aval,
    unmapped_aval,
)
from purejit.tracing import ShapedArray, Tracer, bind, bind1, find_top_trace, trace_depth


def trace_state_clean() -> bool:
    """Whether no transformation is tracing in this thread, only the base trace being on
    its stack (JAX's `trace_state_clean`; numpyro caches functions only then)."""
    return trace_depth() == 1


__all__ = [
    "ClosedJaxpr",
    "Effect",
    "Jaxpr",
    "JaxprEqn",
    "Literal",
    "OpaqueTraceState",
    "Primitive",
    "Var",
    "eval_jaxpr",
    "jaxpr_as_fun",
    "ShapedArray",
    "Tracer",
    "bind",
    "bind1",
    "find_top_trace",
    "get_aval",
    "get_opaque_trace_state",
    "mapped_aval",
    "trace_state_clean",
    "unmapped_aval",
]
