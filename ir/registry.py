"""The op registry: one `OpDef` per op, holding its type rule, NumPy reference and traits.

Passes ask about traits (`op.has_trait("elementwise")`), never about names; the traits come
from the closed list in `purejit.ir.traits`. The StableHLO lowering rule of each op lives in
`purejit/backend/`; a test checks that every op registered here has one.

The registry sits below `core`: it knows op definitions, not the values and functions they
are applied to, so `core` can look ops up without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from purejit.ir.traits import TRAITS, unknown_traits_message


class IRTypeError(TypeError):
    """An op was given operands or attributes its type rule rejects."""


# infer(operand TensorTypes, attrs, region Functions) -> result TensorTypes
InferFn = Callable[[list, dict[str, Any], list], list]
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


_REGISTRY: dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    """Add `opdef` to the registry.

    Args:
        opdef: the op's definition; its traits must all be in `purejit.ir.traits.TRAITS`.
    Returns:
        `opdef`.
    Raises:
        ValueError: the name is taken, or a trait is not in the closed list.
    """
    if opdef.name in _REGISTRY:
        raise ValueError(f"op {opdef.name!r} registered twice")
    unknown = set(opdef.traits) - TRAITS
    if unknown:
        raise ValueError(unknown_traits_message(f"op {opdef.name!r}", unknown))
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
