"""Batching rules of the ops that carry differentiation structure (ir/ops/autodiff.py).

`optimization_barrier` and `checkpoint_name` are identities: the batch passes through
(`stop_gradient` is elementwise, batched in elementwise.py). `checkpoint` batches its region
and keeps its saving policy. A function with a custom derivative (`custom_jvp_call`,
`custom_vjp_call`) batches its region, and its rule is replaced by a batched one: the user's
JVP, fwd or bwd, traced on one example and batched like any program, so differentiating the
batched program (`grad(vmap(f))`) runs the user's rule batched. In every batched op each
batched operand and every result carries the batch first.
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit.tracing import ShapedArray, aval_of, bind
from purejit.transforms._ir_eval import trace_closed
from purejit.transforms.autodiff._core import (
    CUSTOM_RULES,
    SymbolicZero,
    UndefinedPrimal,
    Zero,
    instantiate,
    intern_custom,
    is_differentiable_dtype,
    tangent_aval,
)
from purejit.transforms.batching.core import (
    batch_function,
    batch_region,
    bdim_at_front,
    defrule,
    reduce_batch,
    unbatched_shape,
)


def _front(axis, args, dims):
    xs = [x if d is None else bdim_at_front(axis, x, d) for x, d in zip(args, dims)]
    return xs, [None if d is None else 0 for d in dims]


def _per_example(x, d) -> ShapedArray:
    a = aval_of(x)
    return ShapedArray(unbatched_shape(x, d), a.dtype, a.weak_type)


def _drop(shape, dim):
    return tuple(shape) if dim is None else tuple(shape[:dim]) + tuple(shape[dim + 1 :])


def _all_front(axis, outs, dims):
    return [bdim_at_front(axis, o, d) for o, d in zip(outs, dims)]


@defrule("checkpoint_name")
def checkpoint_name_rule(axis, args, dims, *, label):
    return bind("checkpoint_name", *args, label=label), list(dims)


@defrule("optimization_barrier")
def optimization_barrier_rule(axis, args, dims):
    return bind("optimization_barrier", *args), list(dims)


def _region_call(name: str, axis, args, dims, regions, attrs, rule_key):
    xs, bdims = _front(axis, args, dims)
    avals = [aval_of(x) for x in xs]
    want = [0] * len(regions[0].results)
    region = batch_region(regions[0], bdims, axis, avals, want)[0]
    return bind(name, *xs, regions=[region], **{**attrs, "rule": rule_key}), want


@defrule("checkpoint")
def checkpoint_rule(axis, args, dims, *, regions, rule, **attrs):
    return _region_call("checkpoint", axis, args, dims, regions, attrs, rule)


# ---- custom derivatives --------------------------------------------------------------------


def _trace_per_example(fun, avals, name):
    return trace_closed(fun, avals, name=name)


class _BatchedJVP:
    """A custom_jvp rule batched: the user's JVP traced on one example, then batched."""

    def __init__(self, rule, axis, dims):
        self.rule, self.axis, self.dims = rule, axis, list(dims)
        self.num_args, self.name = rule.num_args, f"{rule.name}_vmap"
        self.symbolic_zeros = getattr(rule, "symbolic_zeros", False)
        if getattr(rule, "transpose", None) is not None:
            self.transpose = self._transpose  # the rule transposes itself: so does its batch

    def _transpose(self, cts, operands):
        """The rule's transpose traced on one example, then batched; cotangents of inputs
        every example shares are summed over the batch."""
        axis, dims = self.axis, self.dims
        linear = [isinstance(x, UndefinedPrimal) for x in operands]
        vals = [x for x, lin in zip(operands, linear) if not lin]
        vdims = [d for d, lin in zip(dims, linear) if not lin]
        per_vals = [_per_example(v, d) for v, d in zip(vals, vdims)]
        per_lin = [
            UndefinedPrimal(ShapedArray(_drop(x.aval.shape, d), x.aval.dtype))
            for x, d, lin in zip(operands, dims, linear)
            if lin
        ]
        cts = [bdim_at_front(axis, instantiate(c), 0) for c in cts]
        per_cts = [_per_example(c, 0) for c in cts]

        def one(*xs):
            it_v, it_l = iter(xs[: len(vals)]), iter(per_lin)
            ops_ = [next(it_l) if lin else next(it_v) for lin in linear]
            got = self.rule.transpose(list(xs[len(vals) :]), ops_)
            return [instantiate(g, u.aval) for g, u in zip([g for g, lin in zip(got, linear)
                                                            if lin], per_lin)]  # fmt: skip

        closed = _trace_per_example(one, per_vals + per_cts, self.name + "_transpose")
        ins = [*vals, *cts, *closed.captures]
        ds = [*vdims, *[0] * len(cts), *[None] * len(closed.captures)]
        got, gdims = batch_function(closed.fn, ins, ds, axis)
        out, it = [], iter(zip(got, gdims))
        for lin, d in zip(linear, dims):
            if not lin:
                out.append(None)
                continue
            g, gd = next(it)
            if d is None:  # an input every example shares: the sum of cotangents
                out.append(g if gd is None else reduce_batch(g, gd, "add"))
            else:
                out.append(bdim_at_front(axis, g, gd))
        return out

    def jvp(self, primals, tangents):
        n, axis = len(primals), self.axis
        pdims = self.dims[:n]
        per = [_per_example(p, d) for p, d in zip(primals, pdims)]
        # an integer input's tangent comes as a host array of float0, which has no aval
        live = [
            i
            for i, t in enumerate(tangents)
            if not isinstance(t, SymbolicZero) and np.dtype(_dtype_of(t)) != pdt.float0
        ]

        def one(*xs):
            it = iter(xs[n:])
            ts = [
                next(it) if i in live else _zero_per_example(t, per[i])
                for i, t in enumerate(tangents)
            ]
            return self.rule.jvp(list(xs[:n]), ts)

        closed = _trace_per_example(one, per + [per[i] for i in live], self.name)
        ins = [*primals, *[tangents[i] for i in live], *closed.captures]
        ds = [*pdims, *[pdims[i] for i in live], *[None] * len(closed.captures)]
        outs, odims = batch_function(closed.fn, ins, ds, axis)
        return _all_front(axis, outs, odims)


