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
from purejit.compat import _hijax
from purejit.inspection import typeof as _typeof
from purejit.random._keys import PRNGKeyArray
from purejit.runtime import Array
from purejit.tracing import ShapedArray


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
    if not isinstance(x, (Array, np.ndarray, np.generic, int, float, complex, bool)):
        hi = _hijax.hitype_of(x)
        if hi is not None:
            return hi
    aval = _typeof(x)
    if isinstance(x, Array) and isinstance(aval, ShapedArray):
        return ShardedAval(aval.shape, aval.dtype, aval.weak_type, array_sharding=x.sharding)
    return aval
