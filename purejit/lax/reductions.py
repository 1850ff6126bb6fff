"""Monoid reductions over static axes (`reduce_sum`, `reduce_max`, ...) and the approximate
top-k of `jax.lax.approx_max_k` / `approx_min_k`, all built on the IR's `reduce` and `sort`.

Each `reduce_*` is one `reduce` op whose region is the monoid's binary op, so `grad`, `vmap`
and the passes see exactly what `purejit.numpy.sum` and friends produce. As in jax.lax, the
axes are non-negative and distinct, nothing is promoted, and `reduce_sum` / `reduce_prod`
refuse booleans while `reduce_and` / `reduce_or` / `reduce_xor` take only bool or integers.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import lift as _lift
from purejit.lax.ops import _monoid_region, broadcasted_iota, reduction_identity, slice
from purejit.lax.sorting import sort, top_k
from purejit.runtime.array import Array
from purejit.tracing import bind


def _where() -> str:
    return errors.at(errors.user_location())


def _axes(name: str, x, axes: Sequence[int]) -> tuple[int, ...]:
    try:
        out = tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(f"lax.{name}: axes must be a sequence of ints, got {axes!r}{_where()}")
    if any(not 0 <= a < x.ndim for a in out):
        raise ValueError(
            f"reduction axes {out} contains out-of-bounds indices for {x.aval}{_where()}"
        )
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in 'axes' of reduction: {out}{_where()}")
    return out


def _monoid_reduce(kind: str, name: str, operand, axes):
    x = _lift(operand)
    dims = _axes(name, x, axes)
    dt = x.dtype
    if kind in ("add", "multiply") and not (dt.kind in "iuc" or pdt.is_inexact(dt)):
        raise TypeError(
            f"{name} does not accept dtype {dt.name}. Accepted dtypes are subtypes of "
            f"number{_where()}"
        )
    if kind in ("and", "or", "xor") and dt != np.bool_ and dt.kind not in "iu":
        raise TypeError(
            f"logical reduction requires operand dtype bool or int, got {dt.name}{_where()}"
        )
    if kind in ("maximum", "minimum") and dt.kind == "c":
        raise TypeError(f"{name} does not accept complex dtype {dt.name}{_where()}")
    if not dims:
        return x
    init = Array(host=reduction_identity(kind, dt))
    (out,) = bind("reduce", x, init, dimensions=dims, regions=[_monoid_region(kind, dt)])
    return out


def reduce_sum(operand, axes: Sequence[int], *, out_sharding=None):
    """Sum of `operand` over `axes` (non-negative, distinct), as `jax.lax.reduce_sum`.

    Args:
        operand: a numeric array (not bool).
        axes: the dimensions to reduce.
        out_sharding: must be None (purejit has no sharding in types).
    Returns:
        The sum, of `operand`'s dtype, with `axes` removed.
    """
    if out_sharding is not None:
        raise NotImplementedError(
            "lax.reduce_sum: out_sharding= needs JAX's explicit sharding (sharding in types), "
            "which purejit does not have; place the result with jit's out_shardings instead"
        )
    return _monoid_reduce("add", "reduce_sum", operand, axes)


def reduce_prod(operand, axes: Sequence[int]):
    """Product over `axes`, as `jax.lax.reduce_prod`."""
    return _monoid_reduce("multiply", "reduce_prod", operand, axes)


def reduce_max(operand, axes: Sequence[int]):
    """Maximum over `axes` (NaN propagates), as `jax.lax.reduce_max`."""
    return _monoid_reduce("maximum", "reduce_max", operand, axes)


def reduce_min(operand, axes: Sequence[int]):
    """Minimum over `axes` (NaN propagates), as `jax.lax.reduce_min`."""
    return _monoid_reduce("minimum", "reduce_min", operand, axes)


def reduce_and(operand, axes: Sequence[int]):
    """Bitwise (or logical, for bool) AND over `axes`, as `jax.lax.reduce_and`."""
    return _monoid_reduce("and", "reduce_and", operand, axes)


def reduce_or(operand, axes: Sequence[int]):
    """Bitwise (or logical, for bool) OR over `axes`, as `jax.lax.reduce_or`."""
    return _monoid_reduce("or", "reduce_or", operand, axes)


def reduce_xor(operand, axes: Sequence[int]):
    """Bitwise (or logical, for bool) XOR over `axes`, as `jax.lax.reduce_xor`."""
    return _monoid_reduce("xor", "reduce_xor", operand, axes)


# ---- approximate top-k ------------------------------------------------------------------------


def _approx_k(name, operand, k, reduction_dimension, recall_target, override, aggregate, is_max):
    x = _lift(operand)
    if x.ndim == 0:
        raise ValueError(f"lax.{name}: operand must have rank >= 1, got a scalar{_where()}")
    dim = operator.index(reduction_dimension)
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(
            f"lax.{name}: reduction_dimension {dim} is out of range for {x.aval}{_where()}"
        )
    dim %= x.ndim
    k = operator.index(k)
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if k > x.shape[dim]:
        raise ValueError(
            f"k must be smaller than the size of reduction_dim {x.shape[dim]}, got {k}"
        )
    if not 0 < float(recall_target) <= 1:
        raise ValueError(f"recall_target must be in (0, 1], got {recall_target}")
    if override != -1 and override < x.shape[dim]:
        raise ValueError(
            f"reduction_input_size_override {override} must be -1 or at least the size of the "
            f"reduction dimension {x.shape[dim]}{_where()}"
        )
    # Off TPU XLA computes the exact top-k (the recall target is met with recall 1); without
    # aggregation it returns the whole reduction dimension, sorted, as the k candidates' pool.
    keep = k if aggregate else x.shape[dim]
    if is_max:
        return top_k(x, keep, axis=dim)
    iota = broadcasted_iota(np.int32, x.shape, dim)
    vals, idx = sort((x, iota), dimension=dim, num_keys=1)
    if keep != x.shape[dim]:
        lim = tuple(keep if d == dim else n for d, n in enumerate(x.shape))
        vals, idx = slice(vals, (0,) * x.ndim, lim), slice(idx, (0,) * x.ndim, lim)
    return vals, idx


def approx_max_k(
    operand,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
):
    """The `k` largest values along `reduction_dimension` and their int32 indices, largest
    first, as `jax.lax.approx_max_k` gives them on CPU and GPU (where it is exact)."""
    return _approx_k("approx_max_k", operand, k, reduction_dimension, recall_target,
                     reduction_input_size_override, aggregate_to_topk, True)  # fmt: skip


def approx_min_k(
    operand,
    k: int,
    reduction_dimension: int = -1,
    recall_target: float = 0.95,
    reduction_input_size_override: int = -1,
    aggregate_to_topk: bool = True,
):
    """The `k` smallest values along `reduction_dimension` and their int32 indices, smallest
    first, as `jax.lax.approx_min_k` gives them on CPU and GPU (where it is exact)."""
    return _approx_k("approx_min_k", operand, k, reduction_dimension, recall_target,
                     reduction_input_size_override, aggregate_to_topk, False)  # fmt: skip
