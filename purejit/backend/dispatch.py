"""The fastest ways jaxlib offers to move host data to a device for a call.

`jax.device_put` costs ~30-200 us a call in Python (argument parsing, sharding checks);
jaxlib's C++ `batched_device_put`, which `jax.jit`'s own dispatch uses for NumPy arguments,
costs a few microseconds. `put` uses it for one-device placements and falls back to
`jax.device_put` where this jaxlib lacks it (`fast_put_available()` says which).
"""

from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def _batched_device_put():
    try:
        from jaxlib import xla_client

        fn = xla_client.batched_device_put
        from jax._src.core import ShapedArray
        from jax.sharding import SingleDeviceSharding
    except (ImportError, AttributeError):
        return None
    return fn, ShapedArray, SingleDeviceSharding


@functools.lru_cache(maxsize=4096)
def _placement(shape: tuple, dtype: np.dtype, device):
    _, shaped_array, single = _batched_device_put()
    return shaped_array(shape, dtype), single(device), [device]


def fast_put_available() -> bool:
    """Whether this jaxlib has the C++ transfer `put` uses."""
    return _batched_device_put() is not None


def put(value: np.ndarray, device, *, enable_x64: bool):
    """`value` (a NumPy array whose dtype is already canonical) as a jax.Array committed to
    `device`, through jaxlib's C++ transfer; `jax.device_put` where that is missing.

    Args:
        value: the host data (not copied on CPU when jaxlib can share it; purejit never
            writes into the result).
        device: a jax device.
        enable_x64: purejit's x64 flag (whether 64-bit data stays 64-bit).
    """
    api = _batched_device_put()
    if api is None:
        import jax

        return jax.device_put(value, device)
    aval, sharding, devices = _placement(value.shape, value.dtype, device)
    return api[0](aval, sharding, [value], devices, True, enable_x64=enable_x64)
