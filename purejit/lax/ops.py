"""The low-level ops of purejit.lax: strict versions of the IR ops (no dtype promotion, as in
jax.lax), indexing, reductions, contractions, cumulative reductions and static reshaping.
The ops that order values (sort, top_k, argmax, argmin) are in `sorting.py`."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.ir import dtypes as irdt
from purejit.runtime.array import Array
from purejit.tracing import ShapedArray, bind, bind1
from purejit.lax._lift import broadcast_arrays_named, convert
from purejit.lax._precision import canonical_precision, dot_algorithm
from purejit.lax._lift import lift as _lift
from purejit.tracing import trace_to_function
from purejit.tree_util import tree_flatten, tree_unflatten


def _same_dtypes(name: str, *xs):
    dts = [x.dtype for x in xs]
    if any(d != dts[0] for d in dts):
        raise errors.PurejitTypeError(
            f"lax.{name} requires arguments to have the same dtypes, got "
            f"{', '.join(d.name for d in dts)}{errors.at(errors.user_location())} "
            f"(purejit.numpy.{name} promotes dtypes; or convert with convert_element_type)"
        )


def unary(op: str, name: str) -> Callable:
    """A lax unary function binding IR op `op`."""

    def f(x, /):
        return bind1(op, _lift(x))

    f.__name__ = name
    f.__doc__ = f"Elementwise {name} (IR op `{op}`); no dtype promotion."
    return f


def binary(op: str, name: str, **attrs) -> Callable:
    """A lax binary function binding IR op `op`: equal dtypes required, shapes broadcast."""

    def f(x, y, /):
        a, b = _lift(x), _lift(y)
        _same_dtypes(name, a, b)
        a, b = broadcast_arrays_named(name, a, b)
        return bind1(op, a, b, **attrs)

    f.__name__ = name
    f.__doc__ = f"Elementwise {name} (IR op `{op}`); both operands must have one dtype."
    return f


def pow(x, y, /):  # noqa: A001
    """x ** y elementwise, as `jax.lax.pow`: x floating or complex; y of x's dtype, or of an
    integer dtype (converted to x's dtype, as JAX lowers it). Integers raised to integers are
    `purejit.numpy.power` (JAX's repeated squaring) or `integer_pow` (a static exponent)."""
    a, b = _lift(x), _lift(y)
    if not irdt.is_inexact(a.dtype):
        raise errors.PurejitTypeError(
            f"lax.pow does not accept dtype {a.dtype.name} at position 0 (floating or "
            f"complex only, as jax.lax.pow){errors.at(errors.user_location())}; for integers "
            "use purejit.numpy.power, or lax.integer_pow with a static exponent"
        )
    if b.dtype != a.dtype and (b.dtype.kind in "iu" or b.dtype == np.bool_):
        b = convert(b, a.dtype)
    _same_dtypes("pow", a, b)
    a, b = broadcast_arrays_named("pow", a, b)
    return bind1("power", a, b)


def convert_element_type(operand, new_dtype):
    """Convert to `new_dtype` (XLA's conversion: float->int truncates, saturating)."""
    return convert(_lift(operand), pdt.canonicalize(np.dtype(new_dtype)))


def bitcast_convert_type(operand, new_dtype):
    """The same bits read as `new_dtype` (of the operand's element width)."""
    return bind1("bitcast_convert", _lift(operand), dtype=pdt.canonicalize(np.dtype(new_dtype)))


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false`; pred is bool, scalar or of the same shape."""
    p, a, b = _lift(pred), _lift(on_true), _lift(on_false)
    _same_dtypes("select", a, b)
    return bind1("select", p, a, b)


def clamp(min, x, max):
    """`min(max(x, min), max)`; bounds are scalars or have x's shape, all of x's dtype."""
    lo, v, hi = _lift(min), _lift(x), _lift(max)
    _same_dtypes("clamp", lo, v, hi)
    return bind1("clamp", lo, v, hi)


def iota(dtype, size: int):
    """`[0, 1, ..., size - 1]` of `dtype`."""
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    """An array of `shape` counting along `dimension`."""
    dt = pdt.canonicalize(np.dtype(dtype))
    return bind1("iota", shape=tuple(int(d) for d in shape), dtype=dt, dimension=int(dimension))


def broadcast_in_dim(operand, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    """Broadcast `operand` to `shape`; operand dim i becomes dim broadcast_dimensions[i]."""
    x = _lift(operand)
    shape, dims = tuple(int(d) for d in shape), tuple(int(d) for d in broadcast_dimensions)
    if x.shape == shape and dims == tuple(range(x.ndim)):
        return x
    return bind1("broadcast_in_dim", x, shape=shape, broadcast_dimensions=dims)


def broadcast(operand, sizes: Sequence[int]):
    """Add leading dimensions `sizes` to `operand`."""
    x = _lift(operand)
    n = len(sizes)
    return broadcast_in_dim(x, (*sizes, *x.shape), tuple(range(n, n + x.ndim)))


def reshape(operand, new_sizes: Sequence[int], dimensions=None):
    """Reshape (row-major); `dimensions` transposes first."""
    x = _lift(operand)
    if dimensions is not None:
        x = transpose(x, dimensions)
    shape = tuple(int(d) for d in new_sizes)
    return x if x.shape == shape else bind1("reshape", x, shape=shape)


def transpose(operand, permutation: Sequence[int]):
    """Permute dimensions: result dim i is operand dim permutation[i]."""
    x = _lift(operand)
    perm = tuple(int(p) for p in permutation)
    return x if perm == tuple(range(x.ndim)) else bind1("transpose", x, permutation=perm)


def rev(operand, dimensions: Sequence[int]):
    """Reverse the order of elements along `dimensions`."""
    return bind1("reverse", _lift(operand), dimensions=tuple(int(d) for d in dimensions))


# ---- indexing ------------------------------------------------------------------------------


def _start_indices(name: str, indices, shape) -> list:
    """Scalar start indices of one integer dtype; negative ones count from the end (JAX)."""
    indices = list(indices)
    if len(indices) != len(shape):
        raise errors.PurejitTypeError(
            f"lax.{name}: {len(indices)} start indices for an array of rank {len(shape)} "
            f"(shape {list(shape)}){errors.at(errors.user_location())}"
        )
    traced = [_lift(i) for i in indices if not isinstance(i, (int, np.integer))]
    for t in traced:
        if t.shape != () or t.dtype.kind not in "iu":
            raise errors.PurejitTypeError(
                f"lax.{name}: start indices must be integer scalars, got {t.aval.str_short()}"
                f"{errors.at(errors.user_location())}"
            )
    dt = np.dtype(np.int32)
    for t in traced:
        dt = pdt.promote_types(dt, t.dtype) if t.dtype.itemsize >= 4 else dt
    out = []
    for i, d in zip(indices, shape):
        if isinstance(i, (int, np.integer)):
            i = int(i) + d if int(i) < 0 else int(i)
            out.append(Array(host=np.array(i, dt)))
            continue
        t = convert(_lift(i), dt)
        if dt.kind == "i":
            zero, size = Array(host=np.array(0, dt)), Array(host=np.array(d, dt))
            neg = bind1("compare", t, zero, comparison_direction="LT")
            t = bind1("select", neg, bind1("add", t, size), t)
        out.append(t)
    return out


def dynamic_slice(operand, start_indices: Sequence, slice_sizes: Sequence[int]):
    """`operand[s0:s0+n0, ...]` with traced starts, clamped to stay in bounds (XLA)."""
    x = _lift(operand)
    starts = _start_indices("dynamic_slice", start_indices, x.shape)
    return bind1("dynamic_slice", x, *starts, slice_sizes=tuple(int(n) for n in slice_sizes))


def dynamic_update_slice(operand, update, start_indices: Sequence):
    """`operand` with `update` written at the (clamped) start indices."""
    x, u = _lift(operand), _lift(update)
    _same_dtypes("dynamic_update_slice", x, u)
    starts = _start_indices("dynamic_update_slice", start_indices, x.shape)
    return bind1("dynamic_update_slice", x, u, *starts)


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    """dynamic_slice along one axis."""
    x = _lift(operand)
    axis = canonical_axis(axis, x.ndim)
    starts = [0] * x.ndim
    starts[axis] = start_index
    sizes = list(x.shape)
    sizes[axis] = slice_size
    return dynamic_slice(x, starts, sizes)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    """The slice at `index` along `axis` (kept as a size-1 axis if keepdims)."""
    x = _lift(operand)
    axis = canonical_axis(axis, x.ndim)
    out = dynamic_slice_in_dim(x, index, 1, axis)
    return out if keepdims else reshape(out, x.shape[:axis] + x.shape[axis + 1 :])


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    """dynamic_update_slice along one axis."""
    x = _lift(operand)
    axis = canonical_axis(axis, x.ndim)
    starts = [0] * x.ndim
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis: int):
    """Write `update` (with or without the size-1 axis) at `index` along `axis`."""
    x, u = _lift(operand), _lift(update)
    axis = canonical_axis(axis, x.ndim)
    if u.ndim == x.ndim - 1:
        u = reshape(u, u.shape[:axis] + (1,) + u.shape[axis:])
    return dynamic_update_slice_in_dim(x, u, index, axis)


def canonical_axis(axis: int, ndim: int, name: str = "") -> int:
    """`axis` as a position in an array of rank `ndim` (negative ones count from the end);
    `name`, the function asking, heads the error."""
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(  # a ValueError and an IndexError, as NumPy's
            f"{name + ': ' if name else ''}axis {a} is out of bounds for an array of rank "
            f"{ndim}{errors.at(errors.user_location())}"
        )
    return a % ndim


# ---- reductions and contractions -------------------------------------------------------------


def _scalar_region(fun: Callable, dtypes_, name: str):
    avals = [ShapedArray((), np.dtype(d)) for d in dtypes_]
    traced = trace_to_function(fun, avals, name=name)
    if traced.captures:
        raise NotImplementedError(
            f"lax.{name}: the computation reads traced values from the enclosing function; "
            "pass them as operands instead"
        )
    return traced.fn


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int]):
    """Reduce `operands` (a pytree) over `dimensions` with `computation(acc, x)`.

    Args:
        operands: an array or pytree of arrays of one shape.
        init_values: scalars matching operands' structure and dtypes.
        computation: (acc pytree, x pytree) -> acc pytree of scalars.
        dimensions: the dimensions to reduce.
    Returns:
        The reduced array(s), in operands' structure.
    """
    xs, tree = tree_flatten(operands)
    inits, init_tree = tree_flatten(init_values)
    if init_tree != tree:
        raise TypeError(f"lax.reduce: operands {tree} and init_values {init_tree} differ")
    xs = [_lift(x) for x in xs]
    inits = [convert(_lift(i), x.dtype) for i, x in zip(inits, xs)]
    n = len(xs)

    def body(*args):
        acc = tree_unflatten(tree, args[:n])
        out = computation(acc, tree_unflatten(tree, args[n:]))
        return [convert(_lift(o), x.dtype) for o, x in zip(tree_flatten(out)[0], xs)]

    region = _scalar_region(body, [x.dtype for x in xs] * 2, "reduce")
    dims = tuple(canonical_axis(d, xs[0].ndim, f"lax.reduce of {xs[0].aval}") for d in dimensions)
    outs = bind("reduce", *xs, *inits, dimensions=dims, regions=[region])
    return tree_unflatten(tree, outs)


def dot_general(
    lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None
):
    """XLA's DotGeneral: dimension_numbers = ((lhs_contract, rhs_contract),
    (lhs_batch, rhs_batch)); result dims are batch, lhs free, rhs free. `out_sharding` (JAX's
    explicit sharding) must be None."""
    if out_sharding is not None:
        raise NotImplementedError(
            "lax.dot_general: out_sharding= needs JAX's explicit sharding (sharding in types), "
            "which purejit does not have; use jit's out_shardings or with_sharding_constraint"
        )
    a, b = _lift(lhs), _lift(rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    attrs = {
        "lhs_batching_dimensions": tuple(lb),
        "rhs_batching_dimensions": tuple(rb),
        "lhs_contracting_dimensions": tuple(lc),
        "rhs_contracting_dimensions": tuple(rc),
    }
    algorithm = dot_algorithm(precision)
    if algorithm is not None:
        return _dot_with_algorithm(a, b, attrs, algorithm, preferred_element_type)
    prec = canonical_precision(precision, "lax.dot_general")
    if prec is not None:
        attrs["precision"] = prec
    if preferred_element_type is not None:
        dt = pdt.canonicalize(np.dtype(preferred_element_type))
        if a.dtype != b.dtype:
            a, b = convert(a, dt), convert(b, dt)
        if a.dtype != dt:
            # as JAX emits it: one dot whose result has the preferred dtype (bf16 operands
            # keep their tensor-core GEMM, accumulating and returning f32)
            attrs["preferred_element_type"] = dt
    _same_dtypes("dot_general", a, b)
    return bind1("dot_general", a, b, **attrs)


def _dot_with_algorithm(a, b, attrs: dict, algorithm, preferred_element_type):
    """dot_general with a dot algorithm (JAX's rule): the operands converted to the types
    the algorithm takes, one dot accumulating in its accumulation type with StableHLO's
    `algorithm` attribute (none for the DEFAULT preset), and the result converted to the
    dtype the call would have without it."""
    if a.dtype == b.dtype:
        out = a.dtype
    else:
        out = pdt.promote_types(a.dtype, b.dtype)
    if preferred_element_type is not None:
        out = pdt.canonicalize(np.dtype(preferred_element_type))
    lhs_t, rhs_t, acc_t = algorithm._compute_types(a.dtype, b.dtype, out)
    if isinstance(lhs_t, str) or isinstance(rhs_t, str):  # tf32: kept in float32 storage
        lhs_t = a.dtype if isinstance(lhs_t, str) else lhs_t
        rhs_t = b.dtype if isinstance(rhs_t, str) else rhs_t
    lhs_t, rhs_t = np.dtype(lhs_t), np.dtype(rhs_t)
    if lhs_t != rhs_t:
        raise NotImplementedError(
            f"lax.dot_general: precision={algorithm!r} takes {lhs_t.name} and {rhs_t.name} "
            "operands; purejit's dot_general needs one operand dtype"
        )
    a, b = convert(a, lhs_t), convert(b, rhs_t)
    acc = out if acc_t is None or isinstance(acc_t, str) else np.dtype(acc_t)
    if acc != a.dtype:
        attrs["preferred_element_type"] = acc
    attr = algorithm._attr(lhs_t, rhs_t)
    if attr is not None:  # the backend's lowering refuses what it cannot run
        attrs["algorithm"] = attr
    res = bind1("dot_general", a, b, **attrs)
    return res if res.dtype == out else convert(res, out)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix product contracting lhs's last and rhs's first dimension."""
    a, b = _lift(lhs), _lift(rhs)
    dims = (((a.ndim - 1,), (0,)), ((), ()))
    return dot_general(a, b, dims, precision, preferred_element_type)


# ---- cumulative reductions: reduce_window over the whole axis ----------------------------------


def reduction_identity(kind: str, dtype) -> np.ndarray:
    """The identity of reduction `kind` ("add", "multiply", "minimum", "maximum", "and",
    "or", "xor") in `dtype`: 0, 1, all bits set, or the highest/lowest value (-inf, or the
    finite extreme of a float type without infinities)."""
    dt = np.dtype(dtype)
    if kind in ("add", "or", "xor"):
        return np.zeros((), dt)
    if kind == "multiply":
        return np.ones((), dt)
    if kind == "and":
        return np.array(True if dt == np.bool_ else -1).astype(dt)
    return irdt.highest(dt) if kind == "minimum" else irdt.lowest(dt)


@functools.lru_cache(maxsize=256)
def _monoid_region(kind: str, dt: np.dtype):
    return _scalar_region(lambda a, b: [bind1(kind, a, b)], [dt, dt], kind)


def _cumulative(kind: str, name: str, operand, axis: int, reverse: bool):
    x = _lift(operand)
    if x.dtype == np.bool_ or not (irdt.is_integer(x.dtype) or irdt.is_inexact(x.dtype)):
        raise errors.PurejitTypeError(
            f"lax.{name} does not accept dtype {x.dtype.name}; it needs numbers"
            f"{errors.at(errors.user_location())}"
        )
    axis = canonical_axis(axis, x.ndim)
    n = x.shape[axis]
    if n == 0:
        return x
    ones = (1,) * x.ndim
    window = tuple(n if k == axis else 1 for k in range(x.ndim))
    pad = tuple(
        ((0, n - 1) if reverse else (n - 1, 0)) if k == axis else (0, 0) for k in range(x.ndim)
    )
    init = Array(host=reduction_identity(kind, x.dtype))
    return bind1(
        "reduce_window",
        x,
        init,
        window_dimensions=window,
        window_strides=ones,
        base_dilations=ones,
        window_dilations=ones,
        padding=pad,
        regions=[_monoid_region(kind, x.dtype)],
        weak=x.weak_type,
    )


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """Cumulative sum along `axis` (from the end if `reverse`)."""
    return _cumulative("add", "cumsum", operand, axis, reverse)


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """Cumulative product along `axis`."""
    return _cumulative("multiply", "cumprod", operand, axis, reverse)


def cummax(operand, axis: int = 0, reverse: bool = False):
    """Cumulative maximum along `axis`."""
    return _cumulative("maximum", "cummax", operand, axis, reverse)


def cummin(operand, axis: int = 0, reverse: bool = False):
    """Cumulative minimum along `axis`."""
    return _cumulative("minimum", "cummin", operand, axis, reverse)


# ---- shapes ----------------------------------------------------------------------------------


def slice(operand, start_indices, limit_indices, strides=None):
    """`operand[start:limit:stride]` per dimension, with static bounds."""
    x = _lift(operand)
    strides = tuple(strides) if strides is not None else (1,) * x.ndim
    return bind1(
        "slice",
        x,
        start_indices=tuple(start_indices),
        limit_indices=tuple(limit_indices),
        strides=strides,
    )


def concatenate(operands, dimension: int):
    """Join arrays of one dtype along `dimension`."""
    xs = [_lift(x) for x in operands]
    _same_dtypes("concatenate", *xs)
    return xs[0] if len(xs) == 1 else bind1("concatenate", *xs, dimension=int(dimension))


def pad(operand, padding_value, padding_config):
    """Pad with `padding_value`; padding_config is [(low, high, interior)] per dimension."""
    x, v = _lift(operand), _lift(padding_value)
    _same_dtypes("pad", x, v)
    lo, hi, interior = (tuple(int(c[k]) for c in padding_config) for k in range(3))
    return bind1("pad", x, v, edge_padding_low=lo, edge_padding_high=hi, interior_padding=interior)


def squeeze(array, dimensions: Sequence[int]):
    """Remove the size-1 `dimensions`."""
    x = _lift(array)
    dims = {canonical_axis(d, x.ndim) for d in dimensions}
    return reshape(x, tuple(n for k, n in enumerate(x.shape) if k not in dims))


def expand_dims(array, dimensions: Sequence[int]):
    """Insert size-1 dimensions at `dimensions` (positions in the result)."""
    x = _lift(array)
    shape = list(x.shape)
    for d in sorted(canonical_axis(d, x.ndim + len(dimensions)) for d in dimensions):
        shape.insert(d, 1)
    return reshape(x, shape)


def full(shape: Sequence[int], fill_value, dtype=None):
    """An array of `shape` filled with `fill_value`."""
    v = _lift(fill_value)
    if dtype is not None:
        v = convert(v, pdt.canonicalize(np.dtype(dtype)))
    return broadcast_in_dim(v, tuple(shape), ())


def integer_pow(x, y: int):
    """`x ** y` for a static integer `y` (IR op `integer_pow`): the multiplies of repeated
    squaring that JAX emits, and JAX's derivative `y * x**(y-1)`."""
    return bind1("integer_pow", _lift(x), y=operator.index(y))


def round(x, rounding_method: int = 0):
    """Round to the nearest integer: ties away from zero (method 0) or to even (method 1)."""
    op = "round_nearest_even" if int(rounding_method) == 1 else "round_nearest_afz"
    return bind1(op, _lift(x))
