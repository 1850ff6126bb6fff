"""Everyday utilities with JAX's names: `block_until_ready`, `device_get`, `eval_shape`,
`ShapeDtypeStruct`, `typeof` and `make_jaxpr` (purejit's IR seen through JAX's jaxpr API)."""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from purejit.api import jit
from purejit.compiler.stages import Jaxpr
from purejit.extend.jaxpr import closed_jaxpr
from purejit.runtime import Array
from purejit.tracing import ConcreteArray, ShapedArray, Tracer, aval_of
from purejit.tree_util import tree_flatten, tree_map, tree_unflatten


class ShapeDtypeStruct:
    """A shape and a dtype standing for an array: what `eval_shape` returns, and what
    `jit(f).lower`, `trace`, `eval_shape` and `pure_callback` accept in place of data."""

    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __init__(self, shape: Sequence[int], dtype, *, sharding=None, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def _key(self):
        return (self.shape, self.dtype, self.sharding, self.weak_type)

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def _is_array(x) -> bool:
    return isinstance(x, (ConcreteArray, Tracer)) or hasattr(x, "block_until_ready")


def block_until_ready(x):
    """Wait until every array in the pytree `x` is computed; returns `x`."""
    tree_map(lambda a: a.block_until_ready() if hasattr(a, "block_until_ready") else a, x)
    return x


def device_get(x):
    """The pytree `x` with every device array copied to the host as a NumPy array."""

    def get(a):
        if type(a) is Array or (hasattr(a, "__array__") and hasattr(a, "devices")):
            return np.asarray(a)
        return a

    return tree_map(get, x)


def typeof(x) -> ShapedArray:
    """The abstract value (shape, dtype, weak type) of an array, tracer or scalar."""
    return aval_of(x)


def _struct(aval: ShapedArray) -> ShapeDtypeStruct:
    return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


def eval_shape(fun: Callable, *args, **kwargs):
    """The shapes and dtypes `fun(*args, **kwargs)` returns, as `ShapeDtypeStruct`s, found
    by tracing without compiling or running. Arguments may be arrays or shape specs.

    As in JAX, a `ShapeDtypeStruct` that `fun` returns comes back as it is (lineax calls
    `eval_shape(lambda: structs)` to normalise a structure)."""
    held = {}

    def arrays_only(*a, **k):
        leaves, held["tree"] = tree_flatten(fun(*a, **k))
        held["specs"] = [x if isinstance(x, ShapeDtypeStruct) else None for x in leaves]
        return [x for x in leaves if not isinstance(x, ShapeDtypeStruct)]

    out = iter(jit(arrays_only).eval_shape(*args, **kwargs))
    leaves = [_struct(next(out)) if s is None else s for s in held["specs"]]
    return tree_unflatten(held["tree"], leaves)


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (), return_shape: bool = False):
    """A function that traces `fun` and returns its program, as `jax.make_jaxpr`: a
    `ClosedJaxpr` (`purejit.extend.jaxpr`) viewing purejit's IR through JAX's jaxpr API,
    whose `str()` is the IR text; with `return_shape` also the outputs' `ShapeDtypeStruct`s."""
    jitted = jit(fun, static_argnums=static_argnums)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        staged = jitted.trace(*args, **kwargs)
        traced: Jaxpr = staged.jaxpr
        captures = staged._trace()[0].captures  # closed-over tracers: the jaxpr's consts
        jaxpr = closed_jaxpr(
            traced.fn, traced.in_avals, traced.out_avals, traced.out_tree, captures
        )
        if return_shape:
            shapes = jaxpr.out_tree.unflatten([_struct(a) for a in jaxpr.out_avals])
            return jaxpr, shapes
        return jaxpr

    return make


__all__ = [
    "ShapeDtypeStruct",
    "block_until_ready",
    "device_get",
    "eval_shape",
    "make_jaxpr",
    "typeof",
]
