"""Statistics and comparisons beyond the basic reductions: quantile, percentile, median (and
their nan* forms), the nan* reductions, average, ptp, cov, corrcoef, isclose, allclose,
array_equal, array_equiv, nan_to_num — each computed as jax.numpy computes it."""

from __future__ import annotations

import operator

import ml_dtypes
import numpy as np

from purejit import dtypes as pdt
from purejit import lax
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy import _reductions as r
from purejit.numpy._creation import full
from purejit.numpy._indexing import take_along_axis
from purejit.numpy._linalg import dot
from purejit.numpy._manip import atleast_2d, diag
from purejit.numpy._program import as_program
from purejit.numpy._shape import concatenate, expand_dims, normalize_axes, reshape, transpose
from purejit.numpy._sorting import cumprod, cumsum

# ---- comparisons ------------------------------------------------------------------------------


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """|a - b| <= atol + rtol * |b| elementwise; infinities are close only to themselves, NaN
    to nothing (to NaN with `equal_nan`)."""
    a, b = c.promote_args("isclose", a, b)
    if not pdt.is_inexact(a.dtype):
        return c.equal(a, b)
    rdt = np.real(np.zeros((), a.dtype)).dtype if a.dtype.kind == "c" else a.dtype
    rtol, atol = c.convert(c._lift(rtol), rdt), c.convert(c._lift(atol), rdt)
    out = c.less_equal(c.abs(c.subtract(a, b)), c.add(atol, c.multiply(rtol, c.abs(b))))
    a_inf, b_inf = arith.isinf(a), arith.isinf(b)
    out = c.logical_and(out, c.logical_not(c.logical_or(a_inf, b_inf)))
    out = c.logical_or(out, c.logical_and(c.logical_and(a_inf, b_inf), c.equal(a, b)))
    a_nan, b_nan = arith.isnan(a), arith.isnan(b)
    out = c.logical_and(out, c.logical_not(c.logical_or(a_nan, b_nan)))
    if equal_nan:
        out = c.logical_or(out, c.logical_and(a_nan, b_nan))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every pair of elements is `isclose` (a scalar bool array)."""
    return r.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
    """Whether both arrays have one shape and equal elements (NaN == NaN with equal_nan)."""
    x, y = c._lift(a1), c._lift(a2)
    if x.shape != y.shape:
        return c.asarray(False)
    eq = c.equal(x, y)
    if equal_nan:
        eq = c.logical_or(eq, c.logical_and(arith.isnan(x), arith.isnan(y)))
    return r.all(eq)


def array_equiv(a1, a2):
    """Whether the arrays broadcast to one shape and are equal there."""
    x, y = c._lift(a1), c._lift(a2)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return c.asarray(False)
    return r.all(c.equal(x, y))


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """NaN -> `nan`, +inf -> `posinf` (default: the largest finite value), -inf -> `neginf`
    (default: the most negative finite value); complex parts separately."""
    x = c._lift(x)
    if not pdt.is_inexact(x.dtype):
        return x
    if x.dtype.kind == "c":
        re = nan_to_num(arith.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(arith.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return lax.complex(re, im)
    big = ml_dtypes.finfo(x.dtype).max
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    w = x.weak_type
    out = c.where(arith.isnan(x), c.convert(c._lift(nan), x.dtype, weak=w), x)
    out = c.where(c.logical_and(arith.isinf(out), c.greater(out, 0)),
                  c.convert(c._lift(posinf), x.dtype, weak=w), out)  # fmt: skip
    out = c.where(c.logical_and(arith.isinf(out), c.less(out, 0)),
                  c.convert(c._lift(neginf), x.dtype, weak=w), out)  # fmt: skip
    return out


# ---- nan reductions -------------------------------------------------------------------------


def _nan_reduction(a, fn, identity, nan_if_all_nan: bool, axis, keepdims, where, **kw):
    x = c._lift(a)
    if not pdt.is_inexact(x.dtype):
        return fn(x, axis=axis, keepdims=keepdims, where=where, **kw)
    nan = arith.isnan(x)
    fill = c.convert(c._lift(identity(x.dtype)), x.dtype)
    out = fn(c.where(nan, fill, x), axis=axis, keepdims=keepdims, where=where, **kw)
    if nan_if_all_nan:
        all_nan = r.all(nan, axis=axis, keepdims=keepdims)
        out = c.where(all_nan, c.convert(np.nan, out.dtype), out)
    return out


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """sum, counting NaNs as zero."""
    return _nan_reduction(a, r.sum, lambda d: 0, False, axis, keepdims, where, dtype=dtype,
                          initial=initial)  # fmt: skip


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """prod, counting NaNs as one."""
    return _nan_reduction(a, r.prod, lambda d: 1, False, axis, keepdims, where, dtype=dtype,
                          initial=initial)  # fmt: skip


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """max ignoring NaNs (NaN where every element is NaN)."""
    return _nan_reduction(a, r.max, lambda d: -np.inf, True, axis, keepdims, where,
                          initial=initial)  # fmt: skip


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """min ignoring NaNs (NaN where every element is NaN)."""
    return _nan_reduction(a, r.min, lambda d: np.inf, True, axis, keepdims, where,
                          initial=initial)  # fmt: skip


def nanargmax(a, axis=None, out=None, keepdims=False):
    """argmax ignoring NaNs (-1 where every element is NaN)."""
    return _nan_arg(a, axis, keepdims, r.argmax, -np.inf)


def nanargmin(a, axis=None, out=None, keepdims=False):
    """argmin ignoring NaNs (-1 where every element is NaN)."""
    return _nan_arg(a, axis, keepdims, r.argmin, np.inf)


def _nan_arg(a, axis, keepdims, fn, fill):
    x = c._lift(a)
    if not pdt.is_inexact(x.dtype):
        return fn(x, axis=axis, keepdims=keepdims)
    nan = arith.isnan(x)
    res = fn(c.where(nan, c.convert(fill, x.dtype), x), axis=axis, keepdims=keepdims)
    return c.where(r.all(nan, axis=axis, keepdims=keepdims), c.convert(-1, res.dtype), res)


def nancumsum(a, axis=None, dtype=None, out=None):
    """cumsum, counting NaNs as zero."""
    x = c._lift(a)
    if pdt.is_inexact(x.dtype):
        x = c.where(arith.isnan(x), c.convert(0, x.dtype), x)
    return cumsum(x, axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    """cumprod, counting NaNs as one."""
    x = c._lift(a)
    if pdt.is_inexact(x.dtype):
        x = c.where(arith.isnan(x), c.convert(1, x.dtype), x)
    return cumprod(x, axis=axis, dtype=dtype)


def _nan_count(x, axis, keepdims, where, dt):
    valid = c.logical_not(arith.isnan(x))
    return r.sum(valid, axis=axis, keepdims=keepdims, where=where, dtype=dt)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """mean ignoring NaNs (NaN where every element is NaN)."""
    x = c._lift(a)
    if not pdt.is_inexact(x.dtype):
        return r.mean(x, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    dt = pdt.canonicalize(dtype) if dtype is not None else x.dtype
    n = _nan_count(x, axis, keepdims, where, dt)
    s = nansum(x, axis=axis, dtype=dt, keepdims=keepdims, where=where)
    return c.true_divide(s, n)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """var ignoring NaNs (half floats accumulate in float32, as var)."""
    x = c._lift(a)
    acc, out_dt = r._var_dtypes(x.dtype, dtype)
    x = c.convert(x, acc)
    if mean is None:
        m = nanmean(x, axis=axis, dtype=acc, keepdims=True, where=where)
    else:
        m = c.convert(c._lift(mean), acc)
    nan = arith.isnan(x)
    # NaN lanes become 0 before squaring, so their gradient is 0, not 0 * NaN
    d = c.subtract(x, m)
    sq = r._abs2(c.where(nan, c.convert(0, d.dtype), d))
    n = r.sum(c.logical_not(nan), axis=axis, keepdims=keepdims, where=where)
    n = c.subtract(n, ddof)
    empty = c.less_equal(n, c.convert(0, n.dtype))
    s = r.sum(sq, axis=axis, keepdims=keepdims, where=where)
    s = c.where(empty, c.convert(np.nan, s.dtype), s)
    divisor = c.where(empty, c.convert(1, n.dtype), n)
    return c.convert(c.true_divide(s, c.convert(divisor, s.dtype)), out_dt)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """std ignoring NaNs."""
    return c.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean))


def ptp(a, axis=None, out=None, keepdims=False):
    """max - min along `axis`."""
    x = c._lift(a)
    return c.subtract(
        r.max(x, axis=axis, keepdims=keepdims), r.min(x, axis=axis, keepdims=keepdims)
    )


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The (weighted) mean along `axis`; with `returned`, also the sum of the weights."""
    x = c._lift(a)
    if weights is None:
        avg = r.mean(x, axis=axis, keepdims=keepdims)
        n = x.size // max(avg.size, 1) if avg.size else 0
        wsum = full(avg.shape, c.convert(n, avg.dtype))
    else:
        x, w = c.promote_args("average", x, weights, to_inexact=True)
        w0 = c._lift(weights)
        if w0.shape != c._lift(a).shape:
            if axis is None:
                raise ValueError("average: axis must be given when weights and a differ in shape")
            if w0.ndim != 1:
                raise ValueError("average: 1-D weights expected when shapes differ")
            (ax,) = normalize_axes(axis, x.ndim, "average")
            if w0.shape[0] != x.shape[ax]:
                raise ValueError("average: length of weights differs from the axis")
            shape = [1] * x.ndim
            shape[ax] = w0.shape[0]
            w = c.broadcast_to(reshape(c.convert(w0, x.dtype), shape), x.shape)
        wsum = r.sum(w, axis=axis, keepdims=keepdims)
        avg = c.true_divide(r.sum(c.multiply(x, w), axis=axis, keepdims=keepdims), wsum)
    if returned:
        if avg.shape != wsum.shape:
            wsum = c.broadcast_to(wsum, avg.shape)
        return avg, wsum
    return avg


