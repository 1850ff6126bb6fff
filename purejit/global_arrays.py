"""Building and inspecting arrays over devices, as JAX's top-level helpers do:

    make_array_from_callback, make_array_from_single_device_arrays,
    make_array_from_process_local_data, copy_to_host_async, live_arrays

A sharding is a `purejit.sharding.NamedSharding` (each device holds its shard) or a
`SingleDeviceSharding`. Each device's data is placed on that device and the shards are
joined into one global array without copying (PJRT's assembly, as JAX's), so a process
only ever touches the shards of the devices it drives.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit import tree_util
from purejit.backend import pjrt
from purejit.backend import spmd as backend_spmd
from purejit.runtime.array import Array
from purejit.runtime.mesh import NamedSharding
from purejit.sharding import SingleDeviceSharding


def _shape(shape) -> tuple[int, ...]:
    return tuple(operator.index(d) for d in shape)


def _check_sharding(name: str, sharding):
    if not isinstance(sharding, (NamedSharding, SingleDeviceSharding)):
        raise TypeError(
            f"{name}: sharding must be a NamedSharding or a SingleDeviceSharding, got "
            f"{type(sharding).__name__}"
        )


def _local_indices(sharding, shape) -> list[tuple]:
    """(device, index) for each device this process drives, in the sharding's order."""
    items = sharding.devices_indices_map(shape).items()
    return [(d, idx) for d, idx in items if backend_spmd.is_local(d)]


def _put(name, data, device, want_shape, dtype):
    arr = np.asarray(data) if type(data) is not Array else data
    if dtype is not None:
        arr = arr.astype(dtype) if isinstance(arr, np.ndarray) else arr
    if tuple(arr.shape) != tuple(want_shape):
        raise ValueError(
            f"{name}: the data for device {device} has shape {tuple(arr.shape)}, but the "
            f"sharding gives that device a shard of shape {tuple(want_shape)}"
        )
    host = np.asarray(arr)
    return pjrt.to_device(np.ascontiguousarray(host) if host.ndim else host, device)


def _join(shape, sharding, bufs, dtype) -> Array:
    if isinstance(sharding, SingleDeviceSharding):
        return Array(buf=bufs[0])
    buf = backend_spmd.assemble(shape, sharding, bufs)
    out = Array(buf=buf)
    if dtype is not None and out.dtype != dtype:
        raise ValueError(f"the shards have dtype {out.dtype}, not the requested {dtype}")
    return out


def make_array_from_callback(
    shape: Sequence[int], sharding, data_callback: Callable, dtype=None
) -> Array:
    """A global array of `shape` whose shard on each device is `data_callback(index)`, index
    being that device's tuple of slices into the global array, as
    `jax.make_array_from_callback`.

    Args:
        shape: the global shape.
        sharding: a NamedSharding or SingleDeviceSharding.
        data_callback: index -> array-like of the shard's shape.
        dtype: the dtype to convert each shard to (default: the shards' own).
    """
    _check_sharding("make_array_from_callback", sharding)
    shape = _shape(shape)
    dt = pdt.canonicalize(np.dtype(dtype)) if dtype is not None else None
    want = sharding.shard_shape(shape)
    bufs = [_put("make_array_from_callback", data_callback(idx), dev, want, dt)
            for dev, idx in _local_indices(sharding, shape)]  # fmt: skip
    return _join(shape, sharding, bufs, dt)


def make_array_from_single_device_arrays(
    shape: Sequence[int], sharding, arrays: Sequence, *, dtype=None
) -> Array:
    """A global array of `shape` from one array per device of `sharding` this process drives
    (each already on its device, of the shard's shape), as
    `jax.make_array_from_single_device_arrays`; no data moves."""
    _check_sharding("make_array_from_single_device_arrays", sharding)
    shape = _shape(shape)
    local = _local_indices(sharding, shape)
    arrays = list(arrays)
    if len(arrays) != len(local):
        raise ValueError(
            f"make_array_from_single_device_arrays: {len(arrays)} arrays for the "
            f"{len(local)} devices of {sharding} this process drives"
        )
    want = sharding.shard_shape(shape)
    bufs = []
    for a in arrays:
        buf = a.buffer if type(a) is Array else a
        devs = list(buf.devices()) if hasattr(buf, "devices") else []
        if len(devs) != 1:
            raise ValueError(
                "make_array_from_single_device_arrays: each array must live on one device, "
                f"got one on {devs or 'the host'}"
            )
        if tuple(buf.shape) != tuple(want):
            raise ValueError(
                f"make_array_from_single_device_arrays: an array of shape {tuple(buf.shape)} "
                f"on {devs[0]}, but the sharding's shard shape is {tuple(want)}"
            )
        bufs.append(buf)
    dt = pdt.canonicalize(np.dtype(dtype)) if dtype is not None else None
    if isinstance(sharding, SingleDeviceSharding) and bufs[0].devices() != sharding.device_set:
        raise ValueError(f"the array lives on {bufs[0].devices()}, not on {sharding}")
    return _join(shape, sharding, bufs, dt)


def make_array_from_process_local_data(sharding, local_data, global_shape=None) -> Array:
    """A global array from the data of this process's part of it, as
    `jax.make_array_from_process_local_data`: `local_data` covers the region of the global
    array that this process's devices hold (the whole array in a single process).

    Args:
        sharding: a NamedSharding or SingleDeviceSharding.
        local_data: the process's region (array-like).
        global_shape: the global shape; None when the process holds the whole array.
    """
    _check_sharding("make_array_from_process_local_data", sharding)
    data = np.asarray(local_data)
    shape = data.shape if global_shape is None else _shape(global_shape)
    local = _local_indices(sharding, shape)
    if not local:
        raise ValueError(f"no device of {sharding} belongs to this process")
    # the process's region: from the lowest start to the highest stop of its shards, per dim
    lo = [min((idx[d].indices(n)[0] for _, idx in local)) for d, n in enumerate(shape)]
    hi = [max((idx[d].indices(n)[1] for _, idx in local)) for d, n in enumerate(shape)]
    region = tuple(h - low for low, h in zip(lo, hi))
    if data.shape != region:
        raise ValueError(
            f"make_array_from_process_local_data: local_data of shape {data.shape}, but this "
            f"process's devices hold a region of shape {region} of the global shape {shape}"
            + ("; pass global_shape=" if global_shape is None else "")
        )

    def shard(idx):
        return data[tuple(slice(s.indices(n)[0] - low, s.indices(n)[1] - low)
                          for s, n, low in zip(idx, shape, lo))]  # fmt: skip

    return make_array_from_callback(shape, sharding, shard)


def copy_to_host_async(x):
    """Start copying every array leaf of `x` to host memory (leaves without a
    `copy_to_host_async` method are left alone), as `jax.copy_to_host_async`; returns `x`."""
    for leaf in tree_util.tree_leaves(x):
        start = getattr(leaf, "copy_to_host_async", None)
        if start is not None:
            start()
    return x


def live_arrays(platform: str | None = None) -> list[Array]:
    """Every device array alive in the backend of `platform` (default: the default device's),
    as `jax.live_arrays`. Each comes back as a purejit Array over the live buffer: not the
    same Python object as the one that made it (weak types are not kept), but the same
    device memory, so `.delete()` frees it."""
    return [Array(buf=b) for b in pjrt.live_buffers(platform) if not b.is_deleted()]
