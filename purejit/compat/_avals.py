"""`jax.typeof` as libraries use it: the abstract value of a concrete array carries the
array's sharding (JAX's avals do; chex reads `jax.typeof(x).sharding.is_fully_replicated`).
purejit's own `typeof` leaves an aval's sharding unspecified (None)."""

from __future__ import annotations

from dataclasses import dataclass, field

from purejit.inspection import typeof as _typeof
from purejit.runtime import Array
from purejit.tracing import ShapedArray


@dataclass(frozen=True)
class ShardedAval(ShapedArray):
    """A `ShapedArray` that knows the sharding of the array it describes."""

    array_sharding: object = field(default=None, compare=False)

    @property
    def sharding(self):
        return self.array_sharding


def typeof(x):
    """`purejit.typeof(x)`, with the sharding of a concrete array."""
    aval = _typeof(x)
    if isinstance(x, Array) and isinstance(aval, ShapedArray):
        return ShardedAval(aval.shape, aval.dtype, aval.weak_type, array_sharding=x.sharding)
    return aval
