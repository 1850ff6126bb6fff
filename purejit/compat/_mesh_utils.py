"""`jax.experimental.mesh_utils` in drop-in mode: `create_device_mesh`, the array of devices
a `Mesh` is built from (Flax's tests and examples make their meshes so)."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np


def create_device_mesh(
    mesh_shape: Sequence[int],
    devices: Sequence[Any] | None = None,
    *,
    contiguous_submeshes: bool = False,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """`devices` (default: every device) as an array of shape `mesh_shape`, as JAX lays
    them out off TPU: CPU devices in their order, GPU devices by id. The two keywords
    concern TPU topologies only."""
    import purejit

    if devices is None:
        devices = purejit.devices()
    shape = tuple(int(d) for d in mesh_shape)
    if math.prod(shape) != len(devices):
        raise ValueError(
            f"create_device_mesh: the number of devices {len(devices)} must equal the "
            f"product of mesh_shape {shape}"
        )
    if devices[-1].platform == "tpu":
        raise NotImplementedError(
            "create_device_mesh: TPU topologies (purejit runs on CPU and GPU); build the "
            "array with np.array(devices).reshape(mesh_shape)"
        )
    if devices[-1].platform == "gpu":
        devices = sorted(devices, key=lambda d: d.id)
    out = np.empty(len(devices), dtype=object)
    out[:] = list(devices)
    return out.reshape(shape)


__all__ = ["create_device_mesh"]
