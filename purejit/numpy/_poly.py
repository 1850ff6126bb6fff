"""Polynomials and vectorize: vander, polyfit (least squares through linalg.lstsq), roots
(eigenvalues of the companion matrix), polyval and `horner` (Horner's rule, also behind
scipy.special's Bessel series), the arithmetic (poly, polyadd, polysub, polymul, polydiv,
polyder, polyint), vectorize (through purejit's vmap); each as jax.numpy computes it."""

from __future__ import annotations

import functools
import operator
import re

import ml_dtypes
import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy import linalg
from purejit.lax._lift import convert
from purejit.numpy._convolve import convolve
from purejit.numpy._creation import arange, ones, zeros
from purejit.numpy._manip import atleast_1d, diag, flip
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._shape import concatenate, expand_dims, reshape, stack
from purejit.tracing import Tracer
from purejit.transforms.vmap import vmap

# ---- polynomials --------------------------------------------------------------------------


def vander(x, N=None, increasing: bool = False):
    """The Vandermonde matrix: columns x**(N-1), ..., x**0 (reversed if `increasing`)."""
    x = c._lift(x)
    if x.ndim != 1:
        raise ValueError(f"vander: x must be 1-D, got shape {list(x.shape)}")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise ValueError("vander: N must be non-negative")
    powers = arange(n, dtype=x.dtype) if n else zeros((0,), x.dtype)
    if not increasing:
        powers = flip(powers)
    return arith.power(x[:, None], expand_dims(powers, 0))


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial of degree `deg` through (x, y), highest power first
    (the columns of a 2-D y are fitted separately)."""
    x, y = c._lift(x), c._lift(y)
    dt, _ = pdt.result_type_weak((x.dtype, False), (y.dtype, False))
    dt = dt if pdt.is_inexact(dt) else pdt.default_float()
    x, y = c.convert(x, dt), c.convert(y, dt)
    deg = operator.index(deg)
    if deg < 0:
        raise ValueError("polyfit: expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("polyfit: expected 1-D vector for x")
    if x.size == 0:
        raise TypeError("polyfit: expected non-empty vector for x")
    if y.ndim not in (1, 2):
        raise TypeError("polyfit: expected 1-D or 2-D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("polyfit: expected x and y to have the same length")
    if rcond is None:
        rcond = x.shape[0] * float(ml_dtypes.finfo(dt).eps)
    lhs, rhs = vander(x, deg + 1), y
    if w is not None:
        w = c.convert(c._lift(w), dt)
        if w.ndim != 1 or w.shape[0] != y.shape[0]:
            raise TypeError("polyfit: expected a 1-D w with the length of y")
        lhs = c.multiply(lhs, w[:, None])
        rhs = c.multiply(rhs, w if rhs.ndim == 1 else w[:, None])
    scale = c.sqrt(_sum(c.multiply(lhs, lhs), axis=0))
    lhs = c.true_divide(lhs, scale[None, :])
    coef, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    coef = c.true_divide(coef, scale if coef.ndim == 1 else scale[:, None])
    if full:
        return coef, resids, rank, s, c.asarray(rcond, dtype=dt)
    if cov:
        raise NotImplementedError("polyfit(cov=True) is not supported yet")
    return coef


def roots(p, *, strip_zeros: bool = True):
    """The roots of the polynomial with coefficients p (highest power first), as complex
    numbers: the eigenvalues of its companion matrix. Leading zeros are dropped (which needs
    concrete values: outside jit, or strip_zeros=False)."""
    p = c.convert_inexact(c._lift(p))
    if p.ndim == 0:
        p = reshape(p, (1,))
    if p.ndim != 1:
        raise ValueError("roots: input must be a rank-1 array")
    if strip_zeros:
        if isinstance(p, Tracer):
            raise errors.ConcretizationTypeError(
                f"roots: stripping leading zeros needs concrete values; pass "
                f"strip_zeros=False under jit{errors.at(errors.user_location())}"
            )
        nz = np.flatnonzero(np.asarray(p.host) != 0)
        p = p[int(nz[0]) :] if nz.size else p[:0]
    n = p.shape[0]
    cdt = pdt.default_complex() if p.dtype != np.float64 else np.dtype(np.complex128)
    if n < 2:
        return zeros((0,), cdt)
    companion = diag(c.full_like_bool(zeros((n - 2,)), True), -1)
    companion = c.convert(companion, p.dtype)
    companion = companion.at[0, :].set(c.negative(c.true_divide(p[1:], p[0])))
    return linalg.eigvals(companion)


def horner(y, coefs):
    """sum_k coefs[k] y^k (Python numbers, lowest power first), keeping y's dtype and weak type."""
    acc = convert(coefs[-1], y.dtype, weak=y.weak_type)
    for ck in reversed(coefs[:-1]):
        acc = c.add(c.multiply(acc, y), ck)
    return acc