def _zero_per_example(t, per: ShapedArray):
    """A zero tangent of one example: symbolic if the batched one is."""
    if isinstance(t, SymbolicZero):
        return SymbolicZero(tangent_aval(per))
    return np.zeros(per.shape, pdt.float0)


def _dtype_of(x):
    return x.dtype if isinstance(x, np.ndarray) else aval_of(x).dtype


class _BatchedVJP:
    """A custom_vjp rule batched: the user's fwd and bwd traced on one example, then
    batched; cotangents of unbatched inputs are summed over the batch."""

    def __init__(self, rule, axis, dims, res_dims=None):
        self.rule, self.axis, self.dims = rule, axis, list(dims)
        self.num_args, self.name = rule.num_args, f"{rule.name}_vmap"
        self.res_dims = res_dims
        self.in_avals = None
        self.symbolic_zeros = getattr(rule, "symbolic_zeros", False)

    def fwd(self, primals, perturbed=None):
        n, axis = len(primals), self.axis
        pdims = self.dims[:n]
        per = [_per_example(p, d) for p, d in zip(primals, pdims)]
        box = []

        def one(*xs):
            outs, res = self.rule.fwd(list(xs), perturbed)
            box.append(len(outs))
            return [*outs, *res]

        closed = _trace_per_example(one, per, self.name + "_fwd")
        ins = [*primals, *closed.captures]
        outs, odims = batch_function(closed.fn, ins, [*pdims, *[None] * len(closed.captures)], axis)
        outs = _all_front(axis, outs, odims)
        m = box[0]
        self.res_dims = [0] * (len(outs) - m)
        self.in_avals = [aval_of(p) for p in primals]
        self.per_in = per
        return outs[:m], outs[m:]

    def bwd_flat(self, res, cts):
        axis = self.axis
        # residuals and cotangents (of the batched op's results) all carry the batch first
        res_per = [_per_example(r, 0) for r in res]
        # a symbolic zero cotangent stays symbolic: the user's bwd sees one per example
        zero = [isinstance(c, SymbolicZero) for c in cts]
        per_zero = [SymbolicZero(ShapedArray(c.shape[1:], c.dtype)) if z else None
                    for c, z in zip(cts, zero)]  # fmt: skip
        cts = [c for c, z in zip(cts, zero) if not z]
        ct_per = [_per_example(c, 0) for c in cts]
        ct_dims = [0] * len(cts)
        per_in = self.per_in
        floats = [i for i, a in enumerate(per_in) if is_differentiable_dtype(a.dtype)]

        def one(*xs):
            it = iter(xs[len(res) :])
            per_cts = [pz if z else next(it) for pz, z in zip(per_zero, zero)]
            got = self.rule.bwd_flat(list(xs[: len(res)]), per_cts)
            out = []
            for g, i in zip(got, floats):
                a = per_in[i]
                out.append(np.zeros(a.shape, a.dtype) if isinstance(g, Zero) else g)
            return out

        closed = _trace_per_example(one, res_per + ct_per, self.name + "_bwd")
        ins = [*res, *cts, *closed.captures]
        ds = [*[0] * len(res), *ct_dims, *[None] * len(closed.captures)]
        got, gdims = batch_function(closed.fn, ins, ds, axis)
        out = []
        for g, d, i in zip(got, gdims, floats):
            if self.dims[i] is None:  # an input every example shares: the sum of cotangents
                out.append(g if d is None else reduce_batch(g, d, "add"))
            else:
                out.append(bdim_at_front(axis, g, d))
        return out


def _batched_key(kind: str, batched: type, rule: str, axis, bdims, what=()) -> str:
    """The key of `rule` batched over `axis` at `bdims`: one rule per (rule, axis size and
    name, mapped dimensions, `what` else decides it), so a vmapped call traced again names
    the same rule and hits the compile caches."""
    base = CUSTOM_RULES[rule]
    what = (rule, axis.size, axis.name, axis.spmd_name, tuple(bdims), what)
    return intern_custom(kind, base.name + "_vmap", what, lambda: batched(base, axis, bdims))


@defrule("custom_jvp_call")
def custom_jvp_call_rule(axis, args, dims, *, regions, rule):
    _, bdims = _front(axis, args, dims)
    key = _batched_key("custom_jvp", _BatchedJVP, rule, axis, bdims)
    return _region_call("custom_jvp_call", axis, args, dims, regions, {}, key)


@defrule("custom_vjp_call")
def custom_vjp_call_rule(axis, args, dims, *, regions, rule):
    _, bdims = _front(axis, args, dims)
    # the batched fwd keeps what its bwd reads (the per-example input types): one rule per
    # input types, so that two uses of different shapes never share it
    avals = tuple(aval_of(x) for x in args)
    key = _batched_key("custom_vjp", _BatchedVJP, rule, axis, bdims, avals)
    return _region_call("custom_vjp_call", axis, args, dims, regions, {}, key)


@defrule("custom_lin")
def custom_lin_rule(axis, args, dims, *, rule, num_res, out_types):
    raise NotImplementedError(
        "vmap of a linear program holding a custom_vjp function's linear map (custom_lin): "
        "take vmap of the vjp's pullback instead (jacrev does), which runs the bwd rule batched"
    )
