"""Polynomials and vectorize: vander, polyfit (least squares through linalg.lstsq), roots
(eigenvalues of the companion matrix), vectorize (through purejit's vmap); each as jax.numpy
computes it."""

from __future__ import annotations

import functools
import operator
import re

import ml_dtypes
import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.numpy import _core as c
from purejit.numpy import linalg
from purejit.numpy._creation import arange, zeros
from purejit.numpy._manip import diag, flip
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._shape import expand_dims, reshape
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
    return c.power(x[:, None], expand_dims(powers, 0))


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
