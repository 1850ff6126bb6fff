"""JVP and transpose rules of `reduce` (`ir/ops/reduce.py`).

The region says what is reduced: a sum is linear; max and min send the tangent to the
elements equal to the result, averaged over ties (JAX's rule); a product is rewritten as a
tree of elementwise products, whose JVP is the product rule (JAX's, and exact at zeros).
Other regions (argmax's value-and-index pairs, user regions) reduce (value, tangent) pairs
with the region's own JVP in forward mode; reverse mode through them is not linear and
gives an error if its tangent is used.
"""

from __future__ import annotations

import numpy as np

from purejit.ir import Function
from purejit.ir.ops.reduce import reduction_kind
from purejit.tracing import ShapedArray, bind, trace_to_function
from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Unsupported,
    Zero,
    aval,
    bcast,
    convert,
    defjvp,
    deftranspose,
    div,
    instantiate,
    mul,
    op,
    reduce_sum,
    reshape,
    tangent_aval,
    transpose,
)


def _kept(shape, dims):
    return [d for d in range(len(shape)) if d not in dims]


@defjvp("reduce")
def _reduce_jvp(ctx, primals, tangents, attrs, regions):
    n = len(primals) // 2
    xs, inits = primals[:n], primals[n:]
    txs = tangents[:n]
    dims = tuple(attrs["dimensions"])
    (body,) = regions
    kind = reduction_kind(body) if n == 1 else None
    complex_ = n == 1 and aval(xs[0]).dtype.kind == "c"
    if kind == "add":
        outs = bind("reduce", *primals, regions=regions, **attrs)
        return outs, [reduce_sum(txs[0], dims)]
    if kind in ("maximum", "minimum") and not complex_:
        (x,), (t,) = xs, txs
        (z,) = bind("reduce", *primals, regions=regions, **attrs)
        shape = aval(x).shape
        kept = _kept(shape, dims)
        hit = op("compare", x, bcast(z, shape, kept), comparison_direction="EQ")
        hitf = convert(hit, aval(x).dtype)
        counts = reduce_sum(hitf, dims)
        return [z], [div(reduce_sum(mul(instantiate(t, aval(x)), hitf), dims), counts)]
    if kind == "multiply":
        (x,), (t,) = xs, txs
        fn = _prod_tree_fn(aval(x).shape, aval(x).dtype, dims)
        outs, touts = interp.jvp_function(fn, [x], [t], ctx)
        return outs, touts
    return _joint_reduce(ctx, xs, inits, txs, attrs, body)


def _prod_tree_fn(shape, dt, dims) -> Function:
    """`prod(x, dims)` as log2(n) rounds of elementwise products of halves."""
    kept = _kept(shape, dims)
    n = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    out_shape = [shape[d] for d in kept]

    def tree(x):
        x = transpose(x, kept + list(dims))
        x = reshape(x, out_shape + [n])
        m = n
        rank = len(out_shape) + 1
        one = np.ones((), dt)
        while m > 1:
            if m % 2:
                x = op(
                    "pad",
                    x,
                    one,
                    edge_padding_low=[0] * rank,
                    edge_padding_high=[0] * (rank - 1) + [1],
                    interior_padding=[0] * rank,
                )
                m += 1
            h = m // 2
            lo = op("slice", x, start_indices=[0] * rank, limit_indices=out_shape + [h],
                    strides=[1] * rank)  # fmt: skip
            hi = op("slice", x, start_indices=[0] * (rank - 1) + [h],
                    limit_indices=out_shape + [m], strides=[1] * rank)  # fmt: skip
            x = op("multiply", lo, hi)
            m = h
        if m == 0:
            return [op("broadcast_in_dim", one, shape=tuple(out_shape), broadcast_dimensions=())]
        return [reshape(x, out_shape)]

    return trace_to_function(tree, [ShapedArray(tuple(shape), np.dtype(dt))], name="prod").fn


def _joint_reduce(ctx, xs, inits, txs, attrs, body):
    """Reduce (value, tangent) pairs with the JVP of the region (forward mode)."""
    n = len(xs)
    outs = bind("reduce", *xs, *inits, regions=[body], **attrs)
    out_avals = [tangent_aval(aval(o)) for o in outs]
    if ctx.linearizing:
        msg = (
            "reverse-mode differentiation of a `reduce` whose region is not a sum, product, "
            "max or min (e.g. the values of an argmax-style reduction) is not supported; use "
            "forward mode (jvp) or a differentiable formulation"
        )
        return outs, [Unsupported(a, msg) for a in out_avals]
    scal = [ShapedArray((), aval(x).dtype) for x in xs]
    floats = [a.dtype != np.dtype([("float0", np.void, 0)]) for a in out_avals]

    def region(*args):
        acc, tacc = args[:n], args[n : 2 * n]
        x, tx = args[2 * n : 3 * n], args[3 * n :]
        ta = [t if f else Zero(tangent_aval(aval(a))) for t, a, f in zip(tacc, acc, floats)]
        tb = [t if f else Zero(tangent_aval(aval(a))) for t, a, f in zip(tx, x, floats)]
        o, to = interp.jvp_function(body, [*acc, *x], [*ta, *tb], ctx)
        return [*o, *[instantiate(t, aval(v)) for t, v in zip(to, o)]]

    tscal = [s if f else ShapedArray((), s.dtype) for s, f in zip(scal, floats)]
    fn = trace_to_function(region, scal + tscal + scal + tscal, name="jvp_region").fn
    tx = [instantiate(t, aval(x)) if f else x for t, x, f in zip(txs, xs, floats)]
    tinit = [np.zeros((), aval(x).dtype) for x in xs]
    res = bind("reduce", *xs, *tx, *inits, *tinit, regions=[fn], **attrs)
    touts = [t if f else Zero(a) for t, f, a in zip(res[n:], floats, out_avals)]
    return res[:n], touts


@deftranspose("reduce")
def _reduce_t(cts, operands, attrs, regions):
    n = len(operands) // 2
    (body,) = regions
    if n != 1 or reduction_kind(body) != "add":
        raise NotImplementedError("transpose of a reduce that is not a sum")
    (ct,), (x, _) = cts, operands
    shape = aval(x).shape
    if isinstance(ct, Zero):
        return [Zero(aval(x)), None]
    kept = _kept(shape, tuple(attrs["dimensions"]))
    return [bcast(ct, shape, kept), None]


LINEAR_OPS.update({"reduce"})
