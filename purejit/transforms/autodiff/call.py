"""JVP, linearize (partial evaluation) and transpose rules of `call` (`ir/ops/call.py`).

Each rule produces another call, so a called function stays one function under every
transformation (JAX's `jit_p` rules):

    jvp        call of the JVP'd function: (primals, nonzero tangents) -> (outs, tangents)
    linearize  split in two: a known call (the primal results and the residuals the linear
               part reads) and an unknown call (the linear part: tangents, residuals ->
               output tangents)
    transpose  a linear call becomes a call of the transposed function: (known operands,
               cotangents) -> cotangents of the linear operands

so eager `grad(jit(f))` can end as two compiled programs, a forward and a backward one. The
region work is `case`'s with one branch and no index (`control.py`).
"""

from __future__ import annotations

from typing import NamedTuple

from purejit.ir import Function
from purejit.passes._isomorphism import bucket_key, compare
from purejit.tracing import bind, context, current_trace, trace_to_function
from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff import remat
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    aval,
    defjvp,
    deftranspose,
    instantiate,
    is_differentiable_dtype,
    is_linear,
    tangent_aval,
)
from purejit.transforms.autodiff.control import (
    RegionSplit,
    _closed,
    _Flat,
    _jvp_region,
    _nonzero,
    _pav,
    _tangent_pattern,
)


def _name(attrs, fn) -> str:
    return attrs.get("callee") or fn.name


def _out_tangents(outs, touts, nz_out):
    it = iter(touts)
    return [next(it) if nz else Zero(tangent_aval(aval(o))) for o, nz in zip(outs, nz_out)]


@defjvp("call")
def _call_jvp(ctx, primals, tangents, attrs, regions):
    (fn,) = regions
    uniform = ctx.linearizing and remat.current_settings().uniform_calls
    if uniform:
        tangents = _uniform(primals, tangents, fn)
    nz_in = _nonzero(tangents)
    if ctx.linearizing:
        args, name = list(primals), _name(attrs, fn)
        split = _split_of(ctx, fn, nz_in, name)
        return _call_linearize(args, list(tangents), nz_in, split, len(fn.results), name, uniform)
    nz_out = _tangent_pattern(fn, nz_in)
    body = _jvp_region(fn, nz_in, nz_out, _Flat)
    live = [t for t in tangents if not isinstance(t, Zero)]
    res = bind("call", *primals, *live, regions=[body], callee=_name(attrs, fn) + "_jvp")
    n = len(fn.results)
    return res[:n], _out_tangents(res[:n], res[n:], nz_out)


def _uniform(primals, tangents, fn):
    """`tangents` with zeros for the zero tangents of differentiable operands of a type
    one of `fn`'s results has: the layers of a chain are then linearized alike (the first
    one's input is often not differentiated), so they roll into one loop. Where rolling
    does not happen, what the zeros add is read by nothing once the linear part is
    transposed, and DCE removes it."""
    out_types = {(r.type.shape, r.type.dtype) for r in fn.results}
    out = []
    for p, t in zip(primals, tangents):
        a = aval(p)
        if isinstance(t, Zero) and is_differentiable_dtype(a.dtype):
            if (tuple(a.shape), a.dtype) in out_types:
                t = instantiate(t, tangent_aval(a))
        out.append(t)
    return out


class _Split(NamedTuple):
    """What a call's linearization keeps of its body's `RegionSplit`: the known call's
    function (the primal results, then the residuals it computes that are neither an
    operand nor a result of the call), the linear function, where each residual the
    linear function reads comes from (`("arg", k)`: the call's operand k, `("out", k)`:
    its result k, `("own", k)`: the known function's result `n + k`) and which output
    tangents are nonzero."""

    primal: Function
    linear: Function
    where: list
    nz_out: list


def _split_of(ctx, fn: Function, nz_in, name: str) -> _Split:
    """The linearized body of a call of `fn`, planned as the same ops written inline would
    be (`remat.rematerialize_call`). Made once per body in an interpretation: a later call
    of a body proved isomorphic to an earlier one's (`compare`, constants included: the
    layers of a chain) gets copies of its functions (so the copies of one are in one
    `Function.copy_class`: later proofs among them are free), and its remat records
    again."""
    key = (bucket_key(fn), tuple(nz_in), name)
    for other, split, records in ctx.calls.get(key, ()):
        if compare(other, fn, constants_may_differ=False).reason is None:
            for r in records:
                context.remat_record(r)
            return split._replace(primal=split.primal.copy(), linear=split.linear.copy())
    with context.collecting_remat_records() as records, context.collecting_pins() as pins:
        made = remat.rematerialize_call(lambda: RegionSplit(fn, nz_in), name)
    for r in records:
        context.remat_record(r)
    split = _known_part(made, len(fn.results))
    if not pins:  # a body pinning values (a checkpoint) is linearized at each call
        ctx.calls.setdefault(key, []).append((fn, split, list(records)))
    return split


