"""Rules of the autodiff family (`ir/ops/autodiff.py`).

`stop_gradient` has a zero derivative; `optimization_barrier` is the identity, kept on
tangents and cotangents too. `custom_jvp_call` evaluates the user's JVP rule (traced to
IR first, so its ops land in whichever trace their operands live in). `custom_vjp_call`
runs the user's fwd in the forward pass and leaves a `custom_lin` in the linear program,
whose transpose runs the user's bwd. `checkpoint`, when linearized, runs its function
forward keeping only what its policy saves; the linear program recomputes the rest from
the inputs passed through an `optimization_barrier` (so no pass merges the recomputation
back into the forward pass), and those recomputing ops, which read no tangent, run in the
backward pass when the program is transposed.
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit.ir import Function
from purejit.tracing import set_current_trace, trace_to_function
from purejit.transforms.autodiff import control
from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff import remat
from purejit.transforms.autodiff._core import (
    CUSTOM_RULES,
    LINEAR_OPS,
    SymbolicZero,
    Zero,
    aval,
    defjvp,
    deftranspose,
    instantiate,
    is_differentiable_dtype,
    is_linear,
    op,
    ops,
    tangent_aval,
)

float0 = pdt.float0


@defjvp("stop_gradient")
def _stop_gradient_jvp(ctx, primals, tangents, attrs, regions):
    y = op("stop_gradient", primals[0])
    return [y], [Zero(aval(y))]


def _barrier(xs):
    live = [x for x in xs if not isinstance(x, Zero)]
    got = iter(ops("optimization_barrier", *live) if live else [])
    return [x if isinstance(x, Zero) else next(got) for x in xs]


@defjvp("optimization_barrier")
def _barrier_jvp(ctx, primals, tangents, attrs, regions):
    return ops("optimization_barrier", *primals), _barrier(tangents)


@deftranspose("optimization_barrier")
def _barrier_t(cts, operands, attrs, regions):
    return _barrier(cts)


LINEAR_OPS.update({"optimization_barrier"})


# ---- custom_jvp_call, custom_vjp_call, custom_lin -------------------------------------------


def _trace_rule(fun, avals, name):
    """Trace a user's rule (flat in, flat out) at a new level: (function, captured values)."""
    t = trace_to_function(fun, avals, name=name)
    return t.fn, t.captures


def _explicit(rule, values):
    return list(values[: rule.num_args])


def _check_closure_tangents(rule, tangents, what):
    if any(not isinstance(t, Zero) for t in tangents[rule.num_args :]):
        raise NotImplementedError(
            f"{what} function {rule.name!r} closes over a value that is being differentiated; "
            "pass it as an argument (purejit.closure_convert makes the closure explicit)"
        )


@defjvp("custom_jvp_call")
def _custom_jvp_jvp(ctx, primals, tangents, attrs, regions):
    rule = CUSTOM_RULES[attrs["rule"]]
    _check_closure_tangents(rule, tangents, "custom_jvp")
    ps = _explicit(rule, primals)
    p_avals = [aval(p) for p in ps]
    diff = [is_differentiable_dtype(a.dtype) for a in p_avals]
    # with symbolic zeros the rule sees a SymbolicZero for each tangent known to be zero
    sz = getattr(rule, "symbolic_zeros", False)
    live = [d and not (sz and isinstance(t, Zero)) for t, d in zip(tangents, diff)]
    t_avals = [a for a, lv in zip(p_avals, live) if lv]
    n = len(ps)

    def flat(*args):
        it = iter(args[n:])
        ts = [
            next(it) if lv else SymbolicZero(tangent_aval(a)) if sz else np.zeros(a.shape, float0)
            for a, lv in zip(p_avals, live)
        ]
        return rule.jvp(list(args[:n]), ts)

    fn, caps = _trace_rule(flat, p_avals + t_avals, rule.name + "_jvp")
    ts = [instantiate(t, tangent_aval(a)) for t, a, lv in zip(tangents, p_avals, live) if lv]
    got = interp.evaluate(fn, [*ps, *ts, *caps])
    m = len(regions[0].results)
    outs, touts = got[:m], got[m:]
    return outs, touts


@deftranspose("custom_jvp_call")
def _custom_jvp_t(cts, operands, attrs, regions):
    # in a linear program: a rule may transpose itself (custom_linear_solve's runs the
    # transposed solve); otherwise, as in JAX, the function is itself (its region) there
    rule = CUSTOM_RULES[attrs["rule"]]
    own = getattr(rule, "transpose", None)
    if own is not None:
        return own(cts, operands)
    linear = [is_linear(x) for x in operands]
    args = [None if lin else x for x, lin in zip(operands, linear)]
    got = iter(interp.transpose_function(regions[0], linear, args, cts))
    return [next(got) if lin else None for lin in linear]


LINEAR_OPS.add("custom_jvp_call")


