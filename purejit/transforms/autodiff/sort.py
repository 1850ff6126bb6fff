"""JVP and transpose rules of the sort family (`ir/ops/sort.py`): `sort`, `top_k`,
`reduce_window`.

sort carries an iota through the sort to learn the permutation and gathers the tangents
with it (JAX's rule); top_k gathers at its indices. reduce_window: a windowed sum is linear
(its transpose pads the cotangent and sums windows again, JAX's rule); a windowed max or
min takes the tangent of the element it chose (found by reducing (value, position) pairs);
a cumulative product is rewritten as an associative scan of elementwise products.
"""

from __future__ import annotations

import numpy as np

from purejit.ir import Function, Value
from purejit.ir.ops.reduce import reduction_kind
from purejit.tracing import ShapedArray, bind, trace_to_function
from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Unsupported,
    Zero,
    aval,
    defjvp,
    deftranspose,
    full,
    instantiate,
    op,
    reshape,
    tangent_aval,
)
from purejit.transforms.autodiff.gather import take_along_axis


@defjvp("sort")
def _sort_jvp(ctx, primals, tangents, attrs, regions):
    (body,) = regions
    dim = attrs["dimension"]
    shape = aval(primals[0]).shape
    iota = op("iota", shape=shape, dtype=np.dtype(np.int32), dimension=dim)
    # the comparator with one more (ignored) operand pair for the iota
    extra = [Value(ShapedArray((), np.dtype(np.int32)).type) for _ in range(2)]
    region = Function(body.name, [*body.params, *extra], body.ops, body.results)
    outs = bind("sort", *primals, iota, regions=[region], **attrs)
    perm = outs[-1]
    touts = [
        Zero(tangent_aval(aval(p))) if isinstance(t, Zero) else take_along_axis(t, perm, dim)
        for p, t in zip(primals, tangents)
    ]
    return outs[:-1], touts


@defjvp("top_k")
def _top_k_jvp(ctx, primals, tangents, attrs, regions):
    (x,), (t,) = primals, tangents
    vals, idx = bind("top_k", x, **attrs)
    return [vals, idx], [take_along_axis(t, idx, aval(x).ndim - 1), Zero(tangent_aval(aval(idx)))]


# ---- reduce_window -------------------------------------------------------------------------


def _dilate(shape, dilation):
    return [0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation)]


@defjvp("reduce_window")
def _reduce_window_jvp(ctx, primals, tangents, attrs, regions):
    (body,) = regions
    n = len(primals) // 2
    kind = reduction_kind(body) if n == 1 else None
    outs = bind("reduce_window", *primals, regions=regions, **attrs)
    if kind == "add":
        t = instantiate(tangents[0], aval(primals[0]))
        zero = np.zeros((), aval(t).dtype)
        return outs, bind("reduce_window", t, zero, regions=regions, **attrs)
    x = primals[0]
    if kind in ("maximum", "minimum") and aval(x).dtype.kind != "c":
        return outs, [_chosen_tangent(x, tangents[0], primals[1], attrs, kind)]
    if kind == "multiply" and _is_cumulative(aval(x).shape, attrs) is not None:
        axis, reverse = _is_cumulative(aval(x).shape, attrs)
        fn = _cumprod_fn(aval(x).shape, aval(x).dtype, axis, reverse)
        _, touts = interp.jvp_function(fn, [x], [tangents[0]], ctx)
        return outs, touts
    msg = (
        "differentiation of `reduce_window` whose region is not a sum, max or min (or a "
        "cumulative product) is not implemented"
    )
    return outs, [Unsupported(tangent_aval(aval(o)), msg) for o in outs]


def _chosen_tangent(x, t, init, attrs, kind):
    """The tangent of the element each window chose: reduce (value, flat position) pairs
    with the window's order (first position on ties), then gather the tangent there."""
    xa = aval(x)
    size = int(np.prod(xa.shape, dtype=np.int64))
    pos = reshape(op("iota", shape=(size,), dtype=np.dtype(np.int32), dimension=0), xa.shape)
    better = "GT" if kind == "maximum" else "LT"
    s, si = ShapedArray((), xa.dtype), ShapedArray((), np.dtype(np.int32))

    def pick(av, ai, bv, bi):
        take_a = op("compare", av, bv, comparison_direction=better)
        tie = op("and", op("compare", av, bv, comparison_direction="EQ"),
                 op("compare", ai, bi, comparison_direction="LT"))  # fmt: skip
        take_a = op("or", take_a, tie)
        return [op("select", take_a, av, bv), op("select", take_a, ai, bi)]

    region = trace_to_function(pick, [s, si, s, si], name="choose").fn
    big = np.array(np.iinfo(np.int32).max, np.int32)
    _, where = bind("reduce_window", x, pos, init, big, regions=[region], **attrs)
    where = op("clamp", np.array(0, np.int32), where, np.array(size - 1, np.int32))
    flat_t = reshape(instantiate(t, xa), (size,))
    wa = aval(where)
    got = take_along_axis(flat_t, reshape(where, (int(np.prod(wa.shape, dtype=np.int64)),)), 0)
    return reshape(got, wa.shape)


