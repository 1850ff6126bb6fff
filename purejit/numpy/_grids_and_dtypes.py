"""More of jax.numpy: scalar-type aliases and abstract types, dtype helpers (promote_types,
issubdtype, isscalar, iterable, ndim, shape, size), the index tricks (r_, c_, s_, index_exp,
mgrid, ogrid), window functions, trapezoid, unwrap, logspace, geomspace, fromfunction,
matvec and vecmat, each as jax.numpy computes it (the polynomials live in `_poly`)."""

from __future__ import annotations

import math
import operator

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import convert
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._array_api import diff
from purejit.numpy._creation import arange, linspace, meshgrid
from purejit.numpy._linalg import matmul
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._scalar_types import complex64, complex128, float32, float64, int64, uint64
from purejit.numpy._shape import concatenate, expand_dims, moveaxis, stack, transpose
from purejit.numpy._sorting import cumsum
from purejit.numpy._elementwise import i0
from purejit.tracing import ConcreteArray, Tracer
from purejit.transforms.vmap import vmap

# ---- scalar types: JAX's aliases of its scalar types, NumPy's abstract classes -------------

single, double = float32, float64
csingle, cdouble, complex_ = complex64, complex128, complex128
float_, int_, uint = float64, int64, uint64
generic, number, inexact, floating, complexfloating = (
    np.generic, np.number, np.inexact, np.floating, np.complexfloating)  # fmt: skip
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
euler_gamma = 0.5772156649015329


def _as_type(t):
    """A NumPy scalar type or dtype for `t` (purejit's scalar types give their dtype)."""
    if isinstance(t, type) and issubclass(t, np.generic):
        return t
    if pdt.is_key_dtype(t):
        return t  # a typed key's dtype: `issubdtype(key.dtype, dtypes.prng_key)`
    if hasattr(t, "dtype") and isinstance(getattr(t, "dtype"), np.dtype):
        return t.dtype
    return np.dtype(t)


def issubdtype(arg1, arg2) -> bool:
    """Whether arg1 is lower than arg2 in NumPy's type hierarchy, with ml_dtypes' types
    (bfloat16, float8_*, int4...) floating or integer types (as jax.numpy)."""
    return pdt.issubdtype(_as_type(arg1), _as_type(arg2))


_ABSTRACT = (np.generic, np.number, np.inexact, np.floating, np.complexfloating, np.integer,
             np.signedinteger, np.unsignedinteger, np.bool_, np.flexible, np.character)  # fmt: skip


def _promotion_node(t):
    # Python's scalar types are weakly typed in JAX's lattice
    if t in (int, float, complex):
        return pdt._node(np.dtype(t), True)
    return pdt._node(np.dtype(_as_type(t)), False)


_WEAK_RESULT = {pdt.WEAK_INT: np.dtype(np.int64), pdt.WEAK_FLOAT: np.dtype(np.float64),
                pdt.WEAK_COMPLEX: np.dtype(np.complex128)}  # fmt: skip


def promote_types(a, b) -> np.dtype:
    """The dtype both `a` and `b` promote to on JAX's lattice (Python's int, float and
    complex weakly typed; no 64-bit canonicalisation)."""
    out = pdt._lub(_promotion_node(a), _promotion_node(b))
    return _WEAK_RESULT.get(out, out) if isinstance(out, str) else np.dtype(out)


def isscalar(element) -> bool:
    """Whether `element` is a scalar: a Python or NumPy scalar, or a 0-d array."""
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, ConcreteArray, Tracer)):
        return element.ndim == 0
    return False


def iterable(y) -> bool:
    """Whether iter(y) works."""
    try:
        iter(y)
    except TypeError:
        return False
    return True


def ndim(a) -> int:
    """The number of dimensions of `a`."""
    return a.ndim if isinstance(a, (ConcreteArray, Tracer)) else np.ndim(a)


