"""Reductions: sum, prod, max, min, any, all, mean, var, std, argmax, argmin."""

from __future__ import annotations

import functools

import numpy as np

from purejit import dtypes as pdt
from purejit.lax import ops as lax_ops
from purejit.numpy._core import (
    _lift,
    broadcast_to,
    add,
    imag,
    convert,
    multiply,
    real,
    sqrt,
    subtract,
    true_divide,
)
from purejit.numpy._core import where as where_
from purejit.numpy._shape import normalize_axes, expand_dims, reshape
from purejit.runtime.array import Array
from purejit.tracing import ShapedArray, bind, bind1, trace_to_function


def _region(fn, dtypes_):
    """Trace a scalar function into a closed region for `reduce`."""

    avals = [ShapedArray((), np.dtype(d)) for d in dtypes_]
    traced = trace_to_function(lambda *a: list(fn(*a)), avals, name="region")
    return traced.fn


def _init(kind: str, dt: np.dtype):
    if kind == "add":
        v = 0
    elif kind == "multiply":
        v = 1
    elif kind in ("maximum", "minimum"):
        big = kind == "minimum"
        if dt == np.bool_:
            v = big
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            v = info.max if big else info.min
        else:
            v = np.inf if big else -np.inf
    elif kind == "and":
        v = True if dt == np.bool_ else -1
    elif kind == "or":
        v = False if dt == np.bool_ else 0
    else:
        raise ValueError(kind)
    return np.array(v).astype(dt)


@functools.lru_cache(maxsize=None)
def _monoid(kind: str, dt: np.dtype):

    return _region(lambda a, b: [bind1(kind, a, b)], [dt, dt])


def _reduce(x, axis, keepdims: bool, kind: str, name: str, where=None, initial=None):
    axes = normalize_axes(axis, x.ndim, name)
    init = _init(kind, x.dtype)
    if where is not None:
        if kind in ("maximum", "minimum") and initial is None:
            raise ValueError(
                f"{name}: reduction operation {name} has no identity; to use a where mask, "
                "pass initial="
            )
        # masked-out elements become the reduction's identity
        x = where_(broadcast_to(convert(_lift(where), np.bool_), x.shape), x, Array(host=init))
    if initial is not None:
        init = np.array(initial).astype(x.dtype)
    if kind in ("maximum", "minimum") and initial is None:
        for ax in axes:
            if x.shape[ax] == 0:
                raise ValueError(f"{name}: zero-size array to reduction operation with no identity")

    (out,) = bind("reduce", x, Array(host=init), dimensions=axes, regions=[_monoid(kind, x.dtype)])
    if keepdims:
        out = reshape(out, [1 if i in axes else d for i, d in enumerate(x.shape)])
    return out


def _sum_dtype(dt: np.dtype) -> np.dtype:
    if dt == np.bool_:
        return pdt.default_int()
    if dt.kind == "i" and dt.itemsize < pdt.default_int().itemsize:
        return pdt.default_int()
    if dt.kind == "u" and dt.itemsize < pdt.default_int().itemsize:
        return np.dtype(np.uint64 if pdt.default_int() == np.int64 else np.uint32)
    return dt


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    x = _lift(a)
    x = convert(x, pdt.canonicalize(dtype) if dtype is not None else _sum_dtype(x.dtype))
    return _reduce(x, axis, keepdims, "add", "sum", where, initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    x = _lift(a)
    x = convert(x, pdt.canonicalize(dtype) if dtype is not None else _sum_dtype(x.dtype))
    return _reduce(x, axis, keepdims, "multiply", "prod", where, initial)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    return _reduce(_lift(a), axis, keepdims, "maximum", "max", where, initial)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    return _reduce(_lift(a), axis, keepdims, "minimum", "min", where, initial)


amax, amin = max, min


def any(a, axis=None, out=None, keepdims=False, where=None):  # noqa: A001
    return _reduce(convert(_lift(a), np.bool_), axis, keepdims, "or", "any", where)


def all(a, axis=None, out=None, keepdims=False, where=None):  # noqa: A001
    return _reduce(convert(_lift(a), np.bool_), axis, keepdims, "and", "all", where)


def _count(x, axis, where=None, keepdims=False):
    """How many elements each reduction over `axis` sees: an int, or an array with `where`."""
    if where is None:
        axes = normalize_axes(axis, x.ndim, "mean")
        return int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    w = broadcast_to(convert(_lift(where), np.bool_), x.shape)
    return sum(w, axis=axis, keepdims=keepdims, dtype=pdt.default_int())


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    x = _lift(a)
    dt = pdt.canonicalize(dtype) if dtype is not None else None
    if dt is None:
        dt = x.dtype if pdt.is_inexact(x.dtype) else pdt.default_float()
    s = sum(convert(x, dt), axis=axis, keepdims=keepdims, where=where)
    n = _count(x, axis, where, keepdims)
    if where is None:
        return true_divide(s, float(n))
    return true_divide(s, convert(n, s.dtype))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    x = _lift(a)
    if correction is not None:
        ddof = correction
    dt = x.dtype if pdt.is_inexact(x.dtype) else pdt.default_float()
    x = convert(x, dt)
    m = mean(x, axis=axis, keepdims=True, where=where)

    d = subtract(x, m)
    if d.dtype.kind == "c":
        re, im = real(d), imag(d)
        sq = add(multiply(re, re), multiply(im, im))
    else:
        sq = multiply(d, d)
    s = sum(sq, axis=axis, keepdims=keepdims, where=where)
    n = _count(x, axis, where, keepdims)
    if where is None:
        return true_divide(s, float(n - ddof))
    return true_divide(s, convert(subtract(n, ddof), s.dtype))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):

    return sqrt(var(a, axis, dtype, out, ddof, keepdims, where, correction))


def _argreduce(a, axis, keepdims, find_max, name):
    x = _lift(a)
    if axis is None:
        x = reshape(x, (-1,))
        ax = 0
    else:
        (ax,) = normalize_axes(axis, x.ndim, name)
    out = lax_ops.arg_reduce(x, ax, pdt.default_int(), find_max=find_max)
    if keepdims:
        out = expand_dims(out, ax) if axis is not None else reshape(out, [1] * _lift(a).ndim)
    return out


def argmax(a, axis=None, out=None, keepdims=False):
    return _argreduce(a, axis, keepdims, True, "argmax")


def argmin(a, axis=None, out=None, keepdims=False):
    return _argreduce(a, axis, keepdims, False, "argmin")
