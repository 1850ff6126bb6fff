"""`call`: a function applied as one op (JAX's `jit_p`, Autodidax's `xla_call_p`).

    call(args...) {callee} region(args...) {body -> results...}

Runs its one region on its operands and returns the region's results. The region is a
closed function: every value it reads from outside is an operand. `callee` is the called
function's name (what `explain` and the emitted module show); it never changes the
numbers. `linear` (optional, set by differentiation): the first `linear` operands are
tangents, so a transposition takes them as linear even where one is a known zero (the
layers of a chain then transpose alike). Under an outer jit the passes decide whether a
call stays one (the compile-once work keeps repeated layers as calls) or is inlined
(`passes/inline.py`, by default: XLA inlines `func.call` anyway).
"""

from __future__ import annotations

from purejit.ir.registry import OpDef, fail, register


def _types(ts) -> str:
    return "(" + ", ".join(str(t) for t in ts) + ")"


def _call_infer(types, attrs, regions):
    if len(regions) != 1:
        fail("call", f"needs exactly one region (the called function), got {len(regions)}")
    (body,) = regions
    if list(body.param_types) != list(types):
        got, want = _types(body.param_types), _types(types)
        fail("call", f"the function takes {got}, operands are {want}")
    name = attrs.get("callee", "")
    if not isinstance(name, str):
        fail("call", f"callee must be a string, got {name!r}")
    linear = attrs.get("linear", 0)
    if isinstance(linear, bool) or not isinstance(linear, int) or not 0 <= linear <= len(types):
        fail("call", f"linear must be an operand count in [0, {len(types)}], got {linear!r}")
    return list(body.result_types)


def _call_ref(args, attrs, regions, run):
    return run(regions[0], *args)


register(
    OpDef(
        "call",
        _call_infer,
        _call_ref,
        frozenset({"pure", "control_flow"}),
        attrs=("callee", "linear"),
        num_regions=1,
        doc="call(args...) {callee} region(args...): the region applied to the operands",
    )
)
