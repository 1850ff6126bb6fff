"""`jax.typeof` as libraries use it.

- The abstract value of a concrete array carries the array's sharding (JAX's avals do;
  chex reads `jax.typeof(x).sharding.is_fully_replicated`). purejit's own `typeof` leaves
  an aval's sharding unspecified (None).
- A typed PRNG key's abstract value has the key's shape and extended dtype (`key<fry>`), as
  JAX's; purejit's own `typeof` takes arrays and tracers only (a key is a pytree over its
  uint32 data). Flax's nnx asks `jax.typeof` of every Variable's value, keys included.
- A value whose type a library registered with `jax.experimental.hijax.register_hitype`
  gets the abstract value the library's function gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from purejit import dtypes as pdt
from purejit.inspection import typeof as _typeof
from purejit.random._keys import PRNGKeyArray
from purejit.runtime import Array
from purejit.tracing import ConcreteArray, ShapedArray
from purejit.tracing import ShapedArray as _ShapedArray


@dataclass(frozen=True)
class ShardedAval(ShapedArray):
    """A `ShapedArray` that knows the sharding of the array it describes."""

    array_sharding: object = field(default=None, compare=False)

    @property
    def sharding(self):
        return self.array_sharding


@dataclass(frozen=True)
class KeyAval(ShapedArray):
    """The abstract value of a typed PRNG key array: its shape and key dtype."""

    def str_short(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    def to_tangent_aval(self) -> ShapedArray:
        # keys are not differentiable: their tangents carry no data, as JAX's
        return ShapedArray(self.shape, pdt.float0)

    @property
    def type(self):
        raise NotImplementedError(
            f"{self.str_short()}: a typed key has no IR tensor type (purejit carries a key "
            "as its uint32 data); take random.key_data(key)"
        )


def typeof(x):
    """`purejit.typeof(x)`, with the sharding of a concrete array, typed keys' key dtype,
    and registered hijax types."""
    if isinstance(x, PRNGKeyArray):
        return KeyAval(tuple(x.shape), x.dtype)
    if not isinstance(x, (ConcreteArray, np.ndarray, np.generic, int, float, complex, bool)):
        hi = hitype_of(x)
        if hi is not None:
            return hi
    aval = _typeof(x)
    if type(x) is Array and isinstance(aval, ShapedArray):
        return ShardedAval(aval.shape, aval.dtype, aval.weak_type, array_sharding=x.sharding)
    return aval


class _ShapedArrayMeta(type):
    """`jax.core.ShapedArray` in drop-in mode: every purejit abstract value is one
    (`isinstance`), and it is built with JAX's keywords (`sharding=`), which purejit's own
    `ShapedArray` does not take (its avals carry no sharding)."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _ShapedArray)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _ShapedArray)

    def __call__(cls, shape, dtype, weak_type=False, *, sharding=None, **jax_only):
        if jax_only:
            raise NotImplementedError(
                f"ShapedArray({', '.join(sorted(jax_only))}=...): purejit's abstract values "
                "have a shape, a dtype, a weak type and (as JAX's) a sharding only"
            )
        shape = tuple(int(d) for d in shape)
        if sharding is None:
            return _ShapedArray(shape, np.dtype(dtype), bool(weak_type))
        return ShardedAval(shape, np.dtype(dtype), bool(weak_type), array_sharding=sharding)


class ShapedArray(metaclass=_ShapedArrayMeta):
    """`jax.core.ShapedArray(shape, dtype, weak_type=False, *, sharding=None)`."""


class _AbstractValueMeta(type):
    def __instancecheck__(cls, obj):
        # purejit's avals are abstract values without subclassing this class (its
        # subclasses, a library's hijax types, keep Python's own check)
        if cls is AbstractValue and isinstance(obj, _ShapedArray):
            return True
        return type.__instancecheck__(cls, obj)


class AbstractValue(metaclass=_AbstractValueMeta):
    """`jax.core.AbstractValue`: purejit's abstract values, and the base of the hijax types a
    library declares (`jax.experimental.hijax.HiType`, `MutableHiType`)."""


_hitypes: dict[type, object] = {}


def register_hitype(val_cls: type, typeof_fn) -> None:
    """Record `typeof_fn(value)` as the abstract value of `val_cls`'s instances
    (`jax.typeof` reads it); purejit's transformations still take arrays only."""
    _hitypes[val_cls] = typeof_fn


def hitype_of(x):
    """The registered hijax abstract value of `x`, or None for any other value."""
    for cls in type(x).__mro__:
        fn = _hitypes.get(cls)
        if fn is not None:
            return fn(x)
    return None
