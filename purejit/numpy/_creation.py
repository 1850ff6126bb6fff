"""Array creation: zeros/ones/full/empty (+ `_like`), arange, linspace, eye, identity, tri,
tril/triu, meshgrid.

Outside `jit` the static cases are computed with NumPy on the host (no compile; the array
moves to the device when first used). Under `jit` they are built from `iota`, `compare` and
`broadcast_in_dim`, so a large `zeros` or `eye` never becomes a large constant in the program.
"""

from __future__ import annotations

import operator

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.backend import versions
from purejit.numpy import _core as c
from purejit.numpy._program import as_program
from purejit.numpy._shape import _axis, concatenate, reshape
from purejit.runtime.array import Array
from purejit.runtime.eager import EvalTrace
from purejit.tracing import Tracer, bind1, current_trace


def _eager() -> bool:
    """True when no jit trace is active (values are computed now, not recorded)."""

    return isinstance(current_trace(), EvalTrace)


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer, Tracer)):
        shape = (shape,)
    traced = [d for d in shape if isinstance(d, Tracer)] if isinstance(shape, tuple | list) else []
    if traced:
        raise errors.ConcretizationTypeError(
            f"a traced value {traced[0].aval} is used as a shape{errors.at(errors.user_location())}"
            f": shapes must be static integers, known while tracing under "
            f"{traced[0].trace.transform}. Pass that "
            "number as a static argument (purejit.jit(f, static_argnums=...) or "
            "static_argnames=...), or compute it from the static `.shape` of an array."
        )
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(
            f"shapes must be static integers, got {shape!r}{errors.at(errors.user_location())}"
        ) from None
    if any(d < 0 for d in out):
        raise ValueError(f"negative dimensions are not allowed: {list(out)}")
    return out


def _dtype(dtype, default=None) -> np.dtype:
    if dtype is None:
        return default if default is not None else pdt.default_float()
    return pdt.canonicalize(np.dtype(dtype))


def _iota(dt, shape, dimension: int):
    return bind1("iota", shape=tuple(shape), dtype=np.dtype(dt), dimension=dimension)


# ---- filled arrays -------------------------------------------------------------------------


def _scalar_as(x, dt: np.dtype) -> np.ndarray:
    """A Python scalar fill value in `dt` as jax.lax.full converts it: NumPy's value cast,
    wrapping integers (full(2, 2**32 - 1, uint32) and full(2, 2**40, float32) are exact;
    the weak int32 range of a Python int does not apply)."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(x).astype(dt)
    except OverflowError as e:
        raise OverflowError(f"{e}{errors.at(errors.user_location())}") from None


def full(shape, fill_value, dtype=None, *, device=None):
    """An array of `shape` filled with `fill_value` (weakly typed for Python scalars)."""
    shape = _shape(shape)
    if dtype is not None and c.is_python_scalar(fill_value):
        v = Array(host=_scalar_as(fill_value, _dtype(dtype)))
    else:
        v = c._lift(fill_value)
        if dtype is not None:
            v = c.convert(v, _dtype(dtype))
    if type(v) is Array and _eager() and np.broadcast_shapes(v.shape, shape) == shape:
        out = Array(host=np.array(np.broadcast_to(v.host, shape)), weak_type=v.weak_type)
    else:
        out = c.broadcast_to(v, shape)
    return c._place(out, device)


def zeros(shape, dtype=None, *, device=None):
    """An array of zeros (float32 by default)."""
    return full(shape, np.array(0, _dtype(dtype)), device=device)


def ones(shape, dtype=None, *, device=None):
    """An array of ones (float32 by default)."""
    return full(shape, np.array(1, _dtype(dtype)), device=device)


def empty(shape, dtype=None, *, device=None):
    """Like zeros: XLA has no uninitialised memory."""
    return zeros(shape, dtype, device=device)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    """An array like `a` (dtype, weak type, shape unless given) filled with `fill_value`;
    `a` may also be a shape spec (`ShapeDtypeStruct`, anything with shape and dtype)."""
    if _is_spec(a):
        dt = _dtype(dtype, np.dtype(a.dtype))
        weak = bool(getattr(a, "weak_type", False)) if dtype is None else False
        v = c.convert(c._lift(fill_value), dt, weak=weak)
        return full(tuple(a.shape) if shape is None else shape, v, device=device)
    x = c._lift(a)
    dt = _dtype(dtype, x.dtype)
    weak = x.weak_type if dtype is None else False
    if c.is_python_scalar(fill_value):
        v = Array(host=_scalar_as(fill_value, dt), weak_type=weak)
    else:
        v = c.convert(c._lift(fill_value), dt, weak=weak)
    return full(x.shape if shape is None else shape, v, device=device)


def _is_spec(a) -> bool:
    """A shape-and-dtype spec that is not an array (ShapeDtypeStruct, ShapedArray)."""
    return (
        not isinstance(a, (np.ndarray, np.generic))
        and type(a).__name__ in ("ShapeDtypeStruct", "ShapedArray")
        and hasattr(a, "shape")
        and hasattr(a, "dtype")
    )


def zeros_like(a, dtype=None, shape=None, *, device=None):
    """zeros with the dtype and shape of `a`."""
    return full_like(a, 0, dtype, shape, device=device)


def ones_like(a, dtype=None, shape=None, *, device=None):
    """ones with the dtype and shape of `a`."""
    return full_like(a, 1, dtype, shape, device=device)


def empty_like(a, dtype=None, shape=None, *, device=None):
    """Like zeros_like."""
    return full_like(a, 0, dtype, shape, device=device)


# ---- ranges ---------------------------------------------------------------------------------


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in [start, stop) (static bounds, as in JAX)."""
    return c._place(_arange(start, stop, step, dtype), device)