def polyval(p, x, *, unroll=16):
    """The polynomial with coefficients p (highest power first) at x, by Horner's rule."""
    p, x = c._lift(p), c._lift(x)
    dt, weak = pdt.result_type_weak((p.dtype, p.weak_type), (x.dtype, x.weak_type))
    p, x = c.convert(p, dt, weak=weak), c.convert(x, dt, weak=weak)
    shape = tuple(np.broadcast_shapes(p.shape[1:], x.shape))
    y = c.broadcast_to(c.convert(0, dt, weak=x.weak_type), shape)
    for k in range(p.shape[0]):
        y = c.add(c.multiply(y, x), p[k])
    return y


def _poly_args(name: str, *xs, inexact: bool):
    arrs = [c._lift(x) for x in xs]
    dt, weak = pdt.result_type_weak(*[(a.dtype, a.weak_type) for a in arrs])
    if inexact and not pdt.is_inexact(dt):
        dt = pdt.default_float()
    return [convert(a, dt, weak=weak) for a in arrs]


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots."""
    (z,) = _poly_args("poly", seq_of_zeros, inexact=True)
    z = atleast_1d(z)
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        raise NotImplementedError(
            "poly of a square matrix needs general eigenvalues (numpy.linalg.eigvals); pass "
            "the roots as a 1-D array"
        )
    if z.ndim != 1:
        raise ValueError("poly: input must be 1d or non-empty square 2d array")
    dt = z.dtype
    if z.shape[0] == 0:
        return ones((), dt)
    a = ones((1,), dt)
    for k in range(z.shape[0]):
        a = convolve(a, stack([convert(1, dt), c.negative(z[k])]), mode="full")
    return a


def polyadd(a1, a2):
    """The sum of two polynomials (coefficients highest power first)."""
    a, b = _poly_args("polyadd", a1, a2, inexact=False)
    if b.shape[0] <= a.shape[0]:
        return a.at[-b.shape[0] :].add(b) if b.shape[0] else a
    return b.at[-a.shape[0] :].add(a) if a.shape[0] else b


def polysub(a1, a2):
    """The difference of two polynomials."""
    a, b = _poly_args("polysub", a1, a2, inexact=False)
    return polyadd(a, c.negative(b))


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials."""
    a, b = _poly_args("polymul", a1, a2, inexact=True)
    if trim_leading_zeros:
        raise NotImplementedError(
            "polymul(trim_leading_zeros=True) needs concrete inputs; trim them with "
            "purejit.numpy.trim_zeros(..., 'f') first"
        )
    if a.shape[0] == 0:
        a = zeros((1,), b.dtype)
    if b.shape[0] == 0:
        b = zeros((1,), a.dtype)
    return convolve(a, b, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """The quotient and remainder of polynomial division u / v."""
    ua, va = _poly_args("polydiv", u, v, inexact=True)
    if trim_leading_zeros:
        raise NotImplementedError(
            "polydiv(trim_leading_zeros=True) is not supported; trim the remainder with "
            "purejit.numpy.trim_zeros on a concrete result"
        )
    m, n = ua.shape[0] - 1, va.shape[0] - 1
    scale = c.true_divide(1.0, va[0])
    q = zeros((max(m - n + 1, 1),), ua.dtype)
    for k in range(0, m - n + 1):
        d = c.multiply(scale, ua[k])
        q = q.at[k].set(d)
        ua = ua.at[k : k + n + 1].add(c.multiply(c.negative(d), va))
    return q, ua


def polyder(p, m: int = 1):
    """The m-th derivative of a polynomial."""
    m = operator.index(m)
    (pa,) = _poly_args("polyder", p, inexact=True)
    if m < 0:
        raise ValueError("polyder: order of derivative must be positive")
    if m == 0:
        return pa
    n = pa.shape[0]
    grid = np.arange(m, n)[None, :] - np.arange(m)[:, None]
    coeff = c.asarray(np.prod(grid, axis=0).astype(pa.dtype)) if n > m else zeros((0,), pa.dtype)
    return c.multiply(pa[: n - m], coeff[::-1])


def polyint(p, m: int = 1, k=None):
    """The m-th antiderivative of a polynomial, with integration constants k."""
    m = operator.index(m)
    pa, ka = _poly_args("polyint", p, 0 if k is None else k, inexact=True)
    if m < 0:
        raise ValueError("polyint: order of integral must be positive (see polyder)")
    ka = atleast_1d(ka)
    if ka.shape[0] == 1:
        ka = c.broadcast_to(ka[0], (m,))
    if ka.shape != (m,):
        raise ValueError("polyint: k must be a scalar or a rank-1 array of length 1 or m")
    if m == 0:
        return pa
    grid = np.arange(pa.shape[0] + m)[None, :] - np.arange(m)[:, None]
    coeff = np.maximum(1, grid).prod(0)[::-1]
    return c.true_divide(concatenate([pa, ka]), c.asarray(coeff.astype(pa.dtype)))


# ---- vectorize ------------------------------------------------------------------------------

_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARG = rf"\({_CORE}\)"
_ARGS = rf"{_ARG}(?:,{_ARG})*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature: str):
    sig = signature.replace(" ", "")
    if not re.match(_SIGNATURE, sig):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}")
    ins, outs = sig.split("->")

    def dims(group):
        return [tuple(re.findall(_DIM, arg)) for arg in re.findall(_ARG, group)]

    return dims(ins), dims(outs)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """`pyfunc` mapped over the leading (broadcast) dimensions of its array arguments, as
    NumPy's vectorize, through purejit's vmap (one traced call, not a Python loop).

    Args:
        pyfunc: the function of scalars (or of core-dimension arrays, with `signature`).
        excluded: positions (ints) or names (strs) of arguments passed through unchanged.
        signature: a generalized-ufunc signature such as "(n),(n)->()" naming the core
            dimensions each argument keeps.
    """
    if any(not isinstance(e, (int, str)) for e in excluded):
        raise TypeError("vectorize: excluded must hold only ints (positions) and strs (names)")
    core_in = _parse_signature(signature)[0] if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        static = {k: v for k, v in kwargs.items() if k in excluded}
        dyn_kw = {k: v for k, v in kwargs.items() if k not in excluded}
        names = list(dyn_kw)
        dyn = [(i, a) for i, a in enumerate(args) if i not in excluded]
        arrays = [c._lift(a) if not isinstance(a, (list, tuple)) else c.asarray(a)
                  for _, a in dyn] + [c._lift(dyn_kw[k]) for k in names]  # fmt: skip
        cores = core_in if core_in is not None else [()] * len(arrays)
        if len(cores) != len(arrays):
            raise TypeError(
                f"vectorize: the signature has {len(cores)} inputs, the call passes "
                f"{len(arrays)} arrays"
            )
        sizes: dict = {}
        loops = []
        for a, core in zip(arrays, cores):
            if a.ndim < len(core):
                raise ValueError(f"vectorize: an input of shape {a.shape} lacks core dims {core}")
            for d, n in zip(core, a.shape[a.ndim - len(core) :]):
                if sizes.setdefault(d, n) != n:
                    raise ValueError(f"vectorize: core dimension {d!r} is {sizes[d]} and {n}")
            loops.append(a.shape[: a.ndim - len(core)])
        loop = tuple(np.broadcast_shapes(*loops)) if loops else ()
        flat = []
        for a, core in zip(arrays, cores):
            a = c.broadcast_to(a, loop + a.shape[a.ndim - len(core) :])
            flat.append(reshape(a, (-1,) + a.shape[len(loop) :]) if loop else a)

        def call(*vals):
            pos = list(args)
            for (i, _), v in zip(dyn, vals):
                pos[i] = v
            kw = dict(static, **dict(zip(names, vals[len(dyn) :])))
            return pyfunc(*pos, **kw)

        if not loop:
            return call(*flat)
        out = vmap(call)(*flat)

        def unflatten(o):
            return reshape(o, loop + tuple(o.shape[1:]))

        if isinstance(out, tuple):
            return tuple(unflatten(o) for o in out)
        return unflatten(out)

    return wrapped
