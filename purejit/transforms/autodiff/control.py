"""JVP and transpose rules of the control-flow ops (`ir/ops/control.py`): `case`, `scan`,
`while`.

Forward mode differentiates the regions and runs one op over (primal, tangent) pairs.
Reverse mode must keep primal work in the forward pass and the linear work in the linear
program, so `case` and `scan` are split when linearizing: each region is linearized in a
trace of its own, giving a primal region that also returns its residuals and a linear
region that reads them. A `case`'s branches return the union of every branch's residuals
(zeros for the others'); a `scan`'s residuals are stacked along the loop (loop constants
are passed once), and the transpose of the linear scan is a scan in the other direction.
`while` has no reverse mode (its trip count is not known when the program is built), as
in JAX.
"""

from __future__ import annotations

import numpy as np

from purejit.ir import Function, Value
from purejit.ir.ops.control import scan_split
from purejit.tracing import (
    JitTrace,
    ShapedArray,
    bind,
    current_trace,
    new_trace,
    set_current_trace,
    trace_to_function,
)
from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff import remat
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    aval,
    defjvp,
    deftranspose,
    full,
    instantiate,
    is_differentiable_dtype,
    is_linear,
    tangent_aval,
    zeros,
)


def _pav(v: Value) -> ShapedArray:
    return ShapedArray(v.type.shape, v.type.dtype)


def _closed(traced, what: str) -> Function:
    if traced.captures:
        raise NotImplementedError(f"{what}: a differentiated region read values from outside")
    return traced.fn


def _nonzero(ts) -> list[bool]:
    return [not isinstance(t, Zero) for t in ts]


def _tangent_pattern(fn: Function, nz_in: list[bool]) -> list[bool]:
    """Which results of `fn` get a nonzero tangent when the inputs `nz_in` have one."""
    avals = [_pav(p) for p in fn.params]
    box = []

    def probe(*xs):
        ts = [
            x if nz and is_differentiable_dtype(a.dtype) else Zero(tangent_aval(a))
            for x, a, nz in zip(xs, avals, nz_in)
        ]
        outs, touts = interp.jvp_function(fn, xs, ts, interp.Context(linearizing=False))
        box.append(_nonzero(touts))
        return outs

    trace_to_function(probe, avals, name="probe")
    return box[0]


def _jvp_region(fn: Function, nz_in: list[bool], nz_out: list[bool], layout) -> Function:
    """The forward-mode region of `fn`: params and results laid out by `layout`, a function
    of (primal list, tangent list) -> ordered list, applied to both sides."""
    avals = [_pav(p) for p in fn.params]
    t_avals = [tangent_aval(a) for a, nz in zip(avals, nz_in) if nz]
    n = len(avals)

    def body(*args):
        prim, tans = layout.unpack_in(args, n, nz_in)
        ts = [t if nz else Zero(tangent_aval(a)) for t, a, nz in zip(tans, avals, nz_in)]
        outs, touts = interp.jvp_function(fn, prim, ts, interp.Context(linearizing=False))
        touts = [instantiate(t, _pav(r)) for t, r, nz in zip(touts, fn.results, nz_out) if nz]
        return layout.pack_out(outs, touts)

    in_avals = layout.pack_in_avals(avals, t_avals, nz_in)
    return _closed(trace_to_function(body, in_avals, name=fn.name + "_jvp"), "jvp")


class _Flat:
    """Primals then tangents (case branches)."""

    @staticmethod
    def unpack_in(args, n, nz):
        prim = list(args[:n])
        it = iter(args[n:])
        return prim, [next(it) if z else None for z in nz]

    @staticmethod
    def pack_in_avals(avals, t_avals, nz):
        return [*avals, *t_avals]

    @staticmethod
    def pack_out(outs, touts):
        return [*outs, *touts]


# ---- case ------------------------------------------------------------------------------------


