"""Sets of values of two 1-D arrays: intersect1d, setdiff1d, setxor1d, union1d.

Every result is sorted and holds each value once. Each is computed by sorting: an input
sorted stably marks its first occurrences (a value differs from its predecessor), `isin`
tells which of them the other input has, and the selected values are moved to the front in
order. As in JAX, the result's length depends on the data, so under jit a static `size=` is
needed: a longer result is cut, a shorter one padded with `fill_value` (by default: the
smallest value of the result for intersect1d and setxor1d, as JAX; 0 for setdiff1d; the
smallest value for union1d, as `unique`). Outside jit the length is read from the device.
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit.numpy import _core as c
from purejit.numpy._creation import full, zeros
from purejit.numpy._reductions import any as _any
from purejit.numpy._reductions import min as _min
from purejit.numpy._setops import _concrete_count, _first_true, _static_size, isin, unique
from purejit.numpy._setops import searchsorted
from purejit.numpy._shape import concatenate, ravel
from purejit.numpy._sorting import argsort


def _flat(name: str, *xs):
    xs = [ravel(c._lift(x)) for x in xs]
    if len(xs) > 1:
        dt = c.result_type(*xs)
        xs = [c.convert(x, dt) for x in xs]
    return xs


def _firsts(x):
    """x sorted stably, the positions (in x) of the sorted values, and which sorted
    entries are the first of their value."""
    order = argsort(x, stable=True)
    s = x[order]
    n = s.shape[0]
    if n == 0:
        return s, order, c.full_like_bool(s, True)
    head = c.full_like_bool(s[:1], True)
    return s, order, concatenate([head, c.not_equal(s[1:], s[:-1])])


def _select(name: str, values, keep, size, fill_value, default_fill):
    """The `keep`-ed entries of `values` moved to the front in order: `size` of them
    (the number kept when size is None), padded with `fill_value`."""
    n = _concrete_count(name, keep) if size is None else _static_size(name, size)
    if values.shape[0] == 0:
        fill = 0 if fill_value is None else fill_value
        return full((n,), fill, values.dtype), zeros((n,), np.bool_)
    idx, valid = _first_true(keep, n)
    picked = values[idx]
    if fill_value is None:
        fill = default_fill(picked, valid)
    else:
        fill = c.convert(c._lift(fill_value), values.dtype)
    return c.where(valid, picked, fill), valid


def _smallest(picked, valid):
    # JAX's default fill: the smallest value of the result (0 when it is empty)
    if picked.shape[0] == 0:
        return c.convert(0, picked.dtype)
    big = c.where(valid, picked, _max_value(picked.dtype))
    return c.where(_any(valid), _min(big), c.convert(0, picked.dtype))


def _max_value(dt):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return True
    if pdt.is_inexact(dt):
        return np.array(np.inf, dt)
    return np.iinfo(dt).max


def _zero(picked, valid):
    return c.convert(0, picked.dtype)


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *,
                size=None, fill_value=None):  # fmt: skip
    """The sorted values both `ar1` and `ar2` hold (flattened).

    Args:
        ar1, ar2: the arrays.
        assume_unique: accepted for NumPy's signature (the result is the same either way).
        return_indices: also return where each value first appears in ar1 and in ar2.
        size: the static length of the result (needed under jit).
        fill_value: what pads a result shorter than `size` (default: its smallest value).
    Returns:
        The values, or (values, ar1_indices, ar2_indices); padded indices are out of bounds
        (len(ar1) and len(ar2)), as in JAX.
    """
    a, b = _flat("intersect1d", ar1, ar2)
    s, order, first = _firsts(a)
    keep = c.logical_and(first, isin(s, b)) if s.shape[0] else first
    vals, valid = _select("intersect1d", s, keep, size, fill_value, _smallest)
    if not return_indices:
        return vals
    n = vals.shape[0]
    idt = pdt.default_int()
    if s.shape[0] == 0 or b.shape[0] == 0:
        return vals, full((n,), a.shape[0], idt), full((n,), b.shape[0], idt)
    idx1, _ = _first_true(keep, n)
    i1 = c.convert(order[idx1], idt)
    sb, order_b, _ = _firsts(b)
    pos = c.minimum(searchsorted(sb, vals), b.shape[0] - 1)
    i2 = c.convert(order_b[pos], idt)
    return (
        vals,
        c.where(valid, i1, c.convert(a.shape[0], idt)),
        c.where(valid, i2, c.convert(b.shape[0], idt)),
    )


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
    """The sorted values of `ar1` that `ar2` does not hold (flattened).

    Args:
        ar1, ar2: the arrays.
        assume_unique: accepted for NumPy's signature (the result is the same either way).
        size: the static length of the result (needed under jit).
        fill_value: what pads a result shorter than `size` (default 0).
    Returns:
        The values, in ar1's dtype.
    """
    (a,) = _flat("setdiff1d", ar1)
    (b,) = _flat("setdiff1d", ar2)
    s, _, first = _firsts(a)
    if s.shape[0] and b.shape[0]:
        dt = c.result_type(s, b)
        keep = c.logical_and(first, c.logical_not(isin(c.convert(s, dt), c.convert(b, dt))))
    else:
        keep = first
    return _select("setdiff1d", s, keep, size, fill_value, _zero)[0]


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
    """The sorted values exactly one of `ar1` and `ar2` holds (flattened).

    Args:
        ar1, ar2: the arrays.
        assume_unique: accepted for NumPy's signature (the result is the same either way).
        size: the static length of the result (needed under jit).
        fill_value: what pads a result shorter than `size` (default: its smallest value).
    Returns:
        The values.
    """
    a, b = _flat("setxor1d", ar1, ar2)
    sa, _, fa = _firsts(a)
    sb, _, fb = _firsts(b)
    ka = c.logical_and(fa, c.logical_not(isin(sa, b))) if sa.shape[0] and b.shape[0] else fa
    kb = c.logical_and(fb, c.logical_not(isin(sb, a))) if sb.shape[0] and a.shape[0] else fb
    values, keep = concatenate([sa, sb]), concatenate([ka, kb])
    if values.shape[0]:
        # the kept values in ascending order (the others moved past them)
        big = _max_value(values.dtype)
        order = argsort(c.where(keep, values, big), stable=True)
        values, keep = values[order], keep[order]
    return _select("setxor1d", values, keep, size, fill_value, _smallest)[0]


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted values either `ar1` or `ar2` holds (flattened): `unique` of both.

    Args:
        ar1, ar2: the arrays.
        size: the static length of the result (needed under jit).
        fill_value: what pads a result shorter than `size` (default: the smallest value).
    Returns:
        The values.
    """
    a, b = _flat("union1d", ar1, ar2)
    return unique(concatenate([a, b]), size=size, fill_value=fill_value)


__all__ = ["intersect1d", "setdiff1d", "setxor1d", "union1d"]
