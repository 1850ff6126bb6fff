"""Reductions: sum, prod, max, min, any, all, mean, var, std, argmax, argmin."""

from __future__ import annotations

import functools

import numpy as np

from purejit import dtypes as pdt
from purejit.core import ShapedArray, bind
from purejit.numpy._core import _lift, convert, true_divide
from purejit.numpy._shape import _axes, expand_dims, reshape


def _region(fn, dtypes_):
    """Trace a scalar function into a closed region for `reduce`."""
    from purejit.tracing import trace_to_function

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
    from purejit.core import bind1

    return _region(lambda a, b: [bind1(kind, a, b)], [dt, dt])


def _reduce(x, axis, keepdims: bool, kind: str, name: str, where=None, initial=None):
    if where is not None:
        raise NotImplementedError(f"{name}(where=...) is not supported yet")
    axes = _axes(axis, x.ndim, name)
    init = _init(kind, x.dtype)
    if initial is not None:
        init = np.array(initial).astype(x.dtype)
    if kind in ("maximum", "minimum") and initial is None:
        for ax in axes:
            if x.shape[ax] == 0:
                raise ValueError(f"{name}: zero-size array to reduction operation with no identity")
    from purejit.array import Array

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


def _count(x, axis) -> int:
    axes = _axes(axis, x.ndim, "mean")
    return int(np.prod([x.shape[i] for i in axes], dtype=np.int64))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    x = _lift(a)
    dt = pdt.canonicalize(dtype) if dtype is not None else None
    if dt is None:
        dt = x.dtype if pdt.is_inexact(x.dtype) else pdt.default_float()
    s = sum(convert(x, dt), axis=axis, keepdims=keepdims, where=where)
    return true_divide(s, float(_count(x, axis)))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    x = _lift(a)
    if correction is not None:
        ddof = correction
    dt = x.dtype if pdt.is_inexact(x.dtype) else pdt.default_float()
    x = convert(x, dt)
    m = mean(x, axis=axis, keepdims=True)
    from purejit.numpy._core import multiply, subtract

    d = subtract(x, m)
    s = sum(multiply(d, d), axis=axis, keepdims=keepdims)
    n = _count(x, axis) - ddof
    return true_divide(s, float(n))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    from purejit.numpy._core import sqrt

    return sqrt(var(a, axis, dtype, out, ddof, keepdims, where, correction))


@functools.lru_cache(maxsize=None)
def _arg_region(dt, find_max: bool, idt: np.dtype):
    from purejit.numpy import _core as c

    def pick(av, ai, bv, bi):
        if pdt.is_inexact(dt):
            a_nan, b_nan = c.isnan(av), c.isnan(bv)
            better = c.greater(av, bv) if find_max else c.less(av, bv)
            better = c.logical_or(better, c.logical_and(a_nan, c.logical_not(b_nan)))
            same = c.logical_or(c.equal(av, bv), c.logical_and(a_nan, b_nan))
        else:
            better = c.greater(av, bv) if find_max else c.less(av, bv)
            same = c.equal(av, bv)
        take_a = c.logical_or(better, c.logical_and(same, c.less(ai, bi)))
        return [c.where(take_a, av, bv), c.where(take_a, ai, bi)]

    return _region(pick, [dt, idt, dt, idt])


def _argreduce(a, axis, keepdims, find_max, name):
    from purejit.array import Array
    from purejit.core import bind1

    x = _lift(a)
    if axis is None:
        x = reshape(x, (-1,))
        ax = 0
    else:
        (ax,) = _axes(axis, x.ndim, name)
    if x.shape[ax] == 0:
        raise ValueError(f"{name}: attempt to get {name} of an empty sequence")
    idt = pdt.default_int()
    idx = bind1("iota", shape=x.shape, dtype=idt, dimension=ax)
    init_v = _init("maximum" if find_max else "minimum", x.dtype)
    if pdt.is_inexact(x.dtype):
        init_v = np.array(-np.inf if find_max else np.inf).astype(x.dtype)
    _, out = bind(
        "reduce",
        x,
        idx,
        Array(host=init_v),
        Array(host=np.array(0, idt)),
        dimensions=(ax,),
        regions=[_arg_region(x.dtype, find_max, idt)],
    )
    if keepdims:
        out = expand_dims(out, ax) if axis is not None else reshape(out, [1] * _lift(a).ndim)
    return out


def argmax(a, axis=None, out=None, keepdims=False):
    return _argreduce(a, axis, keepdims, True, "argmax")


def argmin(a, axis=None, out=None, keepdims=False):
    return _argreduce(a, axis, keepdims, False, "argmin")
