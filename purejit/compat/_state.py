"""`jax._src.state.types` and JAX's array refs in drop-in mode: the types libraries test
against. purejit has no mutable array refs (no `new_ref`, no ref effects in its IR), so no
value is ever an `AbstractRef` or a `Ref`: `isinstance(x, AbstractRef | Ref)` is False for
every value, which is the true answer, and making one raises NotImplementedError naming
what is missing."""

from __future__ import annotations


def _no_refs(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: purejit has no mutable array refs (JAX's jax.new_ref / jax.Ref); keep state "
        "functional (pass the array in and return its new value), or run this under JAX"
    )


class AbstractRef:
    """The abstract value of a mutable array ref (JAX's `jax._src.state.types.AbstractRef`)."""

    def __init__(self, *args, **kwargs):
        raise _no_refs("AbstractRef")


class Ref:
    """A mutable array ref (JAX's `jax.Ref`, once `MutableArray`)."""

    def __init__(self, *args, **kwargs):
        raise _no_refs("Ref")


MutableArray = Ref

__all__ = ["AbstractRef", "MutableArray", "Ref"]