def _arange(start, stop, step, dtype):
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, Tracer):
            raise errors.ConcretizationTypeError(
                f"arange: {name} must be static, got a traced value {v.aval}"
                f"{errors.at(errors.user_location())}; the length of the result must be "
                "known when tracing"
            )
    vals = [np.asarray(v.host if type(v) is Array else v).item()
            for v in (start, stop, step) if v is not None]  # fmt: skip
    if dtype is None:
        is_float = any(isinstance(v, float) for v in vals)
        dt = pdt.default_float() if is_float else pdt.default_int()
    else:
        dt = _dtype(dtype)
    if stop is None and step is None:
        # arange(n): an iota of ceil(n) elements
        n = max(int(np.ceil(vals[0])), 0)
        if _eager():
            return Array(host=np.arange(n, dtype=dt))
        return _iota(dt, (n,), 0)
    if stop is None:
        vals = [0] + vals[:1] + vals[1:]
    # with a start or a step, NumPy computes the values (as JAX does): a constant
    return Array(host=np.arange(*vals, dtype=dt))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):  # fmt: skip
    """`num` evenly spaced samples from start to stop, bit for bit as jax.numpy.linspace of
    the installed jax (start * (1 - t) + stop * t up to jax 0.11, start * (1 - t) +
    (stop / div) * i from 0.12, with t = i / div; compiled as one program outside jit, as
    JAX does)."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples {num} must be non-negative")
    a, b = c._lift(start), c._lift(stop)
    if dtype is None:
        rt = c.result_type(a, b)
        dt = rt if pdt.is_inexact(rt) else pdt.default_float()
    else:
        dt = _dtype(dtype)
    bshape = tuple(np.broadcast_shapes(a.shape, b.shape))
    ax = _axis(axis, len(bshape) + 1, "linspace")
    static = (num, bool(endpoint), dt, ax)
    out, delta = as_program(
        "linspace", lambda a, b: _linspace(a, b, num, bool(endpoint), dt, ax), [a, b], static
    )
    out = c._place(out, device)
    return (out, delta) if retstep else out


def _linspace(a, b, num: int, endpoint: bool, dt, ax: int):
    cdt = dt if pdt.is_inexact(dt) else pdt.default_float()
    a, b = c.broadcast_arrays(c.convert(a, cdt), c.convert(b, cdt))
    bshape = list(a.shape)
    out_shape = bshape[:ax] + [1] + bshape[ax:]
    div = (num - 1) if endpoint else num
    if num > 1:
        delta = c.true_divide(c.subtract(b, a), np.array(div, cdt))
        shape = [1] * len(out_shape)
        shape[ax] = div
        rdt = np.real(np.zeros((), cdt)).dtype if cdt.kind == "c" else cdt
        i = _iota(rdt, shape, ax)
        t = c.convert(c.true_divide(i, np.array(div, rdt)), cdt)
        if versions.jax_release(2) >= (0, 12):
            right = c.multiply(c.true_divide(reshape(b, out_shape), np.array(div, cdt)),
                               c.convert(i, cdt))  # fmt: skip
        else:
            right = c.multiply(reshape(b, out_shape), t)
        out = c.add(c.multiply(reshape(a, out_shape), c.subtract(np.array(1, cdt), t)), right)
        if endpoint:
            out = concatenate([out, reshape(b, out_shape)], axis=ax)
    elif num == 1:
        delta = full((), np.array(np.nan, cdt)) if endpoint else c.subtract(b, a)
        out = reshape(a, out_shape)
    else:
        delta = full((), np.array(np.nan, cdt))
        out = zeros(bshape[:ax] + [0] + bshape[ax:], cdt)
    if dt.kind in "iu":
        out = c.floor(out)
    return [c.convert(out, dt), delta]


# ---- matrices -------------------------------------------------------------------------------


def _diag_mask(n: int, m: int, k: int, lower: bool):
    """bool[n, m]: (col - row == k), or (col - row <= k) when `lower`."""
    if _eager():
        rows, cols = np.indices((n, m))
        return Array(host=(cols - rows <= k) if lower else (cols - rows == k))
    idt = pdt.default_int()
    d = c.subtract(_iota(idt, (n, m), 1), _iota(idt, (n, m), 0))
    return c.less_equal(d, k) if lower else c.equal(d, k)


def eye(N, M=None, k=0, dtype=None, *, device=None):
    """A 2-D array with ones on the k-th diagonal."""
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    out = c.convert(_diag_mask(n, m, operator.index(k), lower=False), _dtype(dtype))
    return c._place(out, device)


def identity(n, dtype=None):
    """The n x n identity matrix."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the k-th diagonal, zeros above."""
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    return c.convert(_diag_mask(n, m, operator.index(k), lower=True), _dtype(dtype))


