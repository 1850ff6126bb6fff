"""Reductions: sum, prod, max, min, any, all, mean, var, std, argmax, argmin."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.ir import dtypes as irdt
from purejit.lax.sorting import arg_reduce
from purejit.numpy._arithmetic import imag, real
from purejit.numpy._core import (
    _lift,
    broadcast_to,
    add,
    convert,
    greater,
    multiply,
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
        # float8 types without infinities (e4m3fn, the fnuz ones) start at finite extremes
        v = irdt.highest(dt) if kind == "minimum" else irdt.lowest(dt)
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
    if irdt.is_signed(dt) and irdt.bit_width(dt) < pdt.default_int().itemsize * 8:
        return pdt.default_int()
    if irdt.is_unsigned(dt) and irdt.bit_width(dt) < pdt.default_int().itemsize * 8:
        return np.dtype(np.uint64 if pdt.default_int() == np.int64 else np.uint32)
    return dt


_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _upcast_half(dt: np.dtype) -> np.dtype:
    """float16 and bfloat16 accumulate in float32 (jax.numpy's `_upcast_f16`): a 10-bit or
    7-bit mantissa loses every addend below its last bit once the running sum is large."""
    return np.dtype(np.float32) if dt in _HALF else dt


def _accumulating(a, dtype, kind: str, name: str, axis, keepdims, where, initial):
    """sum / prod as jax.numpy computes them: the result dtype is `dtype` or the input's
    (small integers promoted); with no `dtype`, half floats accumulate in float32 and the
    result is cast back; an explicit `dtype` is the accumulation dtype itself."""
    x = _lift(a)
    out_dt = pdt.canonicalize(dtype) if dtype is not None else _sum_dtype(x.dtype)
    acc = _upcast_half(out_dt) if dtype is None else out_dt
    out = _reduce(convert(x, acc), axis, keepdims, kind, name, where, initial)
    return convert(out, out_dt)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    return _accumulating(a, dtype, "add", "sum", axis, keepdims, where, initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return _accumulating(a, dtype, "multiply", "prod", axis, keepdims, where, initial)


def reduce_sum_exact(x, axes):
    """A sum over `axes` in `x`'s own dtype, never upcast (what jax.numpy's einsum and
    lax.reduce_sum do); booleans reduce with `or`."""
    x = _lift(x)
    return _reduce(x, tuple(axes), False, "or" if x.dtype == np.bool_ else "add", "sum")


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    return _reduce(_lift(a), axis, keepdims, "maximum", "max", where, initial)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    return _reduce(_lift(a), axis, keepdims, "minimum", "min", where, initial)


amax, amin = max, min


def any(a, axis=None, out=None, keepdims=False, where=None):  # noqa: A001
    return _reduce(convert(_lift(a), np.bool_), axis, keepdims, "or", "any", where)


def all(a, axis=None, out=None, keepdims=False, where=None):  # noqa: A001
    return _reduce(convert(_lift(a), np.bool_), axis, keepdims, "and", "all", where)


def _count(x, axis, where, keepdims, dt):
    """How many elements each reduction over `axis` sees, in `dt` (as jax.numpy counts: a
    constant, or the sum of the mask in `dt`)."""
    if where is None:
        axes = normalize_axes(axis, x.ndim, "mean")
        n = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
        with np.errstate(over="ignore"):
            return Array(host=np.asarray(n).astype(dt))
    w = broadcast_to(convert(_lift(where), np.bool_), x.shape)
    return sum(w, axis=axis, keepdims=keepdims, dtype=dt)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    x = _lift(a)
    if dtype is None:
        out_dt = x.dtype if pdt.is_inexact(x.dtype) else pdt.default_float()
        acc = _upcast_half(out_dt)
    else:
        out_dt = acc = pdt.canonicalize(dtype)
    s = sum(x, axis=axis, dtype=acc, keepdims=keepdims, where=where)
    return convert(true_divide(s, _count(x, axis, where, keepdims, acc)), out_dt)


def _var_dtypes(in_dt: np.dtype, dtype) -> tuple[np.dtype, np.dtype]:
    """(accumulation dtype, result dtype) of var/std: half floats always accumulate in float32,
    an explicit `dtype` included (jax.numpy's `_var_promote_types`)."""
    if dtype is not None:
        out_dt = pdt.canonicalize(dtype)
        if out_dt.kind != "c" and in_dt.kind == "c":
            raise ValueError(
                f"var: a real dtype={out_dt} for the variance of {in_dt} values is not "
                f"supported (as in jax.numpy){errors.at(errors.user_location())}; leave "
                "dtype=None to get the real variance of the complex values"
            )
        return _upcast_half(out_dt), out_dt
    if not pdt.is_inexact(in_dt):
        return pdt.default_float(), pdt.default_float()
    real_dt = np.zeros((), in_dt).real.dtype
    return _upcast_half(in_dt), real_dt


def _abs2(d):
    """|d|^2, real for complex `d`."""
    if d.dtype.kind == "c":
        re, im = real(d), imag(d)
        return add(multiply(re, re), multiply(im, im))
    return multiply(d, d)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    x = _lift(a)
    if correction is not None:
        ddof = correction
    acc, out_dt = _var_dtypes(x.dtype, dtype)
    x = convert(x, acc)
    m = mean(x, axis=axis, dtype=acc, keepdims=True, where=where)
    sq = _abs2(subtract(x, m))
    n = subtract(_count(x, axis, where, keepdims, sq.dtype), convert(ddof, sq.dtype))
    s = sum(sq, axis=axis, dtype=sq.dtype, keepdims=keepdims, where=where)
    res = convert(true_divide(s, n), out_dt)
    # no degrees of freedom left: NaN, as jax.numpy (not the inf of s / 0)
    return where_(greater(n, convert(0, n.dtype)), res, convert(np.nan, out_dt))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):

    return sqrt(var(a, axis, dtype, out, ddof, keepdims, where, correction))


def _argreduce(a, axis, keepdims, find_max, name):
    x = _lift(a)
    if axis is None:
        x = reshape(x, (-1,))
        ax = 0
    else:
        (ax,) = normalize_axes(axis, x.ndim, name)
    out = arg_reduce(x, ax, pdt.default_int(), find_max=find_max)
    if keepdims:
        out = expand_dims(out, ax) if axis is not None else reshape(out, [1] * _lift(a).ndim)
    return out


def argmax(a, axis=None, out=None, keepdims=False):
    return _argreduce(a, axis, keepdims, True, "argmax")


def argmin(a, axis=None, out=None, keepdims=False):
    return _argreduce(a, axis, keepdims, False, "argmin")
