"""`gather` / `scatter*` with JAX's dimension numbers and modes (JAX's `lax.slicing`), and
`select_n`, built on the IR's existing ops."""

from __future__ import annotations

import enum
import operator
from typing import Callable, NamedTuple, Sequence

import numpy as np

from purejit import errors
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.lax.ops import (
    _monoid_region,
    _same_dtypes,
    _scalar_region,
    broadcast_in_dim,
    concatenate,
)
from purejit.tracing import bind1


def _where() -> str:
    return errors.at(errors.user_location())


# ---- select_n ----------------------------------------------------------------------------------


def select_n(which, *cases):
    """`cases[which]` elementwise, as `jax.lax.select_n`: `which` is bool (two cases) or
    int32, a scalar or of the cases' shape; out-of-range values give an unspecified case."""
    if not cases:
        raise ValueError(f"lax.select_n: needs at least one case{_where()}")
    w = _lift(which)
    xs = [_lift(c) for c in cases]
    _same_dtypes("select_n", *xs)
    if any(x.shape != xs[0].shape for x in xs):
        raise errors.PurejitTypeError(
            f"lax.select_n: cases must have one shape, got {[x.shape for x in xs]}{_where()}"
        )
    if w.shape not in ((), xs[0].shape):
        raise errors.PurejitTypeError(
            f"lax.select_n: which {w.aval} must be a scalar or of the cases' shape{_where()}"
        )
    if w.dtype == np.bool_:
        if len(xs) > 2:
            raise errors.PurejitTypeError(f"lax.select_n: a bool which takes 2 cases{_where()}")
        return xs[0] if len(xs) == 1 else bind1("select", w, xs[1], xs[0])
    if w.dtype.kind not in "iu":
        raise errors.PurejitTypeError(f"lax.select_n: which must be bool or int{_where()}")
    out = xs[-1]
    for k in range(len(xs) - 2, -1, -1):  # which <= k picks case k or an earlier one
        k_ = broadcast_in_dim(convert(_lift(np.array(k)), w.dtype), w.shape, ())
        out = bind1("select", bind1("compare", w, k_, comparison_direction="LE"), xs[k], out)
    return out


# ---- gather and scatter -------------------------------------------------------------------------


