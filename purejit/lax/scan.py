"""Loops with a static trip count: scan, fori_loop, map (as in jax.lax).

`scan` is a `while` over a counter: the body slices `xs` with `dynamic_slice` and writes `ys`
with `dynamic_update_slice`, so a 1000-step loop is one XLA while, not 1000 copies of the
body. `fori_loop` with concrete bounds is a scan (a counted loop); with traced bounds, a
`while_loop`. `unroll=k` puts k copies of the body in each iteration, plus a second loop
for the remainder.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable

import numpy as np

from purejit import errors
from purejit.lax.control import (
    _check_carry,
    _concrete,
    _describe,
    _inline,
    _leaves,
    _promote_weak,
    _trace,
    while_loop,
)
from purejit.runtime.array import Array
from purejit.config import config
from purejit.tracing import ShapedArray, bind, bind1
from purejit.ir import Builder, Function, TensorType, Value
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.tree_util import tree_flatten, tree_unflatten


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
            return (i + 1, body_fun(i, x)), None

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


def _const(b: Builder, value) -> Value:
    (v,) = b.op("constant", [], {"value": np.asarray(value)})
    return v


def _scan_regions(f: Function, nc, xs_t, ys_t, length, steps, stop, reverse):
    """cond and body of one `while` running `steps` unrolled scan steps per iteration.

    Region parameters: counter, carry (nc), ys buffers, xs, captured values.
    """
    carry_t = f.param_types[:nc]
    cap_t = f.param_types[nc + len(xs_t) :]
    types = [TensorType((), np.int32), *carry_t, *ys_t, *xs_t, *cap_t]

    cb = Builder("scan_cond")
    params = [cb.param(t) for t in types]
    cond = cb.finish(
        cb.op("compare", [params[0], _const(cb, np.int32(stop))], {"comparison_direction": "LT"})
    )

    b = Builder("scan_body")
    params = [b.param(t) for t in types]
    i = params[0]
    carry = params[1 : 1 + nc]
    ys = params[1 + nc : 1 + nc + len(ys_t)]
    xs = params[1 + nc + len(ys_t) : 1 + nc + len(ys_t) + len(xs_t)]
    caps = params[1 + nc + len(ys_t) + len(xs_t) :]
    zero, one = _const(b, np.int32(0)), _const(b, np.int32(1))
    last = _const(b, np.int32(length - 1)) if reverse else None
    for _ in range(steps):
        (idx,) = b.op("subtract", [last, i]) if reverse else (i,)
        slices = []
        for x in xs:
            rest = x.type.shape[1:]
            (s,) = b.op("dynamic_slice", [x, idx] + [zero] * len(rest), {"slice_sizes": (1, *rest)})
            slices.append(b.op("reshape", [s], {"shape": rest})[0])
        outs = _inline(b, f, [*carry, *slices, *caps])
        carry, new_ys = outs[:nc], outs[nc:]
        new_bufs = []
        for buf, y in zip(ys, new_ys):
            (row,) = b.op("reshape", [y], {"shape": (1, *y.type.shape)})
            operands = [buf, row, idx] + [zero] * y.type.rank
            new_bufs.append(b.op("dynamic_update_slice", operands)[0])
        ys = new_bufs
        (i,) = b.op("add", [i, one])
    return [cond, b.finish([i, *carry, *ys])]


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

    def make(leaves):
        avals = [x.aval for x in leaves]
        body = _trace(f, rebuild, avals + x_avals, "scan", "f")
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
    if changed:
        avals, body = make(init_leaves)
    carry_tree, y_tree = body.out_tree.children
    _check_carry("scan", f, "f", init_tree, avals, carry_tree, body.out_avals[:nc])
    y_avals = body.out_avals[nc:]
    ys = [_zeros((length, *a.shape), a.dtype) for a in y_avals]
    carry = init_leaves
    if length:
        xs_t = [x.aval.type for x in xs_leaves]
        ys_t = [TensorType((length, *a.shape), a.dtype) for a in y_avals]
        weak = (False, *(a.weak_type for a in body.out_avals))
        state = [Array(host=np.array(0, np.int32)), *carry, *ys]
        trips, rem = divmod(length, unroll)
        # the main loop runs `unroll` steps per iteration; a second one does the remainder
        for n_trips, steps, stop in ((trips, unroll, trips * unroll), (int(rem > 0), rem, length)):
            if n_trips:
                regions = _scan_regions(body.fn, nc, xs_t, ys_t, length, steps, stop, reverse)
                state = bind(
                    "while", *state, *xs_leaves, *body.captures, regions=regions, weak=weak
                )
        carry, ys = state[1 : 1 + nc], state[1 + nc :]
    return tree_unflatten(init_tree, carry), tree_unflatten(y_tree, ys)


def _zeros(shape, dtype):
    return bind1(
        "broadcast_in_dim",
        Array(host=np.zeros((), dtype)),
        shape=tuple(shape),
        broadcast_dimensions=(),
    )


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
