"""Tracing: abstract values, the trace stack, `bind`, and the jit trace that records IR.

Tracing never executes and never asks the device runtime: it imports only `purejit.ir`,
the dtype rules, config and errors. The runtime installs the eager trace at the bottom of
the stack (`set_base_trace`); transformations push their own traces above it.
"""

from purejit.tracing.core import (
    ShapedArray,
    Trace,
    Tracer,
    aval_of,
    bind,
    bind1,
    current_trace,
    find_top_trace,
    infer_results,
    new_trace,
    on_trace_change,
    set_base_trace,
    set_current_trace,
    trace_depth,
    trace_is_active,
)
from purejit.tracing.host import ConcreteArray, host_value
from purejit.tracing.jit_trace import JitTrace, JitTracer, Traced, trace_to_function

__all__ = [
    "ConcreteArray",
    "JitTrace",
    "JitTracer",
    "ShapedArray",
    "Trace",
    "Traced",
    "Tracer",
    "aval_of",
    "bind",
    "bind1",
    "current_trace",
    "find_top_trace",
    "host_value",
    "infer_results",
    "new_trace",
    "on_trace_change",
    "set_base_trace",
    "set_current_trace",
    "trace_depth",
    "trace_is_active",
    "trace_to_function",
]