@defjvp("custom_vjp_call")
def _custom_vjp_jvp(ctx, primals, tangents, attrs, regions):
    rule = CUSTOM_RULES[attrs["rule"]]
    if not ctx.linearizing:
        raise interp.NonDifferentiableError(
            f"can't apply forward-mode autodiff (jvp) to a custom_vjp function "
            f"({rule.name!r}); use reverse mode (grad, vjp) or define it with custom_jvp"
        )
    _check_closure_tangents(rule, tangents, "custom_vjp")
    ps = _explicit(rule, primals)
    p_avals = [aval(p) for p in ps]
    box = []
    perturbed = [
        is_differentiable_dtype(a.dtype) and not isinstance(t, Zero)
        for t, a in zip(tangents, p_avals)
    ]

    def flat(*args):
        outs, res = rule.fwd(list(args), perturbed)
        box.append(len(outs))
        return [*outs, *res]

    fn, caps = _trace_rule(flat, p_avals, rule.name + "_fwd")
    got = interp.evaluate(fn, [*ps, *caps])
    m = box[0]
    outs, res = got[:m], got[m:]
    remat.pin(res)  # what the user's fwd saves is saved
    diff = [is_differentiable_dtype(a.dtype) for a in p_avals]
    ts = [instantiate(t, tangent_aval(a)) for t, a, d in zip(tangents, p_avals, diff) if d]
    out_types = tuple((tuple(aval(o).shape), aval(o).dtype) for o in outs)
    touts = ops("custom_lin", *res, *ts, rule=attrs["rule"], num_res=len(res), out_types=out_types)
    floats = [is_differentiable_dtype(aval(o).dtype) for o in outs]
    return outs, [t if f else Zero(tangent_aval(aval(o))) for t, f, o in zip(touts, floats, outs)]


LINEAR_OPS.add("custom_lin")


@defjvp("custom_lin")
def _custom_lin_jvp(ctx, primals, tangents, attrs, regions):
    # linear in its tangent operands: the same map applied to their tangents
    n = attrs["num_res"]
    outs = ops("custom_lin", *primals, **attrs)
    ts = [instantiate(t, aval(p)) for t, p in zip(tangents[n:], primals[n:])]
    return outs, ops("custom_lin", *primals[:n], *ts, **attrs)


@deftranspose("custom_lin")
def _custom_lin_t(cts, operands, attrs, regions):
    rule = CUSTOM_RULES[attrs["rule"]]
    n = attrs["num_res"]
    res, lin = operands[:n], operands[n:]
    sz = getattr(rule, "symbolic_zeros", False)
    cts = [
        (SymbolicZero(c.aval) if sz else instantiate(c, aval(c))) if isinstance(c, Zero) else c
        for c in cts
    ]
    got = rule.bwd_flat(list(res), cts)  # one cotangent (or Zero) per float input
    return [*[None] * n, *got[: len(lin)]]


# ---- checkpoint ---------------------------------------------------------------------------------


class Prim:
    """What a checkpoint policy is asked about: the op that made a value (`.name`)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


@defjvp("checkpoint")
def _checkpoint_jvp(ctx, primals, tangents, attrs, regions):
    (body,) = regions
    if not ctx.linearizing:
        return interp.jvp_function(body, primals, tangents, ctx)
    rule = CUSTOM_RULES[attrs["rule"]]
    nz = [not isinstance(t, Zero) for t in tangents]
    split = control.RegionSplit(body, nz)
    pfn = split.primal
    n_out = split.num_out
    # the values the policy saves: inputs are always at hand; others are recomputed
    saved = []
    for o in pfn.ops:
        if rule.saveable(o):
            saved.extend(r for r in o.results if r not in saved)
    fwd = Function(pfn.name, pfn.params, pfn.ops, [*pfn.results[:n_out], *saved])
    got = interp.evaluate(fwd, primals)
    outs, saved_vals = got[:n_out], got[n_out:]
    remat.pin([*primals, *saved_vals])  # the user's policy wins over automatic remat
    lin_trace = ctx.linear_trace
    with set_current_trace(lin_trace):
        ins = list(primals)
        if attrs.get("prevent_cse", True) and ins:
            ins = ops("optimization_barrier", *ins)
        overrides = dict(zip(saved, saved_vals))
        rec = interp.evaluate(pfn, ins, overrides)
        res = rec[n_out:]
        live = [
            instantiate(t, tangent_aval(aval(p)))
            for t, p, z in zip(tangents, primals, nz)
            if z and is_differentiable_dtype(aval(p).dtype)
        ]
        touts = interp.evaluate(split.linear, [*live, *res])
    it = iter(touts)
    nz_out = split.nz_out
    return outs, [next(it) if z else Zero(tangent_aval(aval(o))) for o, z in zip(outs, nz_out)]


@defjvp("checkpoint_name")
def _checkpoint_name_jvp(ctx, primals, tangents, attrs, regions):
    return [op("checkpoint_name", primals[0], **attrs)], [tangents[0]]