@defjvp("case")
def _case_jvp(ctx, primals, tangents, attrs, regions):
    index, args = primals[0], primals[1:]
    targs = tangents[1:]
    nz_in = _nonzero(targs)
    if ctx.linearizing:
        return _case_linearize(index, args, targs, nz_in, regions)
    nz_out = [False] * len(regions[0].results)
    for r in regions:
        nz_out = [a or b for a, b in zip(nz_out, _tangent_pattern(r, nz_in))]
    branches = [_jvp_region(r, nz_in, nz_out, _Flat) for r in regions]
    live = [t for t in targs if not isinstance(t, Zero)]
    res = bind("case", index, *args, *live, regions=branches)
    n = len(regions[0].results)
    it = iter(res[n:])
    outs = res[:n]
    return outs, [next(it) if nz else Zero(tangent_aval(aval(o))) for o, nz in zip(outs, nz_out)]


class RegionSplit:
    """A region linearized in its own traces: the primal part (a function returning the
    primal results then the residuals) and the linear one."""

    def __init__(self, fn: Function, nz_in: list[bool], nz_out_force=None):
        avals = [_pav(p) for p in fn.params]
        self.nz_in = nz_in
        box = {}

        def primal(*xs):
            outer = current_trace()
            lin = JitTrace(fn.name + "_lin")
            with new_trace(lin), set_current_trace(outer):
                ts = [
                    lin.new_arg(tangent_aval(a))
                    if nz and is_differentiable_dtype(a.dtype)
                    else Zero(tangent_aval(a))
                    for a, nz in zip(avals, nz_in)
                ]
                outs, touts = interp.jvp_function(fn, xs, ts, interp.Context(True, lin))
                nz_out = _nonzero(touts) if nz_out_force is None else nz_out_force
                with set_current_trace(lin):
                    touts = [
                        instantiate(t, tangent_aval(_pav(r)))
                        for t, r, nz in zip(touts, fn.results, nz_out)
                        if nz
                    ]
                results = [lin.lift(t) for t in touts]
            box["lin"] = lin.builder.finish(results)
            box["tparams"] = [t for t in ts if not isinstance(t, Zero)]
            box["res"] = [x for x, _ in lin.captures]
            box["res_params"] = [v for _, v in lin.captures]
            box["nz_out"] = nz_out
            box["params"] = list(xs)
            box["outs"] = list(outs)
            return [*outs, *box["res"]]

        traced = trace_to_function(primal, avals, name=fn.name + "_fwd")
        self.primal = _closed(traced, "linearize")
        self.linear = box["lin"]  # params: tangents (nz_in), then residuals
        self.num_tangents = len(box["tparams"])
        self.res_params = box["res_params"]
        self.res_avals = [_pav(v) for v in box["res_params"]]
        self.nz_out = box["nz_out"]
        # which residuals are the region's own parameters (index), else None
        ids = {id(p): k for k, p in enumerate(box["params"])}
        self.res_is_param = [ids.get(id(r)) for r in box["res"]]
        self.num_out = len(fn.results)


def _case_linearize(index, args, targs, nz_in, regions):
    nz_out = [False] * len(regions[0].results)
    for r in regions:
        nz_out = [a or b for a, b in zip(nz_out, _tangent_pattern(r, nz_in))]
    splits = [RegionSplit(r, nz_in, nz_out) for r in regions]
    n_out = len(regions[0].results)
    # residual slots: every branch's residuals, one after another
    slots = [a for s in splits for a in s.res_avals]
    primal_branches, linear_branches, start = [], [], 0
    for s in splits:
        k = len(s.res_avals)
        own = range(start, start + k)

        def fwd(*xs, s=s, own=own):
            got = interp.evaluate(s.primal, xs)
            outs, res = got[:n_out], iter(got[n_out:])
            return [*outs, *[next(res) if j in own else zeros(a) for j, a in enumerate(slots)]]

        avals = [_pav(p) for p in regions[0].params]
        primal_branches.append(_closed(trace_to_function(fwd, avals, name="branch_fwd"), "case"))
        lin = s.linear
        tparams = lin.params[: s.num_tangents]
        res_params = iter(lin.params[s.num_tangents :])
        slot_params = [next(res_params) if j in own else Value(a.type) for j, a in enumerate(slots)]
        linear_branches.append(Function(lin.name, [*tparams, *slot_params], lin.ops, lin.results))
        start += k
    res = bind("case", index, *args, regions=primal_branches)
    outs, residuals = res[:n_out], res[n_out:]
    live = [
        instantiate(t, tangent_aval(aval(a)))
        for t, a, nz in zip(targs, args, nz_in)
        if nz and is_differentiable_dtype(aval(a).dtype)
    ]
    touts = bind("case", index, *live, *residuals, regions=linear_branches) if any(nz_out) else []
    it = iter(touts)
    return outs, [next(it) if nz else Zero(tangent_aval(aval(o))) for o, nz in zip(outs, nz_out)]


