"""Loops with a static trip count: scan, fori_loop, map (as in jax.lax).

`scan` binds the IR op `scan` (see `purejit.ir.ops.control`), so passes and transformations
see the loop as a scan; its lowering is one XLA while over a counter that slices `xs` with
`dynamic_slice` and writes `ys` with `dynamic_update_slice`, so a 1000-step loop is one
while, not 1000 copies of the body. `fori_loop` with concrete bounds is a scan (a counted
loop, `lax.map` too); with traced bounds, a `while_loop`. `unroll=k` runs k copies of the
body per loop trip.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable

from purejit import errors
from purejit.lax.control import (
    _check_carry,
    _concrete,
    _describe,
    _leaves,
    _promote_weak,
    _trace,
    while_loop,
)
from purejit.config import config
from purejit.ir import Function
from purejit.lax import _effects
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.tracing import ShapedArray, bind
from purejit.tree_util import tree_flatten, tree_unflatten


def _check_fori_carry(body_fun, x, y):
    """fori_loop's own carry check, naming body_fun rather than the scan step around it; a
    weakly typed carry may still change dtype (scan promotes it, as JAX does)."""
    xs, tx = tree_flatten(x)
    ys, ty = tree_flatten(y)
    in_avals = [getattr(v, "aval", None) or _lift(v).aval for v in xs]
    out_avals = [getattr(v, "aval", None) or _lift(v).aval for v in ys] if tx == ty else []
    if tx == ty and all(
        a.shape == b.shape and (a.dtype == b.dtype or a.weak_type)
        for a, b in zip(in_avals, out_avals)
    ):
        return
    _check_carry("fori_loop", body_fun, "body_fun", tx, in_avals, ty, out_avals)


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll=None):
    """`for i in range(lower, upper): val = body_fun(i, val)`, as jax.lax.fori_loop.

    With concrete bounds the loop is a `scan` with a static trip count (one counted XLA
    while); with traced bounds it is a `while_loop`.

    Args:
        lower, upper: integer scalars.
        body_fun: (i, carry) -> carry.
        init_val: the initial carry.
        unroll: body copies per loop iteration (static bounds only).
    Returns:
        The final carry.
    """
    lo, hi = _lift(lower), _lift(upper)
    for name, b in (("lower", lo), ("upper", hi)):
        if b.shape != () or b.dtype.kind not in "iu":
            raise TypeError(f"fori_loop: {name} must be an integer scalar, got {b.aval}")
    if lo.dtype != hi.dtype:
        if lo.weak_type and not hi.weak_type:
            lo = convert(lo, hi.dtype)
        elif hi.weak_type and not lo.weak_type:
            hi = convert(hi, lo.dtype)
        else:
            raise TypeError(
                "fori_loop: lower and upper arguments must have equal types, got "
                f"{lo.dtype.name} and {hi.dtype.name}"
            )
    if _concrete(lower, upper):
        length = builtins.max(int(upper) - int(lower), 0)
        if config.jit_disabled and length == 0:
            return init_val

        def step(carry, _):
            i, x = carry
            y = body_fun(i, x)
            _check_fori_carry(body_fun, x, y)
            return (i + 1, y), None

        (_, out), _ = scan(
            step,
            (int(lower), init_val),
            None,
            length=length,
            unroll=False if unroll is None else unroll,
        )
        return out
    if unroll not in (None, False, 1):
        raise ValueError(
            "fori_loop: `unroll` can only be used when the loop bounds are statically known"
        )

    def body(carry):
        i, n, x = carry
        return i + 1, n, body_fun(i, x)

    _, _, out = while_loop(lambda c: c[0] < c[1], body, (lo, hi, init_val))
    return out


# ---- scan and map ------------------------------------------------------------------------


def _scan_length(xs_leaves, length) -> int:
    lengths = set()
    for x in xs_leaves:
        if x.ndim == 0:
            raise ValueError(f"scan: every leaf of xs must have a leading axis, got {x.aval}")
        lengths.add(x.shape[0])
    if length is not None:
        length = operator.index(length)
        if lengths and lengths != {length}:
            raise ValueError(
                f"scan: length={length} does not match the leading axis sizes of xs "
                f"{sorted(lengths)}"
            )
        return length
    if len(lengths) > 1:
        raise ValueError(f"scan: xs leaves have different leading axis sizes {sorted(lengths)}")
    if not lengths:
        raise ValueError("scan: got no values to scan over and `length` not provided")
    return lengths.pop()


def scan(
    f: Callable,
    init,
    xs=None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    _split_transpose: bool = False,
):
    """Loop `f` over the leading axis of `xs` carrying state, as jax.lax.scan.

    Semantics: `for x in xs: carry, y = f(carry, x)`; returns `(carry, stacked ys)`.

    Args:
        f: (carry, x) -> (carry, y); carry keeps its structure, shapes and dtypes.
        init: the initial carry (a pytree of arrays).
        xs: a pytree of arrays scanned along axis 0, or None (then `length` is required).
        length: the number of steps (checked against xs when both are given).
        reverse: scan from the end; ys stay in the order of xs.
        unroll: body copies per loop iteration; True (or 0) unrolls fully.
    Returns:
        (final carry, ys) with ys leaves of shape (length, ...).
    """
    if not callable(f):
        raise TypeError("scan: f argument should be a callable.")
    init_leaves, init_tree = _leaves(init, "scan", "init")
    xs_leaves, xs_tree = _leaves(xs, "scan", "xs")
    length = _scan_length(xs_leaves, length)
    if isinstance(unroll, bool):
        unroll = builtins.max(length, 1) if unroll else 1
    unroll = operator.index(unroll)
    if unroll < 0:
        raise ValueError("scan: `unroll` must be a bool or a non-negative int")
    unroll = unroll or builtins.max(length, 1)
    if config.jit_disabled and _concrete(*init_leaves, *xs_leaves):
        return _scan_python(f, init_leaves, init_tree, xs_leaves, xs_tree, length, reverse)
    nc = len(init_leaves)
    x_avals = [ShapedArray(x.shape[1:], x.dtype, x.weak_type) for x in xs_leaves]

    def rebuild(flat):
        return tree_unflatten(init_tree, flat[:nc]), tree_unflatten(xs_tree, flat[nc:])

    def make(leaves, token=None):
        avals = [x.aval for x in leaves]
        body = _trace(f, rebuild, avals + x_avals, "scan", "f", token)
        t = body.out_tree
        if t.kind not in (tuple, list) or len(t.children) != 2:
            raise errors.PurejitTypeError(
                f"scan: {_describe(f, 'f')} must return a pair (carry, y), got {t}"
                f"{errors.at(errors.user_location())}"
            )
        if t.children[0] != init_tree:
            _check_carry("scan", f, "f", init_tree, avals, t.children[0], [])
        return avals, body

    avals, body = make(init_leaves)
    init_leaves, changed = _promote_weak(init_leaves, avals, body.out_avals[:nc])
    # ordered callbacks in f: the order token is the last carry (see lax._effects)
    token = (nc, nc) if body.ordered else None
    if changed or token:
        avals, body = make(init_leaves, token)
    carry_tree, y_tree = body.out_tree.children
    _check_carry("scan", f, "f", init_tree, avals, carry_tree, body.out_avals[:nc])
    weak = tuple(a.weak_type for a in body.out_avals)
    if token:
        init_leaves = [*init_leaves, _effects.current_token()]
        weak = (*weak[:nc], False, *weak[nc:])
    # the body's region takes (consts, carry, x slices); tracing put the captures last
    fn = body.fn
    nk, nx = len(init_leaves), len(xs_leaves)
    params = fn.params[nk + nx :] + fn.params[:nk] + fn.params[nk : nk + nx]
    region = Function(fn.name, params, fn.ops, fn.results)
    outs = bind(
        "scan",
        *body.captures,
        *init_leaves,
        *xs_leaves,
        regions=[region],
        weak=weak,
        length=length,
        reverse=bool(reverse),
        unroll=builtins.min(unroll, builtins.max(length, 1)),
        num_consts=len(body.captures),
        num_carry=nk,
    )
    if token:
        _effects.set_token(outs.pop(nc))
    carry, ys = outs[:nc], outs[nc:]
    return tree_unflatten(init_tree, carry), tree_unflatten(y_tree, ys)


def _scan_python(f, init_leaves, init_tree, xs_leaves, xs_tree, length, reverse):
    """scan under disable_jit: a Python loop, as JAX does."""
    if length == 0:
        raise ValueError("scan: zero-length scan is not supported under disable_jit()")
    carry = tree_unflatten(init_tree, init_leaves)
    ys = []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for i in steps:
        carry, y = f(carry, tree_unflatten(xs_tree, [x[i] for x in xs_leaves]))
        ys.append(y)
    if reverse:
        ys.reverse()
    y_leaves = [tree_flatten(y)[0] for y in ys]
    y_tree = tree_flatten(ys[0])[1]
    stacked = [_lift([row[k] for row in y_leaves]) for k in range(y_tree.num_leaves)]
    return carry, tree_unflatten(y_tree, stacked)


def map(f: Callable, xs, *, batch_size: int | None = None):
    """Apply `f` to every slice of `xs` along axis 0 with a loop, as jax.lax.map.

    Args:
        f: x -> y (pytrees).
        xs: a pytree of arrays with a common leading axis.
        batch_size: not supported (it needs vmap).
    Returns:
        The stacked outputs.
    """
    if batch_size is not None:
        raise NotImplementedError("lax.map(batch_size=...) needs vmap, which purejit lacks")
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys
