"""purejit.nn.initializers: jax.nn.initializers on purejit.random, the same values for the
same key (the same samplers, scales and operation order)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from purejit import dtypes as pdt
from purejit import numpy as jnp
from purejit import random

__all__ = [
    "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal",
    "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform",
    "normal", "ones", "orthogonal", "truncated_normal", "uniform", "variance_scaling",
    "xavier_normal", "xavier_uniform", "zeros", "Initializer",
]  # fmt: skip


@runtime_checkable
class Initializer(Protocol):
    """The type of an initializer, as `jax.nn.initializers.Initializer`:
    `init(key, shape, dtype=None) -> array`."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None) -> Any: ...


def _dtype(dtype):
    return pdt.default_float() if dtype is None else pdt.canonicalize(np.dtype(dtype))


def zeros(key, shape, dtype=None):
    """An initializer that returns zeros (the key is ignored)."""
    return jnp.zeros(shape, _dtype(dtype))


def ones(key, shape, dtype=None):
    """An initializer that returns ones (the key is ignored)."""
    return jnp.ones(shape, _dtype(dtype))


def constant(value, dtype=None):
    """An initializer filling with `value`."""

    def init(key, shape, dtype=dtype):
        return jnp.full(shape, value, dtype=_dtype(dtype))

    return init


def uniform(scale=1e-2, dtype=None):
    """Uniform in [0, scale)."""

    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return random.uniform(key, shape, dt) * jnp.array(scale, dt)

    return init


def normal(stddev=1e-2, dtype=None):
    """Normal with standard deviation `stddev`."""

    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return random.normal(key, shape, dt) * jnp.array(stddev, dt)

    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """Truncated normal on (lower, upper), scaled by `stddev`."""

    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, shape, dt) * jnp.array(stddev, dt)

    return init


def _prod_axes(shape, axes) -> int:
    return shape[axes] if isinstance(axes, int) else math.prod(shape[i] for i in axes)


def _compute_fans(shape: Sequence[int], in_axis=-2, out_axis=-1, batch_axis=()):
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights "
            "tensor with default in_axis. Must be at least 2D or specify in_axis explicitly."
        )
    in_size = _prod_axes(shape, in_axis)
    out_size = _prod_axes(shape, out_axis)
    batch_size = _prod_axes(shape, batch_axis)
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):  # fmt: skip
    """Samples scaled to variance `scale / fan` (fan_in, fan_out, fan_avg or fan_geo_avg),
    from a truncated normal, a normal or a uniform distribution, as jax.nn.initializers."""

    def init(key, shape, dtype=dtype):
        shape = tuple(int(d) for d in shape)
        dt = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        if dt.kind == "c":
            raise NotImplementedError(
                "variance_scaling for complex dtypes is not implemented in purejit"
            )
        variance = jnp.array(scale / denominator, dtype=dt)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(0.87962566103423978, dt)
            return random.truncated_normal(key, -2, 2, shape, dt) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dt) * jnp.sqrt(variance)
        if distribution == "uniform":
            return random.uniform(key, shape, dt, -1) * jnp.sqrt(3 * variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    return init


def _fans_doc(name, scale, mode, distribution):
    def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)

    make.__name__ = name
    make.__doc__ = f"variance_scaling({scale}, {mode!r}, {distribution!r})."
    return make


glorot_uniform = xavier_uniform = _fans_doc("glorot_uniform", 1.0, "fan_avg", "uniform")
glorot_normal = xavier_normal = _fans_doc("glorot_normal", 1.0, "fan_avg", "truncated_normal")
lecun_uniform = _fans_doc("lecun_uniform", 1.0, "fan_in", "uniform")
lecun_normal = _fans_doc("lecun_normal", 1.0, "fan_in", "truncated_normal")
he_uniform = kaiming_uniform = _fans_doc("he_uniform", 2.0, "fan_in", "uniform")
he_normal = kaiming_normal = _fans_doc("he_normal", 2.0, "fan_in", "truncated_normal")


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A (scaled) random orthogonal matrix, reshaped to `shape` (columns along column_axis)."""

    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return jnp.zeros(shape, dtype=dt)
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        q = random.orthogonal(key, n_rows, (), dt, n_cols)
        q = jnp.reshape(q, tuple(np.delete(np.array(shape), column_axis)) + (shape[column_axis],))
        q = jnp.moveaxis(q, -1, column_axis)
        return jnp.array(scale, dt) * q

    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """The delta orthogonal initializer for 3-D, 4-D and 5-D convolution kernels."""

    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
        w = jnp.zeros(shape, dtype=dt)
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return w.at[centre].set(ortho)

    return init