# ---- quantiles ------------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(a, q, axis, method, keepdims, squash_nans, name):
    """As jax.numpy, one compiled program outside jit (so the fused arithmetic rounds alike)."""
    axis = tuple(axis) if isinstance(axis, list) else axis
    static = (axis, method, bool(keepdims), squash_nans, name)
    (out,) = as_program(
        name,
        lambda a, q: [_quantile_traced(a, q, axis, method, keepdims, squash_nans, name)],
        [c._lift(a), c._lift(q)],
        static,
    )
    return out


def _quantile_traced(a, q, axis, method, keepdims, squash_nans, name):
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {_METHODS}, got {method!r}")
    x = c.convert_inexact(c._lift(a))
    q = c._lift(q)
    if x.dtype.kind == "c":
        raise ValueError(f"{name}: complex input is not supported (as in jax.numpy)")
    if q.ndim > 1:
        raise ValueError(f"{name}: q must have rank <= 1, got shape {list(q.shape)}")
    axes = normalize_axes(axis, x.ndim, name)
    keep_shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
    rest = [i for i in range(x.ndim) if i not in axes]
    # the reduced axes, flattened, go last
    x = transpose(x, rest + list(axes))
    red_shape = tuple(x.shape[: len(rest)])
    x = reshape(x, red_shape + (-1,))
    n = x.shape[-1]
    qdt = q.dtype
    qe = reshape(q, q.shape + (1,) * len(red_shape))
    if squash_nans:
        x = c.where(arith.isnan(x), c.convert(np.nan, x.dtype), x)
        x = lax.sort(x, dimension=-1)
        counts = r.sum(c.logical_not(arith.isnan(x)), axis=-1, dtype=qdt)
        hi_idx = c.subtract(counts, c.convert(1, qdt))
        pos = c.multiply(qe, hi_idx)
    else:
        x = c.where(r.any(arith.isnan(x), axis=-1, keepdims=True), c.convert(np.nan, x.dtype), x)
        x = lax.sort(x, dimension=-1)
        hi_idx = c.convert(n - 1, qdt)
        pos = c.multiply(qe, c.convert(n - 1, qdt))
    low, high = c.floor(pos), c.ceil(pos)
    high_w = c.subtract(pos, low)
    low_w = c.subtract(c.convert(1, qdt, weak=False), high_w)
    zero = c.convert(0, qdt)
    low = c.maximum(zero, c.minimum(low, hi_idx))
    high = c.maximum(zero, c.minimum(high, hi_idx))
    out_shape = tuple(q.shape) + red_shape
    idt = pdt.default_int()
    xb = c.broadcast_to(x, out_shape + (n,))

    def gather(i):
        i = c.broadcast_to(c.convert(i, idt), out_shape)
        return take_along_axis(xb, expand_dims(i, -1), axis=-1)[..., 0]

    lo_v, hi_v = gather(low), gather(high)
    low_w, high_w = c.broadcast_to(low_w, out_shape), c.broadcast_to(high_w, out_shape)
    if method == "linear":
        res = c.add(
            c.multiply(c.convert(lo_v, qdt), low_w), c.multiply(c.convert(hi_v, qdt), high_w)
        )
    elif method == "lower":
        res = lo_v
    elif method == "higher":
        res = hi_v
    elif method == "nearest":
        res = c.where(c.less_equal(high_w, c.convert(0.5, qdt)), lo_v, hi_v)
    else:
        res = c.multiply(c.add(lo_v, hi_v), c.convert(0.5, lo_v.dtype))
    if keepdims:
        res = reshape(res, tuple(q.shape) + tuple(keep_shape))
    return res


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, interpolation=None):  # fmt: skip
    """The q-th quantiles (q in [0, 1]) along `axis`; NaN if a reduced slice has a NaN."""
    if interpolation is not None:
        raise TypeError("quantile: the interpolation argument was renamed to method")
    return _quantile(a, q, axis, method, keepdims, False, "quantile")


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, interpolation=None):  # fmt: skip
    """quantile ignoring NaNs."""
    if interpolation is not None:
        raise TypeError("nanquantile: the interpolation argument was renamed to method")
    return _quantile(a, q, axis, method, keepdims, True, "nanquantile")


