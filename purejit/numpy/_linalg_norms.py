"""The norms of `purejit.numpy.linalg` (`vector_norm`, `matrix_norm`, `norm`): reductions,
with the matrix 2, -2 and nuclear norms from `svd`.

Apart from `linalg.py` because solving (`lstsq`, `cond`) builds on them; `linalg.py`
re-exports every public name here.
"""

from __future__ import annotations

import operator

import numpy as np

from purejit.lax import linalg as lax_linalg
from purejit.numpy._arithmetic import real
from purejit.numpy._core import abs, astype, sqrt
from purejit.numpy._reductions import max as _max
from purejit.numpy._reductions import min as _min
from purejit.numpy._reductions import sum
from purejit.numpy._shape import expand_dims, moveaxis
from purejit.numpy._linalg_decompositions import _inexact, svd


# ---- norms ------------------------------------------------------------------------------------


def _abs2(x):
    return real(x * lax_linalg.conj(x)) if x.dtype.kind == "c" else x * x


def _axes(axis, ndim: int) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"linalg.norm: axis {a} is out of bounds for rank {ndim}")
        out.append(a % ndim)
    return tuple(out)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The vector norm of order `ord` over `axis` (all axes by default)."""
    x = _inexact("vector_norm", x)
    if ord is None or ord == 2:
        return sqrt(sum(_abs2(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return _max(abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return _min(abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        rdt = np.zeros((), x.dtype).real.dtype  # np.finfo knows no bfloat16
        # counted in the float dtype itself, as jax.numpy (no float32 accumulation)
        return sum(x != 0, axis=axis, keepdims=keepdims, dtype=rdt)
    if ord == 1:
        return sum(abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"linalg.vector_norm: invalid order {ord!r}")
    ax = abs(x)
    p = astype(ord, ax.dtype)
    return sum(ax**p, axis=axis, keepdims=keepdims) ** astype(1.0 / ord, ax.dtype)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The matrix norm of order `ord` of each matrix (last two axes)."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector norm (one axis) or matrix norm (two axes), as numpy.linalg.norm."""
    x = _inexact("norm", x)
    if axis is None:
        if ord is None:
            return sqrt(sum(_abs2(x), keepdims=keepdims))
        axis = tuple(range(x.ndim))
    axes = _axes(axis, x.ndim)
    if len(axes) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axes, keepdims=keepdims)
    if len(axes) != 2:
        raise ValueError(f"linalg.norm: improper number of axes {axis!r} (one or two)")
    row, col = axes
    if ord is None or ord in ("f", "fro"):
        return sqrt(sum(_abs2(x), axis=axes, keepdims=keepdims))
    if ord in (1, -1):
        red = _max if ord == 1 else _min
        if not keepdims and col > row:
            col -= 1
        kw = {"initial": 0} if ord == 1 else {}
        return red(sum(abs(x), axis=row, keepdims=keepdims), axis=col, keepdims=keepdims, **kw)
    if ord in (np.inf, -np.inf):
        red = _max if ord == np.inf else _min
        if not keepdims and row > col:
            row -= 1
        kw = {"initial": 0} if ord == np.inf else {}
        return red(sum(abs(x), axis=col, keepdims=keepdims), axis=row, keepdims=keepdims, **kw)
    if ord in ("nuc", 2, -2):
        s = svd(moveaxis(x, axes, (-2, -1)), compute_uv=False)
        if ord == 2:
            y = _max(s, axis=-1, initial=0)
        elif ord == -2:
            y = _min(s, axis=-1)
        else:
            y = sum(s, axis=-1)
        return expand_dims(y, axes) if keepdims else y
    raise ValueError(f"linalg.norm: invalid order {ord!r} for a matrix norm")
