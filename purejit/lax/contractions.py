"""jax.lax's contractions beyond `dot_general`, each composed from `dot_general` and masks:

    batch_matmul, ragged_dot, ragged_dot_general, scaled_dot
    DotDimensionNumbers, RaggedDotDimensionNumbers

A ragged dot expands the ragged operand into one masked copy per group (a leading axis of
size g) and contracts that axis with the right-hand side's group axis: the dense form JAX
uses off TPU, so results agree to rounding and `grad` / `vmap` follow from `dot_general`'s
rules. It costs g times the dense work, as JAX's does on CPU and GPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.lax.elementwise import bitwise_and, le, lt, mul
from purejit.lax.ops import (
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    cumsum,
    dot_general,
    full,
    reshape,
    select,
    slice,
)

DotDimensionNumbers = tuple[
    tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]
]


def _where() -> str:
    return errors.at(errors.user_location())


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over matching leading batch dimensions, as `jax.lax.batch_matmul`."""
    a, b = _lift(lhs), _lift(rhs)
    if min(a.ndim, b.ndim) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {a.ndim}, {b.ndim}")
    if a.ndim != b.ndim:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {a.ndim}, {b.ndim}")
    batch = tuple(range(a.ndim - 2))
    return dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), (batch, batch)), precision)


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """The dot dimension numbers of a ragged dot, its lhs ragged dimension and its rhs group
    dimension (as `jax.lax.RaggedDotDimensionNumbers`)."""

    dot_dimension_numbers: DotDimensionNumbers
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        dn = tuple(tuple(tuple(int(d) for d in s) for s in t) for t in dot_dimension_numbers)
        object.__setattr__(self, "dot_dimension_numbers", dn)
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


_BASIC = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])


def _remaining(rank: int, *used) -> list[int]:
    taken = {d for u in used for d in u}
    return [d for d in range(rank) if d not in taken]


def _expand(x, dim: int, group_sizes, prefix: list[int]):
    """`x` copied once per group along a new leading axis, entries of `dim` outside the
    group's [start, end) zeroed; `group_sizes` is [*x.shape[prefix], g] or [g]."""
    gs = _lift(group_sizes)
    g = gs.shape[-1]
    if gs.ndim not in (1, len(prefix) + 1):
        raise ValueError(
            f"ragged_dot_general: group_sizes {gs.aval} must be [g] or have the lhs dims "
            f"{[x.shape[p] for p in prefix]} before g{_where()}"
        )
    ends = cumsum(gs, axis=gs.ndim - 1)
    first = slice(ends, (0,) * gs.ndim, (*gs.shape[:-1], g - 1)) if g > 1 else None
    zero = full((*gs.shape[:-1], 1), np.zeros((), gs.dtype))
    starts = zero if first is None else concatenate([zero, first], gs.ndim - 1)
    shape = (g, *x.shape)
    dims = (0,) if gs.ndim == 1 else (*(p + 1 for p in prefix), 0)
    iota = broadcasted_iota(gs.dtype, shape, dim + 1)
    lo, hi = broadcast_in_dim(starts, shape, dims), broadcast_in_dim(ends, shape, dims)
    mask = bitwise_and(le(lo, iota), lt(iota, hi))
    wide = broadcast_in_dim(x, shape, tuple(range(1, x.ndim + 1)))
    return select(mask, wide, full(shape, np.zeros((), x.dtype)))