def shape(a) -> tuple:
    """The shape of `a`."""
    return tuple(a.shape) if isinstance(a, (ConcreteArray, Tracer)) else np.shape(a)


def size(a, axis=None) -> int:
    """The number of elements of `a` (along `axis`, an int or a tuple, if given)."""
    s = shape(a)
    if axis is None:
        return math.prod(s)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return math.prod(s[operator.index(ax)] for ax in axes)


# ---- index tricks -----------------------------------------------------------------------------


def _grid_1d(s: slice, name: str):
    for v in (s.start, s.stop, s.step):
        if isinstance(v, Tracer):
            raise errors.ConcretizationTypeError(f"{name}: slice bounds must be static")
    start, stop, step = s.start or 0, s.stop, s.step or 1
    if np.iscomplex(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


def _promote(xs):
    dt, weak = pdt.result_type_weak(*[(x.dtype, x.weak_type) for x in xs])
    return [convert(x, dt, weak=weak) for x in xs]


class _Mgrid:
    """`mgrid[0:2, 0:3]`: the dense index grid of the slices (a complex step is a count)."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "mgrid")
        parts = _promote([_grid_1d(k, "mgrid") for k in key])
        out = meshgrid(*parts, indexing="ij")
        return stack(out, 0) if out else arange(0)


class _Ogrid:
    """`ogrid[0:2, 0:3]`: the open (broadcastable) index grid of the slices."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "ogrid")
        parts = _promote([_grid_1d(k, "ogrid") for k in key])
        return list(meshgrid(*parts, indexing="ij", sparse=True))


class _AxisConcat:
    axis: int
    ndmin: int
    trans1d: int
    name: str

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        directive = items[0]
        if isinstance(directive, str):
            items = items[1:]
            if directive == "r":
                params[-1] = 0
            elif directive == "c":
                params[-1] = 1
            else:
                vec = directive.split(",")
                vec = vec + params[len(vec) :] if len(vec) < 4 else vec[:3] + [params[-1]]
                try:
                    params = [int(v) for v in vec]
                except ValueError as e:
                    raise ValueError(f"{self.name}: could not understand directive "
                                     f"{directive!r}") from e  # fmt: skip
        axis, nmin, trans1d, matrix = params
        out = []
        for item in items:
            if isinstance(item, slice):
                obj, item_ndim = _grid_1d(item, self.name), 0
            elif isinstance(item, str):
                raise ValueError(f"{self.name}: string directive must be placed at the beginning")
            else:
                obj = c.asarray(item)
                item_ndim = obj.ndim
            if obj.ndim < nmin:
                obj = c.asarray(obj).reshape((1,) * (nmin - obj.ndim) + obj.shape)
            if trans1d != -1 and nmin - item_ndim > 0:
                order = tuple(range(nmin))
                shift = nmin - abs(nmin + trans1d + 1) % nmin
                obj = transpose(obj, order[shift:] + order[:shift])
            out.append(obj)
        res = concatenate(out, axis=axis)
        if matrix != -1 and res.ndim == 1:
            res = expand_dims(res, matrix)
        return res

    def __len__(self) -> int:
        return 0


class RClass(_AxisConcat):
    """`r_[...]`: concatenation along the first axis (slices become ranges)."""

    axis, ndmin, trans1d, name = 0, 1, -1, "r_"


class CClass(_AxisConcat):
    """`c_[...]`: 1-D pieces become columns, concatenated along the last axis."""

    axis, ndmin, trans1d, name = -1, 2, 0, "c_"


mgrid, ogrid, r_, c_ = _Mgrid(), _Ogrid(), RClass(), CClass()
s_, index_exp = np.s_, np.index_exp


# ---- window functions -------------------------------------------------------------------------


def _window(m, name: str):
    if isinstance(m, Tracer):
        raise errors.ConcretizationTypeError(f"{name}: M must be a static integer")
    m = int(m)
    dt = pdt.default_float()
    if m <= 1:
        return m, None, c.asarray(np.ones((max(m, 0),), dt))
    return m, arange(m, dtype=dt), None


def bartlett(M):
    """The Bartlett (triangular) window of M points."""
    m, n, small = _window(M, "bartlett")
    if small is not None:
        return small
    return c.subtract(1, c.true_divide(c.abs(c.subtract(c.add(c.multiply(2, n), 1), m)), m - 1))


def blackman(M):
    """The Blackman window of M points."""
    m, n, small = _window(M, "blackman")
    if small is not None:
        return small
    a = c.cos(c.true_divide(c.multiply(2 * np.pi, n), m - 1))
    b = c.cos(c.true_divide(c.multiply(4 * np.pi, n), m - 1))
    return c.add(c.subtract(0.42, c.multiply(0.5, a)), c.multiply(0.08, b))


def hamming(M):
    """The Hamming window of M points."""
    m, n, small = _window(M, "hamming")
    if small is not None:
        return small
    return c.subtract(0.54, c.multiply(0.46, c.cos(c.true_divide(c.multiply(2 * np.pi, n),
                                                                m - 1))))  # fmt: skip


def hanning(M):
    """The Hann window of M points."""
    m, n, small = _window(M, "hanning")
    if small is not None:
        return small
    return c.multiply(0.5, c.subtract(1, c.cos(c.true_divide(c.multiply(2 * np.pi, n), m - 1))))


def kaiser(M, beta):
    """The Kaiser window of M points with shape parameter beta."""
    m, n, small = _window(M, "kaiser")
    if small is not None:
        return small
    alpha = 0.5 * (m - 1)
    r = c.true_divide(c.subtract(n, alpha), alpha)
    return c.true_divide(i0(c.multiply(beta, c.sqrt(c.subtract(1, c.multiply(r, r))))), i0(beta))


# ---- calculus ---------------------------------------------------------------------------------


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of y (over x, or with spacing dx) by the trapezoidal rule along `axis`."""
    if x is None:
        ya = c.convert_inexact(y)
        d = c._lift(dx)
        if d.ndim > 0:
            d = d.reshape((1,) * (ya.ndim - d.ndim) + d.shape)
            d = moveaxis(d, axis, -1)
    else:
        ya, xa = _promote_inexact(y, x)
        d = diff(xa) if xa.ndim == 1 else moveaxis(diff(xa, axis=axis), axis, -1)
    ya = moveaxis(ya, axis, -1)
    if d.ndim == 0 or d.shape[-1] == 1:
        dr = d if d.ndim == 0 else d[..., 0]
        ends = c.multiply(0.5, c.add(ya[..., 0], ya[..., -1]))
        return c.multiply(dr, c.subtract(_sum(ya, axis=-1), ends))
    return c.multiply(0.5, _sum(c.multiply(d, c.add(ya[..., 1:], ya[..., :-1])), axis=-1))


def _promote_inexact(*xs):
    arrs = [c._lift(x) for x in xs]
    dt, weak = pdt.result_type_weak(*[(a.dtype, a.weak_type) for a in arrs])
    if not pdt.is_inexact(dt):
        dt = pdt.default_float()
    return [convert(a, dt, weak=weak) for a in arrs]


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
    """`p` with jumps larger than `discont` along `axis` replaced by their complement modulo
    `period`."""
    pa, per = (c._lift(v) for v in (p, period))
    dt, weak = pdt.result_type_weak((pa.dtype, pa.weak_type), (per.dtype, per.weak_type))
    pa, per = convert(pa, dt, weak=weak), convert(per, dt, weak=weak)
    if dt.kind == "c":
        raise ValueError("unwrap does not support complex inputs")
    if pa.shape[axis] == 0:
        return pa
    if discont is None:
        discont = c.true_divide(per, 2)
    interval = arith.floor_divide(per, 2) if dt.kind in "iu" else c.true_divide(per, 2)
    dd = diff(pa, axis=axis)
    ddmod = c.subtract(arith.remainder(c.add(dd, interval), per), interval)
    ddmod = c.where(c.logical_and(c.equal(ddmod, c.negative(interval)), c.greater(dd, 0)),
                    interval, ddmod)  # fmt: skip
    correct = c.where(c.less(c.abs(dd), discont), 0, c.subtract(ddmod, dd))
    n = pa.shape[axis]
    ax = axis % pa.ndim
    first = pa[(slice(None),) * ax + (slice(0, 1),)]
    rest = pa[(slice(None),) * ax + (slice(1, n),)]
    return concatenate([first, c.add(rest, cumsum(correct, axis=ax))], axis=ax)


# ---- spaces and fromfunction ------------------------------------------------------------------


def _space_dtype(start, stop, dtype):
    if dtype is None:
        dt = c.result_type(start, stop)
        return dt if pdt.is_inexact(dt) else pdt.default_float()
    return pdt.canonicalize(np.dtype(dtype))


def _inexact_dtype(dt):
    return dt if pdt.is_inexact(dt) else pdt.default_float()


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None, axis=0):
    """`base ** linspace(start, stop, num)`."""
    num, axis = operator.index(num), operator.index(axis)
    dt = _space_dtype(start, stop, dtype)
    cdt = _inexact_dtype(dt)
    a, b = c.astype(start, cdt), c.astype(stop, cdt)
    lin = linspace(a, b, num, endpoint=endpoint, axis=axis)
    return convert(arith.power(base, lin), dt)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """Numbers spaced evenly on a log scale from start to stop."""
    num, axis = operator.index(num), operator.index(axis)
    dt = _space_dtype(start, stop, dtype)
    cdt = _inexact_dtype(dt)
    a, b = c.astype(start, cdt), c.astype(stop, cdt)
    sign = c.sign(a)
    res = c.multiply(sign, logspace(c.log10(c.true_divide(a, sign)),
                                    c.log10(c.true_divide(b, sign)), num, endpoint=endpoint,
                                    base=10.0, dtype=cdt, axis=0))  # fmt: skip
    axis = axis % res.ndim
    if axis != 0:
        res = transpose(res, (*range(1, axis + 1), 0, *range(axis + 1, res.ndim)))
    return convert(res, dt)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """function(i0, i1, ...) mapped over every index of `shape` (vmapped over each axis, as
    jax.numpy does, so the function sees scalar indices)."""
    shape = tuple(operator.index(s) for s in shape)
    f = function
    for i in range(len(shape)):
        in_axes = [0 if i == j else None for j in range(len(shape))]
        f = vmap(f, in_axes=tuple(in_axes[::-1]))
    return f(*(arange(s, dtype=dtype) for s in shape), **kwargs)


# ---- products ---------------------------------------------------------------------------------


def matvec(x1, x2, /):
    """Batched matrix-vector product: x1 (..., M, N) times x2 (..., N) -> (..., M)."""
    a, b = c._lift(x1), c._lift(x2)
    if a.ndim < 2 or b.ndim < 1:
        raise ValueError(f"matvec: x1 must be at least 2-D and x2 at least 1-D, got "
                         f"{a.shape} and {b.shape}")  # fmt: skip
    return matmul(a, expand_dims(b, -1))[..., 0]


def vecmat(x1, x2, /):
    """Batched conjugate vector-matrix product: conj(x1) (..., M) times x2 (..., M, N)."""
    a, b = c._lift(x1), c._lift(x2)
    if a.ndim < 1 or b.ndim < 2:
        raise ValueError(f"vecmat: x1 must be at least 1-D and x2 at least 2-D, got "
                         f"{a.shape} and {b.shape}")  # fmt: skip
    return matmul(expand_dims(arith.conj(a), -2), b)[..., 0, :]