def _percent(q):
    q = c.convert_inexact(c._lift(q))
    return c.true_divide(q, c.convert(100, q.dtype, weak=True))


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, interpolation=None):  # fmt: skip
    """The q-th percentiles (q in [0, 100]) along `axis`."""
    if interpolation is not None:
        raise TypeError("percentile: the interpolation argument was renamed to method")
    return _percentile(a, q, axis, method, keepdims, False, "percentile")


def _percentile(a, q, axis, method, keepdims, squash_nans, name):
    axis = tuple(axis) if isinstance(axis, list) else axis
    static = (axis, method, bool(keepdims), squash_nans, name)

    def run(a, q):
        return [_quantile_traced(a, _percent(q), axis, method, keepdims, squash_nans, name)]

    (out,) = as_program(name, run, [c._lift(a), c._lift(q)], static)
    return out


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, interpolation=None):  # fmt: skip
    """percentile ignoring NaNs."""
    if interpolation is not None:
        raise TypeError("nanpercentile: the interpolation argument was renamed to method")
    return _percentile(a, q, axis, method, keepdims, True, "nanpercentile")


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along `axis` (the mean of the two middle values for even lengths)."""
    return quantile(a, 0.5, axis=axis, method="midpoint", keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """median ignoring NaNs."""
    return nanquantile(a, 0.5, axis=axis, method="midpoint", keepdims=keepdims)


# ---- covariance -----------------------------------------------------------------------------


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows (columns if not rowvar) of m."""
    if y is not None:
        x, yy = c.promote_args("cov", m, y, to_inexact=True)
        m, y = c.convert(c._lift(m), x.dtype), c.convert(c._lift(y), x.dtype)
        if y.ndim > 2:
            raise ValueError("cov: y has more than 2 dimensions")
    else:
        m = c.convert_inexact(c._lift(m))
    if m.ndim > 2:
        raise ValueError("cov: m has more than 2 dimensions")
    X = atleast_2d(m)
    if not rowvar and X.shape[0] != 1:
        X = transpose(X)
    if X.shape[0] == 0:
        return reshape(c.asarray(np.zeros((0,), X.dtype)), (0, 0))
    if y is not None:
        Y = atleast_2d(y)
        if not rowvar and Y.shape[0] != 1:
            Y = transpose(Y)
        X = concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 1 if not bias else 0
    ddof = operator.index(ddof)
    w = None
    if fweights is not None:
        f = c._lift(fweights)
        if f.ndim > 1 or f.shape[0] != X.shape[1]:
            raise ValueError("cov: fweights must be 1-D with one weight per observation")
        w = f
    if aweights is not None:
        aw = c._lift(aweights)
        if aw.ndim > 1 or aw.shape[0] != X.shape[1]:
            raise ValueError("cov: aweights must be 1-D with one weight per observation")
        w = aw if w is None else c.multiply(w, aw)
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = X.shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = c.subtract(w_sum, ddof)
    else:
        fact = c.subtract(
            w_sum, c.true_divide(c.multiply(ddof, r.sum(c.multiply(w, aweights))), w_sum)
        )
    X = c.subtract(X, avg[:, None])
    XT = transpose(X) if w is None else transpose(c.multiply(X, c.convert(w, X.dtype)[None, :]))
    if XT.dtype.kind == "c":
        XT = arith.conj(XT)
    out = c.true_divide(dot(X, XT), fact)
    return reshape(out, [d for d in out.shape if d != 1])


def corrcoef(x, y=None, rowvar=True):
    """Pearson correlation coefficients: cov normalised by the standard deviations, clipped
    to [-1, 1]."""
    cv = cov(x, y, rowvar)
    if cv.ndim == 0:
        return c.true_divide(cv, cv)
    d = diag(cv)
    sd = c.convert(c.sqrt(arith.real(d)), cv.dtype)
    cv = c.true_divide(c.true_divide(cv, sd[:, None]), sd[None, :])
    if cv.dtype.kind == "c":
        return lax.complex(arith.clip(arith.real(cv), -1, 1), arith.clip(arith.imag(cv), -1, 1))
    return arith.clip(cv, -1, 1)