@deftranspose("case")
def _case_t(cts, operands, attrs, regions):
    index, args = operands[0], operands[1:]
    lin = [is_linear(a) for a in args]
    known = [a for a in args if not is_linear(a)]
    out_avals = [_pav(r) for r in regions[0].results]
    cts = [instantiate(c, a) for c, a in zip(cts, out_avals)]
    avals = [_pav(p) for p in regions[0].params]
    lin_avals = [a for a, is_l in zip(avals, lin) if is_l]

    def branch_t(region):
        def body(*xs):
            kn, cs = xs[: len(known)], xs[len(known) :]
            it = iter(kn)
            vals = [None if is_l else next(it) for is_l in lin]
            got = interp.transpose_function(region, lin, vals, list(cs))
            return [instantiate(g, a) for g, a in zip(got, lin_avals)]

        kn_avals = [a for a, is_l in zip(avals, lin) if not is_l]
        traced = trace_to_function(body, kn_avals + out_avals, name=region.name + "_t")
        return _closed(traced, "case transpose")

    branches = [branch_t(r) for r in regions]
    got = iter(bind("case", index, *known, *cts, regions=branches))
    return [None, *[next(got) if is_l else None for is_l in lin]]


LINEAR_OPS.update({"case", "scan"})

# ---- scan ------------------------------------------------------------------------------------


def _carry_fixpoint(body: Function, attrs, nz_consts, nz_carry, nz_xs):
    """Carry tangents that are nonzero in some iteration (a fixed point over the body)."""
    ncarry = int(attrs["num_carry"])
    nz_c = list(nz_carry)
    while True:
        out = _tangent_pattern(body, [*nz_consts, *nz_c, *nz_xs])
        new = [a or b for a, b in zip(nz_c, out[:ncarry])]
        if new == nz_c:
            return nz_c, out[ncarry:]
        nz_c = new


def _scan_attrs(attrs, num_consts, num_carry):
    out = dict(attrs)
    out["num_consts"] = num_consts
    out["num_carry"] = num_carry
    return out


