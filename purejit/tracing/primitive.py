"""Built-in IR ops as primitive objects (JAX's `lax.stop_gradient_p`,
`custom_derivatives.custom_jvp_call_p`, ...): what a jaxpr equation's `primitive` is for an
op of purejit's IR (`purejit.extend.jaxpr`), one object per op name so libraries can key
tables by them and compare with `is`."""

from __future__ import annotations

from purejit.ir import Function
from purejit.tracing.core import bind


class IRPrimitive:
    """A built-in IR op as a jaxpr equation's primitive: `name` is the op's name;
    `bind(*args, **params)` applies it in the current trace. One object per name, so
    equations can be compared by `eqn.primitive is get_primitive("add")`."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    multiple_results = property(lambda self: self.name in _MULTI)

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        regions = []
        if "jaxpr" in params:
            regions = [_region_fn(params.pop("jaxpr"))]
        elif "cond_jaxpr" in params:
            regions = [_region_fn(params.pop("cond_jaxpr")), _region_fn(params.pop("body_jaxpr"))]
        elif "branches" in params:
            regions = [_region_fn(b) for b in params.pop("branches")]
        outs = bind(self.name, *args, regions=regions, **params)
        return list(outs) if self.multiple_results or len(outs) != 1 else outs[0]


# ops whose equations return a list of values (those that may have more than one result)
_MULTI = frozenset({"case", "while", "scan", "call", "sort", "custom_vjp_call",
                    "custom_jvp_call", "all_to_all", "fusion", "optimization_barrier"})  # fmt: skip
_PRIMITIVES: dict[str, IRPrimitive] = {}


def get_primitive(name: str) -> IRPrimitive:
    """The primitive standing for the IR op `name` in jaxpr equations."""
    prim = _PRIMITIVES.get(name)
    if prim is None:
        prim = _PRIMITIVES.setdefault(name, IRPrimitive(name))
    return prim


def _region_fn(closed) -> Function:
    fn = getattr(closed, "fn", closed)
    if not isinstance(fn, Function):
        raise TypeError(
            "a region parameter must be a ClosedJaxpr made by purejit (or an IR function), "
            f"got {type(closed).__name__}"
        )
    return fn


__all__ = ["IRPrimitive", "get_primitive"]
