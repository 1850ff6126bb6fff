"""The primitives' entry point under its public name: `purejit.core.bind(name, *args,
**attrs)` applies an IR op in the current trace (see `purejit.tracing`)."""

from purejit.tracing import ShapedArray, Tracer, bind, bind1

__all__ = ["ShapedArray", "Tracer", "bind", "bind1"]
