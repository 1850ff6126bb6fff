"""Lifting, conversion and broadcasting: what every lax and numpy function starts with.

`purejit.numpy` builds on these; they know nothing of NumPy's API.
"""

from __future__ import annotations

import functools

import numpy as np

from purejit import errors
from purejit.ir.ops.elementwise import convert_array
from purejit.runtime.array import Array, as_array
from purejit.tracing import ConcreteArray, Tracer, bind1


def lift(x):
    """A Tracer or Array for any array-like (Python scalars become weak-typed arrays).

    A list or tuple of array-likes is stacked along a new leading axis."""
    if isinstance(x, (Tracer, ConcreteArray)):
        return x
    if isinstance(x, (list, tuple)):
        items = [lift(v) for v in x]
        if not items:
            return as_array(np.zeros((0,)))
        rows = [bind1("reshape", v, shape=(1, *v.shape)) for v in items]
        return rows[0] if len(rows) == 1 else bind1("concatenate", *rows, dimension=0)
    return as_array(x)


def convert(x, dtype, weak: bool = False):
    """Convert to `dtype` (strong unless `weak`); a no-op when nothing changes."""
    dtype = np.dtype(dtype)
    x = lift(x)
    if x.dtype == dtype and x.weak_type == weak:
        return x
    if type(x) is Array and x._host is not None and x.size <= 4096:
        # a host constant (often a Python scalar): convert now, nothing to trace
        return Array(host=np.asarray(convert_array(x.host, dtype)), weak_type=weak)
    return bind1("convert", x, dtype=dtype, weak=weak)


@functools.lru_cache(maxsize=65536)
def _broadcast_shape(shapes) -> tuple | None:
    """The broadcast shape of `shapes` (a tuple of shapes), or None when they do not."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def broadcast_shapes_named(name: str, *shapes):
    """The broadcast shape of `shapes` (NumPy's rules), or an error naming the op `name`."""
    out = _broadcast_shape(shapes)
    if out is not None:
        return out
    loc = errors.user_location()
    desc = " vs ".join(str(list(s)) for s in shapes)
    raise errors.PurejitTypeError(
        f"{name}: shapes {desc} cannot broadcast{errors.at(loc)}; align them with "
        "reshape / expand_dims or fix the operand shapes."
    )


def broadcast_to(x, shape):
    """`x` broadcast to `shape` (NumPy's rules)."""
    x = lift(x)
    shape = tuple(int(d) for d in shape)
    if x.shape == shape:
        return x
    if len(shape) < x.ndim or broadcast_shapes_named("broadcast_to", x.shape, shape) != shape:
        loc = errors.user_location()
        raise errors.PurejitTypeError(
            f"broadcast_to: cannot broadcast {list(x.shape)} to {list(shape)}{errors.at(loc)}"
        )
    dims = tuple(range(len(shape) - x.ndim, len(shape)))
    return bind1("broadcast_in_dim", x, shape=shape, broadcast_dimensions=dims)


def broadcast_arrays_named(name: str, *arrs):
    """`arrs` broadcast to their common shape; errors name the op `name`."""
    shapes = tuple(a.shape for a in arrs)
    if all(s == shapes[0] for s in shapes):
        return list(arrs)
    shape = broadcast_shapes_named(name, *shapes)
    return [broadcast_to(a, shape) for a in arrs]
