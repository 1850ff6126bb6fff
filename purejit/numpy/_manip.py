"""Array manipulation: split/array_split, pad, flip, rot90, tile, repeat, roll, atleast_*d,
hstack/vstack/dstack/column_stack, diag/diagonal/trace."""

from __future__ import annotations

import itertools
import operator

import numpy as np

from purejit import errors
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._creation import eye
from purejit.numpy._indexing import _indexing_getitem, take
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._shape import normalize_axes, _axis, concatenate, expand_dims, reshape, transpose
from purejit.tracing import Tracer, bind1


def _slice_axis(x, start: int, stop: int, axis: int):
    if start == 0 and stop == x.shape[axis]:
        return x
    starts = [0] * x.ndim
    limits = list(x.shape)
    starts[axis], limits[axis] = start, stop
    return bind1("slice", x, start_indices=tuple(starts), limit_indices=tuple(limits),
                 strides=(1,) * x.ndim)  # fmt: skip


# ---- split ----------------------------------------------------------------------------------


def _split(ary, indices_or_sections, axis, name, even: bool):
    x = c._lift(ary)
    ax = _axis(axis, x.ndim, name)
    n = x.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = operator.index(indices_or_sections)
        if k <= 0:
            raise ValueError(f"{name}: number of sections must be larger than 0, got {k}")
        if even and n % k:
            raise ValueError(
                f"{name}: array split does not result in an equal division: dimension {ax} "
                f"of size {n} into {k} sections{errors.at(errors.user_location())}"
            )
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        cuts = list(np.cumsum([0] + sizes))
    else:
        points = [operator.index(i) for i in np.asarray(indices_or_sections).reshape(-1)]
        cuts = [0] + points + [n]
    bounds = [min(max(p + n if p < 0 else p, 0), n) for p in cuts]
    return [_slice_axis(x, a, max(a, b), ax) for a, b in itertools.pairwise(bounds)]


def split(ary, indices_or_sections, axis: int = 0):
    """Split into equal sections (an int) or at the given indices (a sequence)."""
    return _split(ary, indices_or_sections, axis, "split", even=True)


def array_split(ary, indices_or_sections, axis: int = 0):
    """Like split, but an int need not divide the axis: the first sections get one more."""
    return _split(ary, indices_or_sections, axis, "array_split", even=False)


def hsplit(ary, indices_or_sections):
    x = c._lift(ary)
    return split(x, indices_or_sections, axis=1 if x.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=0)


# ---- pad ------------------------------------------------------------------------------------


def _pad_widths(pad_width, ndim: int, shape=None) -> list[tuple[int, int]]:
    if isinstance(pad_width, Tracer):
        raise TypeError("pad: pad_width must be static")
    w = np.asarray(pad_width)
    if w.dtype.kind not in "iu":
        raise TypeError(f"pad: pad_width must be integers, got {pad_width!r}")
    try:
        w = np.broadcast_to(w, (ndim, 2))
    except ValueError:
        of = f"shape {list(shape)}" if shape is not None else f"rank {ndim}"
        raise ValueError(
            f"pad: pad_width {pad_width!r} does not fit an array of {of} (one (before, after) "
            f"pair per axis){errors.at(errors.user_location())}"
        ) from None
    if (w < 0).any():
        raise ValueError(f"pad: pad_width must be non-negative, got {pad_width!r}")
    return [(int(a), int(b)) for a, b in w]


def _source_index(p: np.ndarray, n: int, mode: str) -> np.ndarray:
    """For padded positions p (may be outside [0, n)), the source index in each mode."""
    if mode == "edge" or (mode == "reflect" and n == 1):
        return np.clip(p, 0, n - 1)
    if mode == "wrap":
        return p % n
    period = 2 * (n - 1) if mode == "reflect" else 2 * n
    q = p % period
    back = period - q if mode == "reflect" else period - 1 - q
    return np.where(q >= n, back, q)


def pad(array, pad_width, mode="constant", *, constant_values=0, **kwargs):
    """Pad with NumPy's modes 'constant', 'edge', 'reflect', 'symmetric' and 'wrap'."""
    x = c._lift(array)
    widths = _pad_widths(pad_width, x.ndim, x.shape)
    if kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError("pad: reflect_type='odd' is not supported")
    if mode == "constant":
        return _pad_constant(x, widths, constant_values)
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise NotImplementedError(
            f"pad: mode {mode!r} is not supported (use constant, edge, reflect, symmetric or wrap)"
        )

    for ax, (lo, hi) in enumerate(widths):
        if lo == hi == 0:
            continue
        n = x.shape[ax]
        if n == 0:
            raise ValueError(f"pad: cannot pad an empty axis {ax} with mode {mode!r}")
        idx = _source_index(np.arange(-lo, n + hi), n, mode).astype(np.int32)
        x = take(x, idx, axis=ax)
    return x


