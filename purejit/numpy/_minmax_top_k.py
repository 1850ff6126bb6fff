"""jax 0.11's `jax.numpy.minmax` (the minimum and the maximum in one call) and
`jax.numpy.top_k` (the k largest or smallest entries along an axis), computed as JAX computes
them: minmax is `min` then `max` with the same arguments; top_k is `lax.top_k` of the array
itself ('largest') or of its order-reversing image ('smallest': `not` for booleans, -(x + 1)
for unsigned integers, -x otherwise), mapped back."""

from __future__ import annotations

import numpy as np

from purejit.lax import ops as lax
from purejit.lax._lift import lift as _lift
from purejit.lax.elementwise import add, bitwise_not, neg
from purejit.lax.sorting import top_k as lax_top_k
from purejit.numpy._reductions import max as _max
from purejit.numpy._reductions import min as _min


def minmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """`(min(a), max(a))` along `axis`, as jax.numpy.minmax. A tuple `initial` gives the
    minimum's initial value first, then the maximum's."""
    init_min, init_max = initial if isinstance(initial, tuple) else (initial, initial)
    kw = {"axis": axis, "out": out, "keepdims": keepdims, "where": where}
    return _min(a, initial=init_min, **kw), _max(a, initial=init_max, **kw)


def top_k(a, k, /, *, axis=-1, mode="largest", sorted=True):  # noqa: A002
    """The k largest (mode='largest') or smallest ('smallest') entries of `a` along `axis`
    and their int32 indices, as jax.numpy.top_k. Results are always sorted (largest or
    smallest first, ties in index order), which `sorted=False` also allows."""
    arr = _lift(a)
    if arr.dtype.kind == "c":
        raise ValueError("top_k is not compatible with complex inputs.")
    if mode not in ("largest", "smallest"):
        raise ValueError(f"mode must be 'largest' or 'smallest', got {mode!r}")
    axis = lax.canonical_axis(axis, arr.ndim, "top_k")
    if mode == "largest":
        return lax_top_k(arr, k, axis=axis)
    if arr.dtype == np.bool_:
        vals, idx = lax_top_k(bitwise_not(arr), k, axis=axis)
        return bitwise_not(vals), idx
    if arr.dtype.kind == "u":
        one = np.ones((), arr.dtype)
        vals, idx = lax_top_k(neg(add(arr, one)), k, axis=axis)
        return neg(add(vals, one)), idx
    vals, idx = lax_top_k(neg(arr), k, axis=axis)
    return neg(vals), idx