def _is_cumulative(shape, attrs):
    """(axis, reverse) if the window is a cumulative one along one axis, else None."""
    ones = [1] * len(shape)
    if list(attrs["window_strides"]) != ones or list(attrs["base_dilations"]) != ones:
        return None
    if list(attrs["window_dilations"]) != ones:
        return None
    axes = [d for d, w in enumerate(attrs["window_dimensions"]) if w != 1]
    if len(axes) != 1:
        return None
    (ax,) = axes
    n = shape[ax]
    if attrs["window_dimensions"][ax] != n:
        return None
    pads = [tuple(p) for p in attrs["padding"]]
    if any(p != (0, 0) for d, p in enumerate(pads) if d != ax):
        return None
    if pads[ax] == (n - 1, 0):
        return ax, False
    if pads[ax] == (0, n - 1):
        return ax, True
    return None


def _cumprod_fn(shape, dt, axis, reverse) -> Function:
    """cumprod along `axis` as a Hillis-Steele scan: log2(n) rounds of shifted products."""
    rank = len(shape)
    n = shape[axis]

    def scan(x):
        if reverse:
            x = op("reverse", x, dimensions=(axis,))
        shift = 1
        one = np.ones((), dt)
        while shift < n:
            lo = [0] * rank
            hi = list(shape)
            hi[axis] = n - shift
            head = op("slice", x, start_indices=lo, limit_indices=hi, strides=[1] * rank)
            pad_lo = [shift if d == axis else 0 for d in range(rank)]
            shifted = op("pad", head, one, edge_padding_low=pad_lo, edge_padding_high=[0] * rank,
                         interior_padding=[0] * rank)  # fmt: skip
            x = op("multiply", x, shifted)
            shift *= 2
        if reverse:
            x = op("reverse", x, dimensions=(axis,))
        return [x]

    return trace_to_function(scan, [ShapedArray(tuple(shape), np.dtype(dt))], name="cumprod").fn


@deftranspose("reduce_window")
def _reduce_window_t(cts, operands, attrs, regions):
    if len(operands) != 2 or reduction_kind(regions[0]) != "add":
        raise NotImplementedError("transpose of a reduce_window that is not a sum")
    (ct,), (x, _) = cts, operands
    xa = aval(x)
    if isinstance(ct, Zero):
        return [Zero(xa), None]
    if any(b != 1 for b in attrs["base_dilations"]):
        raise NotImplementedError("transpose of reduce_window with base dilation")
    window, strides = attrs["window_dimensions"], attrs["window_strides"]
    wdil = attrs["window_dilations"]
    in_shape = xa.shape
    lhs = _dilate(in_shape, [1] * len(in_shape))
    rhs = _dilate(window, wdil)
    out = _dilate(aval(ct).shape, strides)
    before = [r - lo - 1 for r, (lo, _) in zip(rhs, attrs["padding"])]
    after = [a + r - 1 - o - b for a, r, o, b in zip(lhs, rhs, out, before)]
    dt = aval(ct).dtype
    padded = op(
        "pad",
        ct,
        np.zeros((), dt),
        edge_padding_low=before,
        edge_padding_high=after,
        interior_padding=[s - 1 for s in strides],
    )
    ones = [1] * len(in_shape)
    res = op(
        "reduce_window",
        padded,
        np.zeros((), dt),
        window_dimensions=tuple(window),
        window_strides=tuple(ones),
        base_dilations=tuple(ones),
        window_dilations=tuple(wdil),
        padding=tuple((0, 0) for _ in in_shape),
        regions=regions,
    )
    return [res, None]


LINEAR_OPS.add("reduce_window")
__all__ = ["full"]