def _pad_constant(x, widths, constant_values):
    cv = constant_values
    if (cv.ndim if hasattr(cv, "ndim") else np.ndim(cv)) == 0:
        v = c.convert(c._lift(cv), x.dtype)
        return bind1("pad", x, v, edge_padding_low=tuple(w[0] for w in widths),
                     edge_padding_high=tuple(w[1] for w in widths),
                     interior_padding=(0,) * x.ndim, weak=x.weak_type)  # fmt: skip
    vals = np.broadcast_to(np.asarray(cv), (x.ndim, 2))
    for ax, (lo, hi) in enumerate(widths):
        for side, w in ((0, lo), (1, hi)):
            if w == 0:
                continue
            low = [0] * x.ndim
            high = [0] * x.ndim
            (low if side == 0 else high)[ax] = w
            v = c.convert(c._lift(vals[ax, side].item()), x.dtype)
            x = bind1("pad", x, v, edge_padding_low=tuple(low), edge_padding_high=tuple(high),
                      interior_padding=(0,) * x.ndim, weak=x.weak_type)  # fmt: skip
    return x


# ---- flips, rolls, tiles --------------------------------------------------------------------


def flip(m, axis=None):
    """Reverse the order of elements along the given axes (all axes by default)."""
    x = c._lift(m)
    axes = normalize_axes(axis, x.ndim, "flip")
    axes = tuple(a for a in axes if x.shape[a] > 1)
    return bind1("reverse", x, dimensions=tuple(sorted(axes))) if axes else x


def fliplr(m):
    """Flip along axis 1."""
    return flip(m, 1)


def flipud(m):
    """Flip along axis 0."""
    return flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees k times in the plane of `axes` (from the first towards the second)."""
    x = c._lift(m)
    a0, a1 = (_axis(a, x.ndim, "rot90") for a in axes)
    if a0 == a1:
        raise ValueError("rot90: axes must be different")
    k = operator.index(k) % 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a0), a1)
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(x, a1), perm)
    return flip(transpose(x, perm), a1)


def roll(a, shift, axis=None):
    """Shift elements along axes, wrapping around; the shift may be a traced integer."""
    x = c._lift(a)
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, 0), x.shape)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,) * len(axes)
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis must have the same length")
    for s, ax in zip(shifts, axes):
        x = _roll1(x, s, _axis(ax, x.ndim, "roll"))
    return x


def _roll1(x, shift, ax: int):
    n = x.shape[ax]
    if n == 0:
        return x
    if isinstance(shift, (int, np.integer)):
        s = int(shift) % n
        if s == 0:
            return x
        return concatenate([_slice_axis(x, n - s, n, ax), _slice_axis(x, 0, n - s, ax)], ax)
    # traced shift: read a window of length n from [x, x] starting at (n - shift) mod n
    s = arith.remainder(c.convert(c._lift(shift), np.int32), n)
    start = arith.remainder(c.subtract(n, s), n)
    xx = concatenate([x, x], ax)
    zero = c.convert(0, np.int32)
    starts = [zero] * x.ndim
    starts[ax] = start
    return bind1("dynamic_slice", xx, *starts, slice_sizes=x.shape, weak=x.weak_type)


def tile(A, reps):
    """Repeat the whole array `reps` times along each axis."""
    x = c._lift(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    reps = tuple(operator.index(r) for r in reps)
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
    # broadcast to [r0, d0, r1, d1, ...] and merge each pair
    big = []
    for r, d in zip(reps, x.shape):
        big += [r, d]
    dims = tuple(range(1, 2 * nd, 2))
    y = bind1("broadcast_in_dim", x, shape=tuple(big), broadcast_dimensions=dims)
    return reshape(y, [r * d for r, d in zip(reps, x.shape)])


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element `repeats` times (an int or one static count per element)."""
    x = c._lift(a)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = _axis(axis, x.ndim, "repeat")
    if isinstance(repeats, Tracer):
        raise NotImplementedError("repeat: traced repeat counts give a data-dependent shape")
    r = np.asarray(repeats.host if hasattr(repeats, "host") else repeats)
    if r.dtype.kind not in "iu" or (r < 0).any():
        raise ValueError(f"repeat: repeats must be non-negative integers, got {repeats!r}")
    n = x.shape[ax]
    if r.ndim == 0 or r.size == 1:
        k = int(r.reshape(-1)[0])
        shape = x.shape[: ax + 1] + (k,) + x.shape[ax + 1 :]
        dims = tuple(i if i <= ax else i + 1 for i in range(x.ndim))
        y = bind1("broadcast_in_dim", x, shape=shape, broadcast_dimensions=dims)
        out = reshape(y, x.shape[:ax] + (n * k,) + x.shape[ax + 1 :])
    else:
        if r.shape != (n,):
            raise ValueError(f"repeat: {r.size} repeat counts for an axis of size {n}")

        out = take(x, np.repeat(np.arange(n), r).astype(np.int32), axis=ax)
    if total_repeat_length is not None and total_repeat_length != out.shape[ax]:
        raise NotImplementedError("repeat: total_repeat_length different from the repeat sum")
    return out


