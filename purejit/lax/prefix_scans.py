"""Prefix scans of `jax.lax`: `associative_scan` (parallel prefix: combine neighbouring
pairs, recurse on the half, interleave) and `cumlogsumexp` built on it."""

from __future__ import annotations

from typing import Callable

import numpy as np

from purejit import errors
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.lax.ops import canonical_axis, concatenate, pad, rev
from purejit.lax.ops import slice as _slice
from purejit.tracing import bind1
from purejit.tree_util import tree_flatten, tree_leaves, tree_unflatten


def _where() -> str:
    return errors.at(errors.user_location())


def _slice_axis(x, start, stop, step, axis):
    n = x.shape[axis]
    start, stop, _ = slice(start, stop, step).indices(n)
    lo = [0] * x.ndim
    hi = list(x.shape)
    st = [1] * x.ndim
    lo[axis], hi[axis], st[axis] = start, max(stop, start), step
    return _slice(x, lo, hi, st)


def _interleave(a, b, axis):
    """a[0], b[0], a[1], b[1], ... along `axis` (len(a) is len(b) or len(b) + 1)."""
    same = a.shape[axis] == b.shape[axis]
    zero_a = convert(_lift(np.array(0)), a.dtype)
    a_cfg = [(0, 0, 0)] * a.ndim
    b_cfg = [(0, 0, 0)] * b.ndim
    a_cfg[axis] = (0, 1 if same else 0, 1)
    b_cfg[axis] = (1, 0 if same else 1, 1)
    pa, pb = pad(a, zero_a, a_cfg), pad(b, zero_a, b_cfg)
    return bind1("or" if a.dtype == np.bool_ else "add", pa, pb)


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """All prefix combinations of `elems` along `axis` with the associative `fn`, in
    O(log n) depth (as `jax.lax.associative_scan`).

    Args:
        fn: an associative function of two pytrees of arrays (elementwise along `axis`).
        elems: a pytree of arrays of one length along `axis`.
        reverse: scan from the end.
        axis: the axis to scan.
    """
    flat, tree = tree_flatten(elems)
    flat = [_lift(x) for x in flat]
    if not flat:
        return elems
    axis = canonical_axis(axis, flat[0].ndim)
    n = flat[0].shape[axis]
    if any(x.shape[axis] != n for x in flat):
        raise ValueError(f"lax.associative_scan: inputs differ in length along {axis}{_where()}")
    if reverse:
        flat = [rev(x, (axis,)) for x in flat]

    def combine(a, b):
        out = tree_leaves(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        return [_lift(o) for o in out]

    def scan(xs):
        m = xs[0].shape[axis]
        if m < 2:
            return xs
        # combine pairs, scan the pairs, then fill in the even positions
        pairs = combine([_slice_axis(x, 0, m - 1, 2, axis) for x in xs],
                        [_slice_axis(x, 1, m, 2, axis) for x in xs])  # fmt: skip
        odd = scan(pairs)
        rest = [_slice_axis(x, 2, m, 2, axis) for x in xs]
        if m % 2 == 0:
            even = combine([_slice_axis(o, 0, o.shape[axis] - 1, 1, axis) for o in odd], rest)
        else:
            even = combine(odd, rest)
        even = [concatenate([_slice_axis(x, 0, 1, 1, axis), e], axis) for x, e in zip(xs, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(flat)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)


def _logaddexp(a, b):
    amax = bind1("maximum", a, b)
    delta = bind1("subtract", a, b)
    soft = bind1("add", amax, bind1("log_plus_one", bind1("exponential",
                 bind1("negate", bind1("abs", delta)))))  # fmt: skip
    nan = bind1("compare", delta, delta, comparison_direction="NE")
    return bind1("select", nan, bind1("add", a, b), soft)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """`log(cumsum(exp(operand)))` along `axis`, computed stably (as `jax.lax.cumlogsumexp`)."""
    x = _lift(operand)
    if x.dtype.kind not in "fc" and x.dtype.name != "bfloat16":
        raise errors.PurejitTypeError(
            f"lax.cumlogsumexp needs a floating dtype, got {x.dtype.name}{_where()}"
        )
    return associative_scan(_logaddexp, x, reverse=reverse, axis=axis)