@defjvp("scan")
def _scan_jvp(ctx, primals, tangents, attrs, regions):
    (body,) = regions
    consts, carry, xs = scan_split(attrs, primals)
    tc, tcarry, txs = scan_split(attrs, tangents)
    nz_k, nz_x = _nonzero(tc), _nonzero(txs)
    nz_c, nz_y = _carry_fixpoint(body, attrs, nz_k, _nonzero(tcarry), nz_x)
    if ctx.linearizing:
        lin_args = (consts, carry, xs, tc, tcarry, txs)
        return _scan_linearize(attrs, body, *lin_args, nz_k, nz_c, nz_x, nz_y)
    nk, nc = len(consts), len(carry)
    nz_in = [*nz_k, *nz_c, *nz_x]
    nz_out = [*nz_c, *nz_y]

    class Layout:
        @staticmethod
        def unpack_in(args, n, nz):
            # (consts, tconsts, carry, tcarry, x, tx)
            it = iter(args)
            groups = []
            for size, flags in ((nk, nz_k), (nc, nz_c), (len(xs), nz_x)):
                p = [next(it) for _ in range(size)]
                t = [next(it) if z else None for z in flags]
                groups.append((p, t))
            prim = [v for p, _ in groups for v in p]
            tans = [v for _, t in groups for v in t]
            return prim, tans

        @staticmethod
        def pack_in_avals(avals, t_avals, nz):
            it = iter(t_avals)
            out, k = [], 0
            for size, flags in ((nk, nz_k), (nc, nz_c), (len(xs), nz_x)):
                out += avals[k : k + size]
                out += [next(it) for z in flags if z]
                k += size
            return out

        @staticmethod
        def pack_out(outs, touts):
            it = iter(touts)
            tc_ = [next(it) for z in nz_c if z]
            ty = [next(it) for z in nz_y if z]
            return [*outs[:nc], *tc_, *outs[nc:], *ty]

    region = _jvp_region(body, nz_in, nz_out, Layout)
    live_k = [t for t in tc if not isinstance(t, Zero)]
    live_c = [instantiate(t, tangent_aval(aval(c))) for t, c, z in zip(tcarry, carry, nz_c) if z]
    live_x = [t for t in txs if not isinstance(t, Zero)]
    res = bind(
        "scan",
        *consts,
        *live_k,
        *carry,
        *live_c,
        *xs,
        *live_x,
        regions=[region],
        **_scan_attrs(attrs, nk + len(live_k), nc + len(live_c)),
    )
    n_tc = len(live_c)
    outs_c, t_c = res[:nc], res[nc : nc + n_tc]
    rest = res[nc + n_tc :]
    ny = len(body.results) - nc
    outs_y, t_y = rest[:ny], rest[ny:]
    itc, ity = iter(t_c), iter(t_y)
    touts = [next(itc) if z else Zero(tangent_aval(aval(o))) for o, z in zip(outs_c, nz_c)]
    touts += [next(ity) if z else Zero(tangent_aval(aval(o))) for o, z in zip(outs_y, nz_y)]
    return [*outs_c, *outs_y], touts


def _scan_linearize(attrs, body, consts, carry, xs, tc, tcarry, txs, nz_k, nz_c, nz_x, nz_y):
    nk, nc = len(consts), len(carry)
    # carry tangents at their fixed point, in and out
    split = remat.rematerialize_scan(  # what the backward recomputes instead of stacking
        lambda: RegionSplit(body, [*nz_k, *nz_c, *nz_x], [*nz_c, *nz_y]),
        nk,
        nc,
        int(attrs["length"]),
    )
    # residuals: a loop constant is passed once, a slice of xs is read from xs itself;
    # anything else is stacked along the loop
    const_res, stacked, xs_res = [], [], []
    for k, p in enumerate(split.res_is_param):
        kind = None if p is None else (const_res if p < nk else xs_res if p >= nk + nc else None)
        (stacked if kind is None else kind).append(k)
    pb = split.primal
    n_out = split.num_out
    res_results = pb.results[n_out:]
    primal_region = Function(
        pb.name, pb.params, pb.ops, [*pb.results[:n_out], *[res_results[k] for k in stacked]]
    )
    res = bind("scan", *consts, *carry, *xs, regions=[primal_region], **attrs)
    outs = res[:n_out]
    stacked_vals = [*res[n_out:], *[xs[split.res_is_param[k] - nk - nc] for k in xs_res]]
    stacked += xs_res
    const_vals = [consts[split.res_is_param[k]] for k in const_res]
    if not any(nz_c) and not any(nz_y):
        return outs, [Zero(tangent_aval(aval(o))) for o in outs]
    lin = split.linear
    nt = split.num_tangents
    tparams = lin.params[:nt]
    rparams = lin.params[nt:]
    n_tk, n_tc = sum(nz_k), sum(nz_c)
    tk_p, tc_p, tx_p = tparams[:n_tk], tparams[n_tk : n_tk + n_tc], tparams[n_tk + n_tc :]
    params = [*[rparams[k] for k in const_res], *tk_p, *tc_p, *tx_p, *[rparams[k] for k in stacked]]
    region = Function(lin.name, params, lin.ops, lin.results)
    live_k = [instantiate(t, tangent_aval(aval(c))) for t, c, z in zip(tc, consts, nz_k) if z]
    live_c = [instantiate(t, tangent_aval(aval(c))) for t, c, z in zip(tcarry, carry, nz_c) if z]
    live_x = [instantiate(t, tangent_aval(aval(x))) for t, x, z in zip(txs, xs, nz_x) if z]
    touts = bind(
        "scan",
        *const_vals,
        *live_k,
        *live_c,
        *live_x,
        *stacked_vals,
        regions=[region],
        **_scan_attrs(attrs, len(const_vals) + len(live_k), len(live_c)),
    )
    it = iter(touts)
    t_c = [next(it) if z else None for z in nz_c]
    t_y = [next(it) if z else None for z in nz_y]
    tans = [t if t is not None else Zero(tangent_aval(aval(o))) for t, o in zip(t_c, outs[:nc])]
    tans += [t if t is not None else Zero(tangent_aval(aval(o))) for t, o in zip(t_y, outs[nc:])]
    return outs, tans


