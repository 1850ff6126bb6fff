"""`jax.numpy` functions that JAX libraries apply to typed PRNG key arrays.

JAX's key arrays have an extended dtype that `stack` and `concatenate` keep (optax stacks
the leaves of a tree of keys) and `array_equal` compares (chex's tree asserts). purejit's
typed key is a `PRNGKeyArray` over uint32 data `(*shape, 2)`; joining keys joins their
data along the same key axis and wraps the result. Mixing keys with other arrays raises, as
in JAX.
"""

from __future__ import annotations

import functools
import operator

from purejit import numpy as pnp
from purejit.random._keys import PRNGKeyArray


def _key_axis(axis, ndim: int, name: str) -> int:
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"{name}: axis {a} is out of bounds for key arrays of rank {ndim - 1}")
    return a % ndim  # counted on the key dimensions, before the data's trailing 2


def _join(name: str, fn, rank_change: int):
    @functools.wraps(fn)
    def joined(arrays, axis=0, *args, **kwargs):
        arrays = list(arrays)
        keys = [isinstance(a, PRNGKeyArray) for a in arrays]
        if not any(keys):
            return fn(arrays, axis, *args, **kwargs)
        if not all(keys):
            raise TypeError(f"{name}: cannot mix typed PRNG key arrays with other arrays")
        if args or kwargs:
            raise NotImplementedError(f"{name} of typed key arrays takes only arrays and axis")
        if axis is None:
            raise NotImplementedError(f"{name}(axis=None) of typed key arrays")
        ax = _key_axis(axis, arrays[0].ndim + rank_change, name)
        return PRNGKeyArray(fn([a._data for a in arrays], ax))

    return joined


def _array_equal(a1, a2, equal_nan: bool = False):
    """`jnp.array_equal`, which JAX also answers for two typed key arrays (their data)."""
    if isinstance(a1, PRNGKeyArray) and isinstance(a2, PRNGKeyArray):
        return pnp.array_equal(a1._data, a2._data)
    if isinstance(a1, PRNGKeyArray) or isinstance(a2, PRNGKeyArray):
        return pnp.asarray(False)
    return pnp.array_equal(a1, a2, equal_nan=equal_nan)


def _where(condition, x=None, y=None, **kwargs):
    """`jnp.where`, which JAX also applies to two typed key arrays (optax's MultiSteps picks
    between old and new optimizer states that hold keys): a select on their data."""
    kx, ky = isinstance(x, PRNGKeyArray), isinstance(y, PRNGKeyArray)
    if not (kx or ky):
        return pnp.where(condition, x, y, **kwargs)
    if not (kx and ky):
        raise TypeError("where: cannot mix a typed PRNG key array with another array")
    if kwargs:
        raise NotImplementedError(f"where of typed key arrays takes no {sorted(kwargs)}")
    cond = pnp.expand_dims(pnp.asarray(condition), -1)  # one choice per key, for both words
    return PRNGKeyArray(pnp.where(cond, x._data, y._data))


def _astype(x, dtype, copy: bool = False, device=None):
    """`jnp.astype`, which keeps a typed key array cast to its own key dtype (JAX raises for
    any other dtype, as here)."""
    if not isinstance(x, PRNGKeyArray):
        return pnp.astype(x, dtype, copy=copy, device=device)
    if dtype == x.dtype:
        return x
    raise TypeError(
        f"astype: a typed PRNG key array ({x.dtype}) cannot be cast to {dtype}; use "
        "jax.random.key_data(key) for its uint32 data"
    )


NUMPY = {
    "where": functools.wraps(pnp.where)(_where),
    "astype": functools.wraps(pnp.astype)(_astype),
    "array_equal": functools.wraps(pnp.array_equal)(_array_equal),
    "stack": _join("stack", pnp.stack, 1),
    "concatenate": _join("concatenate", pnp.concatenate, 0),
}