def ragged_dot_general(
    lhs,
    rhs,
    group_sizes,
    ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
    out_sharding=None,
):
    """A dot_general whose lhs ragged dimension is split into groups of `group_sizes`
    (as `jax.lax.ragged_dot_general`): ragged along a non-contracting dim, each group meets
    its own rhs slice along the rhs group dim; along a contracting dim, the result gains a
    leading group axis; along a batch dim, it is a plain dot_general."""
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    if out_sharding is not None:
        raise NotImplementedError(
            "ragged_dot_general: out_sharding= needs JAX's explicit sharding, which purejit "
            "does not have; use jit's out_shardings"
        )
    a, b = _lift(lhs), _lift(rhs)
    rdn = ragged_dot_dimension_numbers
    if len(rdn.lhs_ragged_dimensions) != 1:
        raise ValueError(
            f"ragged_dot_general: exactly one lhs ragged dimension, got "
            f"{rdn.lhs_ragged_dimensions}{_where()}"
        )
    ragged = rdn.lhs_ragged_dimensions[0]
    (lc, rc), (lb, rb) = (list(map(list, t)) for t in rdn.dot_dimension_numbers)
    noncontract = _remaining(a.ndim, lc, lb)
    dg = {"precision": precision, "preferred_element_type": preferred_element_type}

    def incr(ds):
        return [d + 1 for d in ds]

    if ragged in noncontract:
        if len(rdn.rhs_group_dimensions) != 1:
            raise ValueError(
                f"ragged_dot_general: ragged along a non-contracting dim needs one rhs group "
                f"dim, got {rdn.rhs_group_dimensions}{_where()}"
            )
        prefix = lb + noncontract[: noncontract.index(ragged)]
        e = _expand(a, ragged, group_sizes, prefix)
        dims = ((incr(lc) + [0], rc + [rdn.rhs_group_dimensions[0]]), (incr(lb), rb))
        return dot_general(e, b, dims, **dg)
    if rdn.rhs_group_dimensions:
        raise ValueError(
            f"ragged_dot_general: rhs_group_dimensions must be empty unless the lhs ragged "
            f"dim is non-contracting, got {rdn.rhs_group_dimensions}{_where()}"
        )
    if ragged in lc:
        r_ragged = rc[lc.index(ragged)]
        r_noncontract_prefix = rb + rc[: rc.index(r_ragged)]
        ea = _expand(a, ragged, group_sizes, lb + lc[: lc.index(ragged)])
        eb = _expand(b, r_ragged, group_sizes, r_noncontract_prefix)
        dims = ((incr(lc), incr(rc)), ([0] + incr(lb), [0] + incr(rb)))
        return dot_general(ea, eb, dims, **dg)
    if ragged in lb:
        return dot_general(a, b, ((lc, rc), (lb, rb)), **dg)
    raise TypeError(
        f"lhs_ragged_dim {ragged} not found in lhs_noncontracting {noncontract}, "
        f"lhs_contracting {lc}, or lhs_batch {lb}."
    )


def ragged_dot(
    lhs,
    rhs,
    group_sizes,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
    out_sharding=None,
):
    """`lhs` [m, k] rows in consecutive groups of `group_sizes` [g], each multiplied by its
    `rhs` [g, k, n] slice: an [m, n] result (rows past the groups are zero), as
    `jax.lax.ragged_dot`."""
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision,
                              preferred_element_type, group_offset, out_sharding)  # fmt: skip


def _apply_scale(x, scale, contracting: Sequence[int], dt, name: str):
    """`x * scale`, the scale repeated over blocks of each contracting dim, in `dt`."""
    s = _lift(scale)
    if s.ndim != x.ndim:
        raise ValueError(f"scaled_dot: {name} {s.aval} must have the rank of {x.aval}{_where()}")
    blocks = []
    for d in range(x.ndim):
        n, m = x.shape[d], s.shape[d]
        if d in contracting:
            if m == 0 or n % m:
                raise ValueError(
                    f"scaled_dot: {name} dim {d} of size {m} must divide the operand's "
                    f"{n}{_where()}"
                )
        elif n != m:
            raise ValueError(
                f"scaled_dot: {name} {s.aval} must match {x.aval} outside the contracting "
                f"dims{_where()}"
            )
        blocks.append(n // m)
    # scale[..., i, ...] covers operand entries i*block .. (i+1)*block - 1
    wide_shape = [v for d in range(x.ndim) for v in (s.shape[d], blocks[d])]
    wide = broadcast_in_dim(convert(s, dt), wide_shape, tuple(2 * d for d in range(x.ndim)))
    return mul(convert(x, dt), reshape(wide, x.shape))


def scaled_dot(
    lhs,
    rhs,
    *,
    lhs_scale=None,
    rhs_scale=None,
    dimension_numbers=None,
    preferred_element_type=None,
):
    """`(lhs * lhs_scale) @ (rhs * rhs_scale)` in `preferred_element_type` (bfloat16 by
    default), each scale repeated over equal blocks of the contracting dims, as
    `jax.lax.scaled_dot` (the block-scaled, e.g. MX, matmul) computes it off TPU: operands
    dequantised in bfloat16, then one dot_general accumulating in the preferred dtype."""
    a, b = _lift(lhs), _lift(rhs)
    if dimension_numbers is None:
        if a.ndim < 2:
            raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
        n = a.ndim
        batch = tuple(range(n - 2))
        dimension_numbers = (((n - 1,), (n - 2,)), (batch, batch))
    (lc, rc), (lb, rb) = dimension_numbers
    dt = pdt.canonicalize(np.dtype(preferred_element_type or pdt.bfloat16))
    if dt not in (np.dtype(np.float32), np.dtype(pdt.bfloat16)):
        raise ValueError(
            f"scaled_dot: preferred_element_type must be bfloat16 or float32, got {dt}"
        )
    # as XLA's decomposition: dequantise in bfloat16, accumulate in the preferred dtype
    bf = np.dtype(pdt.bfloat16)
    a = _apply_scale(a, lhs_scale, lc, bf, "lhs_scale") if lhs_scale is not None else convert(a, bf)
    b = _apply_scale(b, rhs_scale, rc, bf, "rhs_scale") if rhs_scale is not None else convert(b, bf)
    dims = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    return dot_general(a, b, dims, preferred_element_type=dt)
