"""The rule tables of user-defined primitives, keyed by `Primitive` (JAX's names:
`ad.primitive_jvps`, `ad.primitive_transposes`, `batching.primitive_batchers`,
`batching.axis_primitive_batchers`, and the lowerings `mlir.register_lowering` records).
They are registries written when a library is imported, like JAX's, never trace state."""

from __future__ import annotations

from typing import Callable

from purejit import numpy as jnp
from purejit.platform import default_backend
from purejit.tracing import Tracer, trace_to_function

primitive_jvps: dict = {}
primitive_transposes: dict = {}
primitive_batchers: dict = {}
axis_primitive_batchers: dict = {}
# primitive -> {platform or None: lowering}
lowerings: dict = {}

# the JAX platform names a lowering registered for a platform may use, per purejit backend
_PLATFORMS = {"cpu": ("cpu",), "gpu": ("cuda", "rocm", "gpu"), "tpu": ("tpu",)}


class LoweredFun:
    """A lowering written as a Python function of purejit ops (`mlir.lower_fun`): traced at
    each use's operand types into the op's region."""

    def __init__(self, fun: Callable, multiple_results: bool):
        self.fun, self.multiple_results = fun, bool(multiple_results)

    def __repr__(self):
        return f"lower_fun({getattr(self.fun, '__name__', self.fun)!r})"


def _pick(prim):
    rules = lowerings.get(prim)
    if not rules:
        return None
    if None in rules:
        return rules[None]
    for name in _PLATFORMS.get(default_backend(), (default_backend(),)):
        if name in rules:
            return rules[name]
    return None


def lowering_region(prim, avals, params, out_avals):
    """The primitive's lowering traced at `avals` (an IR function), or None when it has
    none purejit can run (none registered, or a rule that builds MLIR with JAX's own
    lowering context: the op then fails to emit, naming the primitive)."""
    rule = _pick(prim)
    if not isinstance(rule, LoweredFun):
        return None

    def flat(*xs):
        got = rule.fun(*xs, **params)
        outs = list(got) if rule.multiple_results else [got]
        return [o if isinstance(o, Tracer) else jnp.asarray(o) for o in outs]

    traced = trace_to_function(flat, list(avals), name=prim.name)
    if traced.captures:
        raise NotImplementedError(
            f"the lowering of primitive {prim.name!r} reads traced values it closes over; "
            "pass them as operands of the primitive"
        )
    got = [a.type for a in traced.out_avals]
    want = [a.type for a in out_avals]
    if got != want:
        raise TypeError(
            f"primitive {prim.name!r}: its lowering returns ({', '.join(map(str, got))}) "
            f"where its abstract evaluation says ({', '.join(map(str, want))})"
        )
    return traced.fn