# ---- rank helpers and stacking --------------------------------------------------------------


def _atleast(arys, nd: int):
    out = []
    for a in arys:
        x = c._lift(a)
        if x.ndim < nd:
            if nd == 3 and x.ndim == 2:
                x = reshape(x, x.shape + (1,))
            elif nd == 3 and x.ndim == 1:
                x = reshape(x, (1,) + x.shape + (1,))
            else:
                x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
        out.append(x)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Arrays with at least one dimension."""
    return _atleast(arys, 1)


def atleast_2d(*arys):
    """Arrays with at least two dimensions (1-D becomes a row)."""
    return _atleast(arys, 2)


def atleast_3d(*arys):
    """Arrays with at least three dimensions ((n,) -> (1, n, 1); (m, n) -> (m, n, 1))."""
    return _atleast(arys, 3)


def hstack(tup, dtype=None):
    """Concatenate along axis 1 (axis 0 for 1-D arrays)."""
    xs = [c._lift(x) for x in tup]
    arrs = atleast_1d(*xs) if len(xs) > 1 else [atleast_1d(*xs)]
    return concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """Concatenate along axis 0 after making every array at least 2-D."""
    xs = [c._lift(x) for x in tup]
    arrs = atleast_2d(*xs) if len(xs) > 1 else [atleast_2d(*xs)]
    return concatenate(arrs, axis=0, dtype=dtype)


row_stack = vstack


def dstack(tup, dtype=None):
    """Concatenate along axis 2 after making every array at least 3-D."""
    xs = [c._lift(x) for x in tup]
    arrs = atleast_3d(*xs) if len(xs) > 1 else [atleast_3d(*xs)]
    return concatenate(arrs, axis=2, dtype=dtype)


def column_stack(tup):
    """Stack 1-D arrays as columns of a 2-D array (2-D arrays are kept)."""
    arrs = []
    for x in tup:
        x = c._lift(x)
        arrs.append(reshape(x, (-1, 1)) if x.ndim < 2 else x)
    return concatenate(arrs, axis=1)


# ---- diagonals ------------------------------------------------------------------------------


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The `offset` diagonal of the 2-D slices spanned by axis1 and axis2 (moved last)."""
    x = c._lift(a)
    a1, a2 = _axis(axis1, x.ndim, "diagonal"), _axis(axis2, x.ndim, "diagonal")
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    rest = [d for d in range(x.ndim) if d not in (a1, a2)]
    x = transpose(x, rest + [a1, a2])
    n, m = x.shape[-2:]
    k = operator.index(offset)
    rows = np.arange(max(-k, 0), n)
    rows = rows[rows + k < m]

    idx = (Ellipsis, rows.astype(np.int32), (rows + k).astype(np.int32))
    return _indexing_getitem(x, idx)


def diag(v, k=0):
    """The k-th diagonal of a 2-D array, or a 2-D array with `v` on its k-th diagonal."""
    x = c._lift(v)
    k = operator.index(k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError(f"diag: input must be 1-D or 2-D, got shape {list(x.shape)}")
    n = x.shape[0] + abs(k)

    mask = eye(n, k=k, dtype=np.bool_)
    # row i of the result holds v[i] (k >= 0) or v[i + k] (k < 0) on its diagonal
    col = pad(x, (0, k) if k >= 0 else (-k, 0)) if k else x
    vals = c.broadcast_to(expand_dims(col, 1), (n, n))
    return c.where(mask, vals, c.convert(0, x.dtype, weak=x.weak_type))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """Sum along the `offset` diagonal."""

    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)
