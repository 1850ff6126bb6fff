"""Differences, gradients and interpolation (ediff1d, gradient, interp), with kron,
logaddexp2, heaviside, select, piecewise and apply_along_axis, each computed as jax.numpy
computes it (polyval lives in `_poly`)."""

from __future__ import annotations

import itertools

import numpy as np

from purejit import dtypes as pdt
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._indexing import take
from purejit.numpy._manip import _slice_axis
from purejit.numpy._program import as_program
from purejit.numpy._setops import searchsorted
from purejit.numpy._shape import (
    _axis,
    concatenate,
    moveaxis,
    normalize_axes,
    ravel,
    reshape,
    stack,
    transpose,
)
from purejit.numpy._sorting import argsort

# ---- differences ------------------------------------------------------------------------------


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences between consecutive elements of the flattened array, with optional values
    before and after."""
    x = ravel(c._lift(ary))
    out = c.subtract(x[1:], x[:-1])
    parts = [out]
    if to_begin is not None:
        parts.insert(0, ravel(c.asarray(to_begin, dtype=x.dtype)))
    if to_end is not None:
        parts.append(ravel(c.asarray(to_end, dtype=x.dtype)))
    return concatenate(parts) if len(parts) > 1 else out


def _gradient_along(a, h, axis: int):
    def sl(x, start, stop):
        n = x.shape[axis]
        return _slice_axis(x, start % (n + 1) if start < 0 else start,
                           stop % (n + 1) if stop < 0 else stop, axis)  # fmt: skip

    n = a.shape[axis]
    upper = c.subtract(sl(a, 1, 2), sl(a, 0, 1))
    lower = c.subtract(sl(a, n - 1, n), sl(a, n - 2, n - 1))
    if np.ndim(h) == 0:
        inner = c.true_divide(c.multiply(c.subtract(sl(a, 2, n), sl(a, 0, n - 2)), 0.5), h)
        lower, upper = c.true_divide(lower, h), c.true_divide(upper, h)
    else:
        h = c._lift(h)
        if h.ndim != 1 or h.shape[0] != n:
            raise ValueError("gradient: the coordinates must be 1-D and match the axis length")
        shape = [1] * a.ndim
        shape[axis] = n
        h = reshape(c.convert(h, a.dtype), shape)
        upper = c.true_divide(upper, c.subtract(sl(h, 1, 2), sl(h, 0, 1)))
        lower = c.true_divide(lower, c.subtract(sl(h, n - 1, n), sl(h, n - 2, n - 1)))
        dx1 = c.subtract(sl(h, 1, n - 1), sl(h, 0, n - 2))
        dx2 = c.subtract(sl(h, 2, n), sl(h, 1, n - 1))
        wa = c.true_divide(c.negative(dx2), c.multiply(dx1, c.add(dx1, dx2)))
        wb = c.true_divide(c.subtract(dx2, dx1), c.multiply(dx1, dx2))
        wc = c.true_divide(dx1, c.multiply(dx2, c.add(dx1, dx2)))
        inner = c.add(c.add(c.multiply(wa, sl(a, 0, n - 2)), c.multiply(wb, sl(a, 1, n - 1))),
                      c.multiply(wc, sl(a, 2, n)))  # fmt: skip
    return concatenate([upper, inner, lower], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of `f` by central differences inside and one-sided ones at the edges;
    `varargs` are the spacings (scalars) or coordinates (1-D arrays) per axis."""
    if edge_order is not None:
        raise NotImplementedError("gradient: edge_order is not supported (as in jax.numpy)")
    a = c.convert_inexact(c._lift(f))
    axes = normalize_axes(axis, a.ndim, "gradient")
    if not axes:
        return []
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("gradient: give one spacing per axis, or one for all")
    if min(a.shape[ax] for ax in axes) < 2:
        raise ValueError("gradient: each axis needs at least 2 elements")
    out = [_gradient_along(a, h, ax) for ax, h in zip(axes, spacing)]
    return out[0] if len(axes) == 1 and (axis is not None or a.ndim == 1) else out