class GatherDimensionNumbers(NamedTuple):
    """JAX's gather dimension numbers (index vectors along the indices' last axis)."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """JAX's scatter dimension numbers (index vectors along the indices' last axis)."""

    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
    """Out-of-bounds indices: CLIP clamps them, FILL_OR_DROP fills (gather) or drops
    (scatter) their windows, PROMISE_IN_BOUNDS leaves them to XLA (which clamps a gather
    and drops a scatter)."""

    CLIP = 0
    FILL_OR_DROP = 1
    PROMISE_IN_BOUNDS = 2
    ONE_HOT = 3

    @staticmethod
    def from_any(s):
        if isinstance(s, GatherScatterMode):
            return s
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "clip":
            return GatherScatterMode.CLIP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f"unknown gather/scatter mode {s!r}")


def _no_batching(fname, dn, a, b):
    if tuple(getattr(dn, a)) or tuple(getattr(dn, b)):
        raise NotImplementedError(
            f"lax.{fname}: {a} / {b} (batched gathers and scatters) are not supported; the "
            f"IR's {fname} has no batching dimensions yet{_where()}"
        )


def _in_bounds(idx, operand_shape, dims, window) -> object:
    """Per index vector: every start in [0, dim - window]; shape idx.shape[:-1]."""
    ok = None
    for k, d in enumerate(dims):
        col = bind1("slice", idx, start_indices=(0,) * (idx.ndim - 1) + (k,),
                    limit_indices=idx.shape[:-1] + (k + 1,), strides=(1,) * idx.ndim)  # fmt: skip
        col = bind1("reshape", col, shape=idx.shape[:-1])
        lo = convert(_lift(np.array(0)), idx.dtype)
        hi = convert(_lift(np.array(operand_shape[d] - window[d])), idx.dtype)
        zero = broadcast_in_dim(lo, col.shape, ())
        top = broadcast_in_dim(hi, col.shape, ())
        this = bind1("and", bind1("compare", col, zero, comparison_direction="GE"),
                     bind1("compare", col, top, comparison_direction="LE"))  # fmt: skip
        ok = this if ok is None else bind1("and", ok, this)
    return ok


def _clamped(idx, operand_shape, dims, window):
    cols = []
    for k, d in enumerate(dims):
        col = bind1("slice", idx, start_indices=(0,) * (idx.ndim - 1) + (k,),
                    limit_indices=idx.shape[:-1] + (k + 1,), strides=(1,) * idx.ndim)  # fmt: skip
        lo = broadcast_in_dim(convert(_lift(np.array(0)), idx.dtype), col.shape, ())
        hi = broadcast_in_dim(
            convert(_lift(np.array(max(operand_shape[d] - window[d], 0))), idx.dtype), col.shape, ()
        )
        cols.append(bind1("clamp", lo, col, hi))
    return concatenate(cols, idx.ndim - 1) if cols else idx


def gather(
    operand,
    start_indices,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes: Sequence[int],
    *,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    mode=None,
    fill_value=None,
):
    """XLA's Gather, as `jax.lax.gather` (index vectors along the last axis of
    `start_indices`; `mode` None promises in-bounds indices, which XLA clamps; "fill" fills
    out-of-bounds slices with `fill_value`, default NaN / the integer minimum)."""
    del unique_indices
    x, idx = _lift(operand), _lift(start_indices)
    dn = dimension_numbers
    _no_batching("gather", dn, "operand_batching_dims", "start_indices_batching_dims")
    sizes = tuple(operator.index(s) for s in slice_sizes)
    if mode is None:  # as JAX's lax.gather (jnp indexing fills instead)
        mode = GatherScatterMode.PROMISE_IN_BOUNDS
    mode = GatherScatterMode.from_any(mode)
    if mode is GatherScatterMode.ONE_HOT:
        raise NotImplementedError(f"lax.gather: mode ONE_HOT is not supported{_where()}")
    smap = tuple(dn.start_index_map)
    if mode is GatherScatterMode.CLIP:
        idx = _clamped(idx, x.shape, smap, sizes)
    out = bind1(
        "gather",
        x,
        idx,
        offset_dims=tuple(dn.offset_dims),
        collapsed_slice_dims=tuple(dn.collapsed_slice_dims),
        start_index_map=smap,
        index_vector_dim=idx.ndim - 1,
        slice_sizes=sizes,
        indices_are_sorted=bool(indices_are_sorted),
        weak=x.weak_type,
    )
    if mode is not GatherScatterMode.FILL_OR_DROP:
        return out
    if fill_value is None:
        dt = x.dtype
        if dt.kind == "f" or dt.kind == "c" or dt.name == "bfloat16":
            fill_value = np.nan
        elif dt == np.bool_:
            fill_value = True
        elif dt.kind == "i":
            fill_value = np.iinfo(dt).min
        else:
            fill_value = np.iinfo(dt).max
    ok = _in_bounds(idx, x.shape, smap, sizes)
    batch = [d for d in range(out.ndim) if d not in tuple(dn.offset_dims)]
    mask = broadcast_in_dim(ok, out.shape, tuple(batch))
    fill = broadcast_in_dim(convert(_lift(np.array(fill_value)), out.dtype), out.shape, ())
    return bind1("select", mask, out, fill)


def _set_region(dt):
    return _scalar_region(lambda a, b: [b], [dt, dt], "scatter")


def _scatter(kind, operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted,
             unique_indices, mode, region=None):  # fmt: skip
    name = "scatter" if kind == "set" else f"scatter_{kind}"
    x, idx, u = _lift(operand), _lift(scatter_indices), _lift(updates)
    _same_dtypes(name, x, u)
    dn = dimension_numbers
    _no_batching(name, dn, "operand_batching_dims", "scatter_indices_batching_dims")
    mode = GatherScatterMode.from_any(mode)
    if mode is GatherScatterMode.ONE_HOT:
        raise NotImplementedError(f"lax.{name}: mode ONE_HOT is not supported{_where()}")
    if mode is GatherScatterMode.CLIP:
        inserted = tuple(dn.inserted_window_dims)
        wdims = [d for d in range(x.ndim) if d not in inserted]
        window = [1] * x.ndim
        for w, d in zip(tuple(dn.update_window_dims), wdims):
            window[d] = u.shape[w]
        idx = _clamped(idx, x.shape, tuple(dn.scatter_dims_to_operand_dims), window)
    if region is None:
        region = _set_region(x.dtype) if kind == "set" else _monoid_region(kind, x.dtype)
    return bind1(
        "scatter",
        x,
        idx,
        u,
        update_window_dims=tuple(dn.update_window_dims),
        inserted_window_dims=tuple(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=tuple(dn.scatter_dims_to_operand_dims),
        index_vector_dim=idx.ndim - 1,
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
        regions=[region],
        weak=x.weak_type,
    )


def _scatter_fn(kind: str, doc: str):
    def f(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
          unique_indices=False, mode=None):  # fmt: skip
        return _scatter(kind, operand, scatter_indices, updates, dimension_numbers,
                        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                        mode=mode)  # fmt: skip

    f.__name__ = "scatter" if kind == "set" else f"scatter_{kind}"
    f.__doc__ = doc
    return f


scatter = _scatter_fn("set", "XLA's Scatter writing `updates` (as `jax.lax.scatter`).")
scatter_add = _scatter_fn("add", "Scatter adding `updates` (as `jax.lax.scatter_add`).")
scatter_mul = _scatter_fn("multiply", "Scatter multiplying (as `jax.lax.scatter_mul`).")


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):  # fmt: skip
    """Scatter subtracting `updates` (as `jax.lax.scatter_sub`): a scatter-add of the
    negated updates, the same numbers (x + -u == x - u exactly; modular for integers) and
    the scatter-add's derivatives and batching."""
    u = _lift(updates)
    return scatter_add(operand, scatter_indices, bind1("negate", u), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode)  # fmt: skip


scatter_min = _scatter_fn("minimum", "Scatter taking minima (as `jax.lax.scatter_min`).")
scatter_max = _scatter_fn("maximum", "Scatter taking maxima (as `jax.lax.scatter_max`).")


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers, *,
                  update_shape=None, indices_are_sorted=False, unique_indices=False,
                  mode=None):  # fmt: skip
    """Apply `func` to the scattered-to elements (as `jax.lax.scatter_apply`)."""
    x = _lift(operand)
    region = _scalar_region(lambda a, b: [convert(_lift(func(a)), x.dtype)], [x.dtype] * 2,
                            "scatter_apply")  # fmt: skip
    shape = tuple(update_shape) if update_shape is not None else _lift(scatter_indices).shape[:-1]
    u = broadcast_in_dim(convert(_lift(np.array(0)), x.dtype), shape, ())
    return _scatter("apply", x, scatter_indices, u, dimension_numbers,
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                    mode=mode, region=region)  # fmt: skip
