"""The op registry: one `OpDef` per op, holding its type rule, NumPy reference and traits.

Passes ask about traits (`op.has_trait("elementwise")`), never about names. The StableHLO
lowering rule of each op lives in `purejit/backend/stablehlo.py`; a test checks that every
op registered here has one.

Traits in use:
    pure          no side effect: may be removed when unused, merged by CSE
    elementwise   result[i] depends only on operands[i]; all shapes equal
    commutative   binary op with f(a, b) == f(b, a)
    associative   binary op with f(f(a, b), c) == f(a, f(b, c))
    idempotent    binary op with f(x, x) == x
    involution    unary op with f(f(x)) == x
    reduction     combines elements along dimensions with a region (input fusion root)
    contraction   dot-like: each output element reads a whole row/column
    constant      produces a compile-time array from its attributes
    fusion        a fused kernel: its region is the computation, run as one loop
    shape_only    moves or copies data without arithmetic (reshape, transpose, slice, ...)
    control_flow  has regions that are run conditionally or repeatedly
    collective    communicates between devices
    side_effect   must be kept and ordered
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from purejit.ir.core import Function, TensorType


class IRTypeError(TypeError):
    """An op was given operands or attributes its type rule rejects."""


# infer(operand_types, attrs, regions) -> result types
InferFn = Callable[[list[TensorType], dict[str, Any], list[Function]], list[TensorType]]
# reference(operand_arrays, attrs, regions, run_region) -> result arrays
ReferenceFn = Callable[..., list]


@dataclass(frozen=True)
class OpDef:
    """Everything the IR knows about one op, kept in one place."""

    name: str
    infer: InferFn
    reference: ReferenceFn
    traits: frozenset[str] = field(default_factory=frozenset)
    attrs: tuple[str, ...] = ()
    num_regions: int | None = 0  # None: any number
    doc: str = ""


from purejit.ir import core as _core  # noqa: E402

_REGISTRY: dict[str, OpDef] = _core._REGISTRY


def register(opdef: OpDef) -> OpDef:
    if opdef.name in _REGISTRY:
        raise ValueError(f"op {opdef.name!r} registered twice")
    _REGISTRY[opdef.name] = opdef
    return opdef


def get_op(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise NotImplementedError(f"op {name!r} is not registered in purejit.ir") from None


def all_ops() -> dict[str, OpDef]:
    return dict(_REGISTRY)


def fail(op: str, msg: str):
    raise IRTypeError(f"{op}: {msg}")