# ---- interpolation ----------------------------------------------------------------------------


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points (xp, fp) at x (xp increasing); outside
    [xp[0], xp[-1]] the end values, or `left`/`right`, or periodic with `period`."""
    x, xp, fp = c._lift(x), c._lift(xp), c._lift(fp)
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("interp: xp and fp must be one-dimensional")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError("interp: xp and fp must have the same length")
    if xp.shape[0] == 0:
        raise ValueError("interp: xp must not be empty")
    if period is not None and (left is not None or right is not None):
        raise ValueError("interp: left and right are meaningless with period")
    args = [x, xp, fp] + [c._lift(v) for v in (left, right, period) if v is not None]
    has = (left is not None, right is not None, period is not None)

    def run(x, xp, fp, *rest):
        rest = list(rest)
        lft = rest.pop(0) if has[0] else None
        rgt = rest.pop(0) if has[1] else None
        per = rest.pop(0) if has[2] else None
        return [_interp(x, xp, fp, lft, rgt, per)]

    (out,) = as_program("interp", run, args, has)
    return out


def _interp(x, xp, fp, left, right, period):
    dt, _ = pdt.result_type_weak(*[(v.dtype, v.weak_type) for v in (x, xp, fp)])
    dt = dt if pdt.is_inexact(dt) else pdt.default_float()
    x, xp, fp = c.convert(x, dt), c.convert(xp, dt), c.convert(fp, dt)
    if period is not None:
        period = c.abs(c.convert(period, dt))
        x, xp = arith.remainder(x, period), arith.remainder(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = concatenate([c.subtract(xp[-1:], period), xp, c.add(xp[:1], period)])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    n = xp.shape[0]
    i = arith.clip(searchsorted(xp, x, side="right"), 1, n - 1)
    im1 = c.subtract(i, 1)
    df = c.subtract(take(fp, i), take(fp, im1))
    dx = c.subtract(take(xp, i), take(xp, im1))
    delta = c.subtract(x, take(xp, im1))
    rdt = np.real(np.zeros((), dt)).dtype if dt.kind == "c" else dt
    eps = np.spacing(np.finfo(rdt).eps) if rdt != pdt.bfloat16 else 0.0
    dx0 = c.less_equal(c.abs(dx), c.convert(eps, rdt))
    step = c.multiply(c.true_divide(delta, c.where(dx0, 1, dx)), df)
    f = c.where(dx0, take(fp, im1), c.add(take(fp, im1), step))
    if period is None:
        f = c.where(c.less(x, xp[0]), fp[0] if left is None else c.convert(left, dt), f)
        f = c.where(c.greater(x, xp[-1]), fp[-1] if right is None else c.convert(right, dt), f)
    return f


# ---- products --------------------------------------------------------------------------------


def kron(a, b):
    """The Kronecker product: blocks a[i, j] * b."""
    x, y = c._lift(a), c._lift(b)
    dt, weak = pdt.result_type_weak((x.dtype, x.weak_type), (y.dtype, y.weak_type))
    x, y = c.convert(x, dt, weak=weak), c.convert(y, dt, weak=weak)
    nd = max(x.ndim, y.ndim)
    x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
    y = reshape(y, (1,) * (nd - y.ndim) + y.shape)
    xs = reshape(x, tuple(itertools.chain.from_iterable((d, 1) for d in x.shape)))
    ys = reshape(y, tuple(itertools.chain.from_iterable((1, d) for d in y.shape)))
    return reshape(c.multiply(xs, ys), tuple(p * q for p, q in zip(x.shape, y.shape)))


# ---- elementwise ------------------------------------------------------------------------------


def logaddexp2(x1, x2, /):
    """log2(2**x1 + 2**x2) without overflow, with JAX's derivative (see `c.logaddexp`)."""
    a, b = c.promote_args("logaddexp2", x1, x2, to_inexact=True)
    return arith.DERIVATIVE_RULES.get("logaddexp2", logaddexp2_value)(a, b)