def _known_part(made, n: int) -> _Split:
    """`made` (a `RegionSplit` of a body with `n` results) as a `_Split`: a residual that
    is an operand or a result of the call is read from it, not returned again (the
    enclosing differentiation's plan decides whether it is saved)."""
    pb = made.primal
    where = [("arg", p) for p in made.res_is_param]
    own = []
    for k, (v, (_, p)) in enumerate(zip(pb.results[n:], where)):
        if p is None and v in pb.results[:n]:
            where[k] = ("out", pb.results[:n].index(v))
        elif p is None:
            where[k] = ("own", len(own))
            own.append(v)
    primal = Function(pb.name, pb.params, pb.ops, [*pb.results[:n], *own])
    return _Split(primal, made.linear, where, made.nz_out)


def _call_linearize(args, targs, nz_in, split, n, name, uniform=False):
    res = bind("call", *args, regions=[split.primal], callee=name + "_fwd")
    outs, mine = res[:n], res[n:]
    src = {"arg": args, "out": outs, "own": mine}
    residuals = [src[kind][i] for kind, i in split.where]
    live = [
        instantiate(t, tangent_aval(aval(a)))
        for t, a, nz in zip(targs, args, nz_in)
        if nz and is_differentiable_dtype(aval(a).dtype)
    ]
    touts = []
    if any(split.nz_out):
        # under `uniform_calls` the tangents stay linear in the transposition even where
        # one is a zero made here, so every layer's transposed function is the same
        more = {"linear": len(live)} if uniform else {}
        touts = bind(
            "call", *live, *residuals, regions=[split.linear], callee=name + "_lin", **more
        )
    return outs, _out_tangents(outs, touts, split.nz_out)


def _transposed(fn: Function, lin: list, trace) -> Function:
    """The transposition of the linear body `fn` (in its `lin` operands) that `trace()`
    makes, made once per trace being built: a later call whose body is proved isomorphic
    to an earlier one's (`compare`, constants included: the layers of a chain) gets a copy
    of the first one's transposed function."""
    tr = current_trace()
    if tr is context.base():  # eager: the base trace lives on, its memo would grow forever
        return _closed(trace(), "call transpose")
    memo = context.ctx.transposed_calls.setdefault(tr, {})
    key = (bucket_key(fn), tuple(lin))
    for other, made in memo.get(key, ()):
        if compare(other, fn, constants_may_differ=False).reason is None:
            return made.copy()
    made = _closed(trace(), "call transpose")
    memo.setdefault(key, []).append((fn, made))
    return made


@deftranspose("call")
def _call_t(cts, operands, attrs, regions):
    (fn,) = regions
    # the first `linear` operands are tangents: transposed as linear even when one is a
    # known value (a zero tangent made for `uniform_calls`), its cotangent then dropped
    n_lin = attrs.get("linear", 0)
    lin = [is_linear(a) or k < n_lin for k, a in enumerate(operands)]
    known = [a for a, is_l in zip(operands, lin) if not is_l]
    out_avals = [_pav(r) for r in fn.results]
    cts = [instantiate(c, a) for c, a in zip(cts, out_avals)]
    avals = [_pav(p) for p in fn.params]
    lin_avals = [a for a, is_l in zip(avals, lin) if is_l]
    kn_avals = [a for a, is_l in zip(avals, lin) if not is_l]

    def body(*xs):
        kn, cs = xs[: len(known)], xs[len(known) :]
        it = iter(kn)
        vals = [None if is_l else next(it) for is_l in lin]
        got = interp.transpose_function(fn, lin, vals, list(cs))
        return [instantiate(g, a) for g, a in zip(got, lin_avals)]

    fn_t = _transposed(
        fn, lin, lambda: trace_to_function(body, kn_avals + out_avals, name=fn.name + "_t")
    )
    got = iter(bind("call", *known, *cts, regions=[fn_t], callee=_name(attrs, fn) + "_t"))
    outs = [next(got) if is_l else None for is_l in lin]
    return [ct if is_linear(a) else None for ct, a in zip(outs, operands)]


LINEAR_OPS.add("call")