@deftranspose("scan")
def _scan_t(cts, operands, attrs, regions):
    (body,) = regions
    consts, carry, xs = scan_split(attrs, operands)
    # a linear scan's carry holds tangents only; one that is not an undefined primal is a
    # tangent known to start at zero (a constant initial carry), whose cotangent is dropped
    carry_known = [not is_linear(c) for c in carry]
    nk, nc = len(consts), len(carry)
    lin_k = [is_linear(c) for c in consts]
    lin_x = [is_linear(x) for x in xs]
    known_k = [c for c in consts if not is_linear(c)]
    known_x = [x for x in xs if not is_linear(x)]
    ct_carry, ct_ys = cts[:nc], cts[nc:]
    b_avals = [_pav(p) for p in body.params]
    k_avals, c_avals = b_avals[:nk], b_avals[nk : nk + nc]
    x_avals = b_avals[nk + nc :]
    y_avals = [_pav(r) for r in body.results[nc:]]
    nz_y = _nonzero(ct_ys)
    lin_k_avals = [a for a, lk in zip(k_avals, lin_k) if lk]
    lin_x_avals = [a for a, lx in zip(x_avals, lin_x) if lx]
    n_kk, n_lk = len(known_k), len(lin_k_avals)

    def body_t(*args):
        it = iter(args)
        kk = [next(it) for _ in range(n_kk)]
        acc = [next(it) for _ in range(n_lk)]
        cc = [next(it) for _ in range(nc)]
        kx = [next(it) for _ in known_x]
        cy = [next(it) if z else Zero(a) for z, a in zip(nz_y, y_avals)]
        ik, ix = iter(kk), iter(kx)
        vals = [None if lk else next(ik) for lk in lin_k]
        vals += [None] * nc
        vals += [None if lx else next(ix) for lx in lin_x]
        mask = [*lin_k, *([True] * nc), *lin_x]
        got = interp.transpose_function(body, mask, vals, [*cc, *cy])
        g_k, g_c, g_x = got[:n_lk], got[n_lk : n_lk + nc], got[n_lk + nc :]
        new_acc = [a if isinstance(g, Zero) else bind("add", a, g)[0] for a, g in zip(acc, g_k)]
        return [
            *new_acc,
            *[instantiate(g, a) for g, a in zip(g_c, c_avals)],
            *[instantiate(g, a) for g, a in zip(g_x, lin_x_avals)],
        ]

    known_k_avals = [a for a, lk in zip(k_avals, lin_k) if not lk]
    known_x_avals = [a for a, lx in zip(x_avals, lin_x) if not lx]
    ct_y_avals = [a for a, z in zip(y_avals, nz_y) if z]
    in_avals = [*known_k_avals, *lin_k_avals, *c_avals, *known_x_avals, *ct_y_avals]
    region = _closed(trace_to_function(body_t, in_avals, name=body.name + "_t"), "scan transpose")
    acc0 = [zeros(a) for a in lin_k_avals]
    c0 = [instantiate(c, a) for c, a in zip(ct_carry, c_avals)]
    ys_ct = [c for c in ct_ys if not isinstance(c, Zero)]
    t_attrs = _scan_attrs(attrs, n_kk, n_lk + nc)
    t_attrs["reverse"] = not bool(attrs.get("reverse", False))
    res = bind("scan", *known_k, *acc0, *c0, *known_x, *ys_ct, regions=[region], **t_attrs)
    g_k, g_c, g_x = res[:n_lk], res[n_lk : n_lk + nc], res[n_lk + nc :]
    ik, ix = iter(g_k), iter(g_x)
    out = [next(ik) if lk else None for lk in lin_k]
    out += [None if known else g for g, known in zip(g_c, carry_known)]
    out += [next(ix) if lx else None for lx in lin_x]
    return out


