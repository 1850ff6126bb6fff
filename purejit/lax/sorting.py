"""The lax ops that order values: `sort` (and `sort_key_val`), `top_k`, `argmax` and `argmin`.

All of them order NaN after every number, as JAX does: it sorts last, is the largest value
for `top_k` and wins in `argmax`/`argmin`; ties keep their index order in `top_k`,
`argmax`/`argmin` and a stable `sort`. The comparator and
reduction regions they bind are traced once per combination of dtypes and cached.
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.ir import dtypes as irdt
from purejit.lax._lift import lift as _lift
from purejit.lax.ops import _scalar_region, canonical_axis, transpose
from purejit.runtime.array import Array
from purejit.tracing import ShapedArray, bind, bind1, trace_to_function


def _lt_eq(x, y):
    """(x < y, x == y) in a total order: NaN after every number and equal to NaN; -0 == 0."""
    lt = bind1("compare", x, y, comparison_direction="LT")
    eq = bind1("compare", x, y, comparison_direction="EQ")
    if pdt.is_inexact(x.dtype):
        x_nan = bind1("compare", x, x, comparison_direction="NE")
        y_nan = bind1("compare", y, y, comparison_direction="NE")
        lt = bind1("or", lt, bind1("and", y_nan, bind1("not", x_nan)))
        eq = bind1("or", eq, bind1("and", x_nan, y_nan))
    return lt, eq


@functools.lru_cache(maxsize=256)
def _comparator(dtypes_: tuple, num_keys: int):
    """lhs < rhs, lexicographic over the first num_keys operands (complex: real, imag)."""

    def less(*args):
        keys = []
        for k in range(num_keys):
            x, y = args[2 * k], args[2 * k + 1]
            if x.dtype.kind == "c":
                keys += [(bind1("real", x), bind1("real", y)), (bind1("imag", x), bind1("imag", y))]
            else:
                keys.append((x, y))
        lt, _ = _lt_eq(*keys[-1])
        for x, y in reversed(keys[:-1]):  # lt_k or (eq_k and rest)
            lt_k, eq_k = _lt_eq(x, y)
            lt = bind1("or", lt_k, bind1("and", eq_k, lt))
        return [lt]

    return _scalar_region(less, [d for d in dtypes_ for _ in (0, 1)], "sort")


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort along `dimension`, as jax.lax.sort.

    Args:
        operand: an array or a sequence of arrays of one shape; all are permuted together.
        dimension: the axis to sort along.
        is_stable: keep the order of equal keys.
        num_keys: sort lexicographically by the first num_keys operands. NaNs sort last.
    Returns:
        The sorted array, or a tuple of sorted arrays for a sequence operand.
    """
    single = not isinstance(operand, (tuple, list))
    xs = [_lift(x) for x in ([operand] if single else operand)]
    if not 1 <= num_keys <= len(xs):
        raise ValueError(f"lax.sort: num_keys={num_keys} must be in [1, {len(xs)}]")
    shapes = {x.shape for x in xs}
    if len(shapes) != 1:
        raise errors.PurejitTypeError(
            f"lax.sort: operands must have one shape, got {sorted(shapes)}"
            f"{errors.at(errors.user_location())}"
        )
    dim = canonical_axis(dimension, xs[0].ndim)
    region = _comparator(tuple(x.dtype for x in xs), num_keys)
    weak = tuple(x.weak_type for x in xs)
    outs = bind("sort", *xs, dimension=dim, is_stable=bool(is_stable), regions=[region], weak=weak)
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort `keys` along `dimension` and permute `values` the same way."""
    return sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)


def top_k(operand, k: int, *, axis: int = -1, is_stable: bool = True):
    """The k largest entries along `axis` and their indices (int32), largest first.

    Ties keep the lower index first; NaN counts as the largest value (XLA's TopK).
    `is_stable=False` (jax 0.11) leaves the order of equal values unspecified; purejit
    keeps them in index order, which that allows.
    """
    if not isinstance(is_stable, (bool, np.bool_)):
        raise TypeError(f"top_k: is_stable must be a bool, got {is_stable!r}")
    x = _lift(operand)
    k = operator.index(k)
    axis = canonical_axis(axis, x.ndim)
    last = x.ndim - 1
    if axis != last:
        perm = list(range(x.ndim))
        perm[axis], perm[last] = last, axis
        vals, idx = top_k(transpose(x, perm), k)
        return transpose(vals, perm), transpose(idx, perm)
    vals, idx = bind("top_k", x, k=k, weak=(x.weak_type, False))
    return vals, idx


def argmax(operand, axis: int, index_dtype):
    """Index of the largest value along `axis` (first one on ties; NaN wins)."""
    return arg_reduce(operand, axis, index_dtype, find_max=True)


def argmin(operand, axis: int, index_dtype):
    """Index of the smallest value along `axis` (first one on ties; NaN wins)."""
    return arg_reduce(operand, axis, index_dtype, find_max=False)


def arg_reduce(operand, axis: int, index_dtype, *, find_max: bool):
    x = _lift(operand)
    ax = canonical_axis(axis, x.ndim)
    name = "argmax" if find_max else "argmin"
    if x.shape[ax] == 0:
        raise ValueError(f"{name}: attempt to get {name} of an empty sequence")
    idt = pdt.canonicalize(np.dtype(index_dtype))
    idx = bind1("iota", shape=x.shape, dtype=idt, dimension=ax)
    init = irdt.lowest(x.dtype) if find_max else irdt.highest(x.dtype)
    _, out = bind(
        "reduce",
        x,
        idx,
        Array(host=init),
        Array(host=np.array(0, idt)),
        dimensions=(ax,),
        regions=[_arg_region(x.dtype, find_max, idt)],
    )
    return out


@functools.lru_cache(maxsize=256)  # (dtype, direction, index dtype)
def _arg_region(dt: np.dtype, find_max: bool, idt: np.dtype):
    """The reduction region of argmax/argmin: keep the better value, the lower index on ties,
    and NaN over any number."""

    def cmp(a, b, direction):
        return bind1("compare", a, b, comparison_direction=direction)

    def pick(av, ai, bv, bi):
        better = cmp(av, bv, "GT" if find_max else "LT")
        same = cmp(av, bv, "EQ")
        if pdt.is_inexact(dt):
            a_nan, b_nan = cmp(av, av, "NE"), cmp(bv, bv, "NE")
            better = bind1("or", better, bind1("and", a_nan, bind1("not", b_nan)))
            same = bind1("or", same, bind1("and", a_nan, b_nan))
        take_a = bind1("or", better, bind1("and", same, cmp(ai, bi, "LT")))
        return [bind1("select", take_a, av, bv), bind1("select", take_a, ai, bi)]

    avals = [ShapedArray((), np.dtype(d)) for d in (dt, idt, dt, idt)]
    return trace_to_function(lambda *a: pick(*a), avals, name="region").fn