def logaddexp2_value(a, b):
    """`logaddexp2` of operands of one inexact dtype, by its formula."""
    if a.dtype.kind == "c":
        raise NotImplementedError("logaddexp2 of complex arrays needs the `complex` op")
    amax = c.maximum(a, b)
    invln2 = c.convert(1 / np.log(2), a.dtype, weak=a.weak_type)
    delta = c.subtract(a, b)
    soft = c.add(amax, c.multiply(invln2, c.log1p(c.exp2(c.negative(c.abs(delta))))))
    return c.where(arith.isnan(delta), c.add(a, b), soft)


def heaviside(x1, x2, /):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0."""
    a, b = c.promote_args("heaviside", x1, x2, to_inexact=True)
    zero = c.convert(0, a.dtype, weak=a.weak_type)
    one = c.convert(1, a.dtype, weak=a.weak_type)
    at_zero = c.where(arith.isnan(a), a, b)
    return c.where(c.less(a, zero), zero, c.where(c.greater(a, zero), one, at_zero))


def select(condlist, choicelist, default=0):
    """choicelist[i] where condlist[i] is the first true condition, else `default`."""
    if len(condlist) != len(choicelist):
        raise ValueError(
            f"select: condlist and choicelist must have the same length, got "
            f"{len(condlist)} and {len(choicelist)}"
        )
    if len(condlist) == 0:
        raise ValueError("select: condlist must be non-empty")
    vals = [c._lift(v) for v in (default, *choicelist)]
    dt, weak = pdt.result_type_weak(*[(v.dtype, v.weak_type) for v in vals])
    vals = [c.convert(v, dt, weak=weak) for v in vals]
    conds = [c._lift(cd) for cd in condlist]
    for cd in conds:
        if cd.dtype != np.bool_:
            raise TypeError(f"select: condlist must hold bool arrays, got {cd.dtype}")
    out = vals[0]
    for cd, v in zip(reversed(conds), reversed(vals[1:])):
        out = c.where(cd, v, out)
    return out


def piecewise(x, condlist, funclist, *args, **kw):
    """funclist[i](x) where condlist[i] holds (the last true condition wins); one extra
    function or value is the default. Each function is applied to the whole array, so it must
    work elementwise (jax.numpy applies it per element)."""
    x = c._lift(x)
    conds = condlist
    if isinstance(conds, (c.ConcreteArray, c.Tracer)):
        conds = [conds[i] for i in range(conds.shape[0])] if conds.ndim > x.ndim else [conds]
    conds = [c.convert(c._lift(cd), np.bool_) for cd in conds]
    nc, nf = len(conds), len(funclist)
    if nf == nc + 1:
        funcs = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funcs = [0] + list(funclist)
    else:
        raise ValueError(f"piecewise: with {nc} conditions, give {nc} or {nc + 1} functions")

    def value(f):
        v = f(x, *args, **kw) if callable(f) else f
        return c.broadcast_to(c.astype(c._lift(v), x.dtype), x.shape)

    out = value(funcs[0])
    for cd, f in zip(conds, funcs[1:]):
        out = c.where(c.broadcast_to(cd, x.shape), value(f), out)
    return out


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """`func1d` applied to every 1-D slice of `arr` along `axis`; the results take that
    axis's place. The slices are applied one by one (unrolled), until purejit has vmap."""
    x = c._lift(arr)
    ax = _axis(axis, x.ndim, "apply_along_axis")
    x = moveaxis(x, ax, -1)
    outer = x.shape[:-1]
    results = [c._lift(func1d(x[idx], *args, **kwargs)) for idx in np.ndindex(*outer)]
    if not results:
        raise ValueError("apply_along_axis: cannot apply to an empty array")
    out = reshape(stack(results), outer + results[0].shape)
    # the function's result dims go where `axis` was
    nd = results[0].ndim
    perm = list(range(ax)) + list(range(len(outer), len(outer) + nd))
    perm += list(range(ax, len(outer)))
    return transpose(out, perm)