def _tri_part(m, k, lower: bool, name: str):
    x = c._lift(m)
    if x.ndim < 2:
        raise ValueError(f"{name}: input must be at least 2-D, got shape {list(x.shape)}")
    n, mm = x.shape[-2:]
    mask = _diag_mask(n, mm, k if lower else k - 1, lower=True)
    if not lower:
        mask = c.logical_not(mask)
    zero = c.convert(0, x.dtype, weak=x.weak_type)
    return c.where(c.broadcast_to(mask, x.shape), x, zero)


def tril(m, k=0):
    """The lower triangle of the last two dims (elements above diagonal k zeroed)."""
    return _tri_part(m, operator.index(k), True, "tril")


def triu(m, k=0):
    """The upper triangle of the last two dims (elements below diagonal k zeroed)."""
    return _tri_part(m, operator.index(k), False, "triu")


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-D coordinate vectors ('xy': Cartesian, 'ij': matrix)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [c._lift(x) for x in xi]
    for x in xs:
        if x.ndim != 1:
            raise ValueError(f"meshgrid: arguments must be 1-D, got shape {list(x.shape)}")
    n = len(xs)
    shape = [x.shape[0] for x in xs]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        d = i
        if indexing == "xy" and n >= 2 and i < 2:
            d = 1 - i
        if sparse:
            out.append(reshape(x, [x.shape[0] if j == d else 1 for j in range(n)]))
        else:
            out.append(bind1("broadcast_in_dim", x, shape=tuple(shape), broadcast_dimensions=(d,)))
    return out
