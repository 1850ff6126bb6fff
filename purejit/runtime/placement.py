"""Device placement: `device_put` onto one device or split over a mesh, and `sharding_of`."""

from __future__ import annotations

from purejit.backend import pjrt
from purejit.backend import spmd as backend_spmd
from purejit.runtime.array import Array, as_array
from purejit.runtime.mesh import NamedSharding, named_sharding_of


def device_put(x, sharding=None):
    """Place `x` on a device, or split it over devices.

    Args:
        x: an array-like (NumPy, scalar, purejit.Array, jax.Array).
        sharding: a `NamedSharding` (each device gets its shard), a device, or None for the
            default device.
    Returns:
        A `purejit.Array` whose buffer lives where `sharding` says; it reads back (NumPy) as
        the global array.
    """
    arr = as_array(x)
    if sharding is None or not isinstance(sharding, NamedSharding):
        return Array(buf=pjrt.to_device(arr.host, sharding), weak_type=arr.weak_type)
    buf = backend_spmd.put_sharded(arr.host, sharding)
    return Array(buf=buf, weak_type=arr.weak_type)


def sharding_of(x) -> NamedSharding | None:
    """The NamedSharding of an array split over devices, or None (one device / host)."""
    if type(x) is Array:
        s = x.sharding
        return s if isinstance(s, NamedSharding) else None
    return named_sharding_of(x)
