"""`jax.experimental.hijax` in drop-in mode: the names a library's hijax code declares at
import, so that the library loads; purejit runs none of it.

JAX's hijax lets a library define high-level types (`HiType`, `MutableHiType`) that trace
as one value and lower to several low-level arrays, and primitives (`HiPrimitive`) on them.
purejit's IR has only arrays and tokens, so binding a `HiPrimitive` raises
NotImplementedError by name. What a module does at import works for real: subclassing the
base classes, marking methods with `aval_method`/`aval_property`, registering a value type
with `register_hitype` (then `jax.typeof` gives its abstract value), and adding an effect
type to `control_flow_allowed_effects` (purejit already allows every effect inside
control flow). Flax's nnx uses hijax only for variables made with `hijax=True`
(`flax_hijax_variable`, off by default).
"""

from __future__ import annotations

from purejit.compat._avals import AbstractValue, register_hitype
from purejit.compat._state import AbstractRef
from purejit.extend.ad import Zero, instantiate_zeros, is_undefined_primal
from purejit.tracing import ShapedArray


def _no_hijax(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: purejit has no hijax (high-level types and primitives lowered to several "
        "arrays); its IR carries arrays only. Flax: leave nnx's hijax variables off "
        "(flax_hijax_variable=False, the default); otherwise run this under JAX"
    )


class HiType(AbstractValue):
    """An immutable high-level type (JAX's `hijax.HiType`)."""

    is_high = True
    has_qdd = False


class MutableHiType(AbstractValue):
    """A mutable high-level type whose type state may change (JAX's `MutableHiType`)."""

    is_high = True
    has_qdd = True
    is_writer = False


class HiPspec:
    """A hijax type's partition spec (JAX's `hijax.HiPspec`): declared, never used by purejit."""


class AvalQDD:
    """An abstract value with its type state (JAX's `core.AvalQDD`)."""

    def __init__(self, aval, qdd):
        self.aval, self.qdd = aval, qdd


class AvalMutableQDD:
    """An abstract value with a mutable type state (JAX's `core.AvalMutableQDD`)."""

    def __init__(self, aval, mutable_qdd):
        self.aval, self.mutable_qdd = aval, mutable_qdd


class aval_method:  # noqa: N801 (JAX's name)
    """Marks a method of a hijax type's value callable on its tracers; holds the function."""

    __slots__ = ("fun",)

    def __init__(self, fun):
        self.fun = fun


class aval_property:  # noqa: N801 (JAX's name)
    """Marks a property of a hijax type's value readable on its tracers; holds the getter."""

    __slots__ = ("fget",)

    def __init__(self, fget):
        self.fget = fget


class HiPrimitive:
    """A primitive on hijax types; subclasses define `abstract_eval`, `to_lojax`, `jvp`,
    `transpose`. Declaring one works; binding it raises NotImplementedError."""

    multiple_results = False

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name

    def is_high(self, *avals, **params) -> bool:
        return True

    def is_effectful(self, params) -> bool:
        return False

    def bind(self, *args, **params):
        raise _no_hijax(f"hijax primitive {self.name!r}")


class VJPHiPrimitive(HiPrimitive):
    """A hijax primitive with a VJP rule (JAX's `VJPHiPrimitive`)."""


class EffectTypeSet:
    """A set of effect types (JAX's `effects.EffectTypeSet`)."""

    def __init__(self):
        self._types: set[type] = set()

    def add_type(self, effect_type: type) -> None:
        self._types.add(effect_type)

    def contains(self, eff) -> bool:
        return any(isinstance(eff, t) for t in self._types)

    def filter_in(self, effects):
        return [e for e in effects if self.contains(e)]

    def filter_not_in(self, effects):
        return [e for e in effects if not self.contains(e)]


control_flow_allowed_effects = EffectTypeSet()


class TransformedRef:
    """A view of a mutable array ref (JAX's `state.TransformedRef`); purejit has no refs."""

    def __init__(self, *args, **kwargs):
        raise _no_hijax("TransformedRef")


__all__ = [
    "AbstractRef",
    "AbstractValue",
    "AvalMutableQDD",
    "AvalQDD",
    "HiPrimitive",
    "HiPspec",
    "HiType",
    "MutableHiType",
    "ShapedArray",
    "TransformedRef",
    "VJPHiPrimitive",
    "Zero",
    "aval_method",
    "aval_property",
    "control_flow_allowed_effects",
    "instantiate_zeros",
    "is_undefined_primal",
    "register_hitype",
]
