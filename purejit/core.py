"""The primitives' entry point under its public name: `purejit.core.bind(name, *args,
**attrs)` applies an IR op in the current trace (see `purejit.tracing`)."""

from purejit.extend.core import Primitive
from purejit.tracing import ShapedArray, Tracer, bind, bind1

__all__ = ["Primitive", "ShapedArray", "Tracer", "bind", "bind1"]