# ---- while (forward mode only) ------------------------------------------------------------------


@defjvp("while")
def _while_jvp(ctx, primals, tangents, attrs, regions):
    cond, body = regions
    n = len(body.results)
    carry, inv = primals[:n], primals[n:]
    tcarry, tinv = tangents[:n], tangents[n:]
    nz_i = _nonzero(tinv)
    nz_c = _nonzero(tcarry)
    while True:
        out = _tangent_pattern(body, [*nz_c, *nz_i])
        new = [a or b for a, b in zip(nz_c, out)]
        if new == nz_c:
            break
        nz_c = new
    if not any(nz_c):
        # no tangent reaches the carry (e.g. only through floor or comparisons): the loop
        # is primal only, so reverse mode works too, as in JAX
        res = bind("while", *primals, regions=list(regions), **attrs)
        return res, [Zero(tangent_aval(aval(r))) for r in res]
    if ctx.linearizing:
        raise interp.NonDifferentiableError(
            "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
            "with dynamic start/stop values. Try using lax.scan, or using fori_loop with "
            "static start/stop."
        )
    nc = sum(nz_c)
    avals = [_pav(p) for p in body.params]
    c_avals, i_avals = avals[:n], avals[n:]
    tc_avals = [tangent_aval(a) for a, z in zip(c_avals, nz_c) if z]
    ti_avals = [tangent_aval(a) for a, z in zip(i_avals, nz_i) if z]
    in_avals = [*c_avals, *tc_avals, *i_avals, *ti_avals]

    def unpack(args):
        c = list(args[:n])
        tcv = list(args[n : n + nc])
        iv = list(args[n + nc : n + nc + len(inv)])
        tiv = list(args[n + nc + len(inv) :])
        itc, iti = iter(tcv), iter(tiv)
        ts = [next(itc) if z else Zero(tangent_aval(a)) for z, a in zip(nz_c, c_avals)]
        ts += [next(iti) if z else Zero(tangent_aval(a)) for z, a in zip(nz_i, i_avals)]
        return [*c, *iv], ts

    def cond_fn(*args):
        prim, _ = unpack(args)
        return interp.evaluate(cond, prim)

    def body_fn(*args):
        prim, ts = unpack(args)
        outs, touts = interp.jvp_function(body, prim, ts, interp.Context(linearizing=False))
        touts = [instantiate(t, tangent_aval(a)) for t, a, z in zip(touts, c_avals, nz_c) if z]
        return [*outs, *touts]

    cond_r = _closed(trace_to_function(cond_fn, in_avals, name="cond_jvp"), "while")
    body_r = _closed(trace_to_function(body_fn, in_avals, name="body_jvp"), "while")
    live_c = [instantiate(t, tangent_aval(aval(c))) for t, c, z in zip(tcarry, carry, nz_c) if z]
    live_i = [t for t in tinv if not isinstance(t, Zero)]
    res = bind("while", *carry, *live_c, *inv, *live_i, regions=[cond_r, body_r])
    it = iter(res[n:])
    return res[:n], [next(it) if z else Zero(tangent_aval(a)) for z, a in zip(nz_c, c_avals)]


__all__ = ["full", "np"]
