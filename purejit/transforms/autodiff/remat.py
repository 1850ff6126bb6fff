"""Automatic rematerialisation in reverse mode: what the forward pass saves for the backward.

`linearize` is `interpreter.linearize_function` for a function differentiated under `jit`
(the current trace records a program): it runs the linearization into a forward trace of
its own first, so the forward is an IR function whose results are the outputs then the
residuals the linear program reads. `purejit.passes.remat` plans what to save (a minimum
cut: cheap elementwise chains are recomputed, outputs of expensive ops saved) and rewrites
the pair; the forward is then evaluated into the current trace and the linear program,
which starts by recomputing the dropped residuals behind an `optimization_barrier`, runs
in the backward pass when it is transposed. So `jit(value_and_grad(f))` stays one program,
which the pass pipeline sees whole (DCE drops what no backward reads).

`scan` bodies get the same treatment (`rematerialize_scan`): their residuals are stacked
along the loop, and the linear scan recomputes the dropped ones in each backward iteration.
Values a user's `checkpoint` saves (its inputs and what its policy keeps) are pinned: the
user's policy wins. Outside `jit` (eager) nothing changes: there is no fusion to make the
recomputation free, and each recomputed op would be a kernel launch of its own.

Options, innermost first: `jit(..., compiler_options={"remat": False})` (save everything,
as JAX) or `{"remat_budget": 0.3}` (at most 30% of the save-everything bytes, recomputing
expensive ops too where needed); `purejit.config.update("remat", False)` /
`update("remat_budget", 0.3)` set the defaults. Each differentiation leaves a
`purejit.passes.remat.Record` for `explain` (what is saved, with shapes, bytes and the
user's lines, and what is recomputed).
"""

from __future__ import annotations

import copy

from purejit import errors
from purejit.config import config
from purejit.ir import Function, TensorType
from purejit.passes import remat as rp
from purejit.tracing import (
    JitTrace,
    JitTracer,
    ShapedArray,
    Tracer,
    aval_of,
    bind,
    bind1,
    context,
    current_trace,
    new_trace,
)
from purejit.transforms.autodiff._core import Zero
from purejit.transforms.autodiff.interpreter import (
    LinearFunction,
    linearize_function,
    transpose_function,
)


def current_settings() -> rp.Settings:
    """The remat settings in force: the lowering's (a jit's compiler options, in this
    thread's trace context), else purejit.config."""
    s = context.active_remat_settings()
    if s is None:
        budget = rp.check_budget(config.read("remat_budget"), "purejit.config")
        s = rp.Settings(bool(config.read("remat")), budget)
    # a shard_map body over a mesh of several devices (vmapped axes bind no devices)
    if any(getattr(f, "devices_bound", False) and _size(f) > 1 for f in context.axis_env()):
        return rp.over_devices(s)
    return s


def _size(frame) -> int:
    n = 1
    for d in frame.mesh_shape:
        n *= int(d)
    return n


# ---- pinned values: what a user's checkpoint saves -------------------------------------------

# the collectors live in this thread's trace context, so a checkpoint traced in another
# thread never pins values of this one's program


def collect_pins():
    """Collect the tracers `pin` is given in this block."""
    return context.collecting_pins()


def pin(values) -> None:
    """Mark residuals the user chose to save (a `checkpoint`'s inputs and saved values)."""
    context.pin([v for v in values if isinstance(v, Tracer)])


def _pinned_values(pins, fn: Function) -> set:
    known = set(fn.params)
    known.update(r for op in fn.ops for r in op.results)
    return {t.value for t in pins if isinstance(t, JitTracer) and t.value in known}


# ---- the top level --------------------------------------------------------------------------


# What the barrier in front of a recomputation takes besides the saved values it reads:
# nothing ("inputs"), the cotangent flowing there ("cotangent": the recomputation then waits
# for the backward pass), or no barrier at all ("none"). Read at each transposition. On an
# H200, the bench.train transformer with fused attention (`python -m
# bench.tools.remat_weight_sweep --modes barrier-inputs,barrier-none`): remat off 19.23 ms;
# "cotangent" 20.06 ms (1.043x) at 2,119 MiB of temporaries, "inputs" 19.58 ms (1.018x) at
# 2,135 MiB, "none" 19.28 ms at 3,940 MiB (XLA merges the recomputation into the forward pass).
# A cotangent routed through a barrier must be written to memory before it, where its
# producer would otherwise fuse into the kernels reading it.
BARRIER = "inputs"


class RematLinear(LinearFunction):
    """A `LinearFunction` whose transposition recomputes dropped residuals on demand.

    `fn` (used by `apply`) recomputes them first thing; `transpose` instead runs the linear
    program as it was recorded and makes each group of recomputed residuals when the
    backward pass first reads one, behind an `optimization_barrier` over the saved values
    it reads (`BARRIER`): the recomputed ops then read the barrier's results, never the
    forward pass's values, so no compiler (ours or XLA's) can merge them with the forward
    pass's own ops. (Making
    each residual by its own chain instead, so that a shared exp fuses into every reader,
    made the 12-layer transformer's step 1.31x JAX's on an H200, from 1.13x.) It also
    marks which saved residuals the backward pass reads (the others are left for DCE).
    """

    record: rp.Record | None = None
    num_saved: int = 0
    lazy: tuple | None = None  # (linear program as recorded, residuals, plan)
    _seen: bool = False

    def transpose(self, cts):
        self._mark_read(cts)
        if self.lazy is None:
            return super().transpose(cts)
        lin, residuals, plan = self.lazy
        nt = sum(self.in_nonzero)
        saved = dict(zip(plan.saved, self.residuals[: self.num_saved]))
        external = self.residuals[self.num_saved :]
        args = [None] * nt + [saved.get(r) for r in residuals] + list(external)
        groups = rp.groups(plan)
        owner = {r: g for g in range(len(groups)) for op in groups[g].ops for r in op.results}
        made: dict = {}

        def maker(r):
            def make(ct):
                k = owner[r]
                if k not in made:
                    g = groups[k]
                    ins = [saved[u] for u in g.inputs]
                    if ins and BARRIER != "none":
                        tail = [] if ct is None or BARRIER == "inputs" else [ct]
                        outs = bind("optimization_barrier", *ins, *tail)
                        ins, ct = outs[: len(ins)], (outs[-1] if tail else ct)
                    made[k] = _bind_ops(g.ops, dict(zip(g.inputs, ins)))
                return made[k][r], ct

            return make

        res_params = lin.params[nt : nt + len(residuals)]
        lazy = {p: maker(r) for p, r in zip(res_params, residuals) if r not in saved}
        outs = [c for c, nz in zip(cts, self.out_nonzero) if nz]
        linear = [True] * nt + [False] * (len(lin.params) - nt)
        got = iter(transpose_function(lin, linear, args, outs, lazy=lazy))
        return [next(got) if nz else Zero(a) for a, nz in zip(self.in_avals, self.in_nonzero)]

    def _mark_read(self, cts):
        rec = self.record
        if rec is None:
            return
        nz = [c for c, z in zip(cts, self.out_nonzero) if z]
        live_results = [r for r, c in zip(self.fn.results, nz) if not _is_zero(c)]
        read = _read_params(self.fn, live_results)
        nt = sum(self.in_nonzero)
        params = self.fn.params[nt : nt + self.num_saved]
        if not self._seen:
            for r in rec.saved:
                r.read = False
            self._seen = True
        for r, p in zip(rec.saved, params):
            r.read = r.read or p in read


def _is_zero(c) -> bool:
    return isinstance(c, Zero)


def _read_params(fn: Function, live_results) -> set:
    live = set(live_results)
    for op in reversed(fn.ops):
        if any(r in live for r in op.results):
            live.update(op.operands)
    return live


def _residual(describe, v, free: set, stacked=None) -> rp.Residual:
    what, loc = describe(v)
    t = v.type
    if stacked is not None:
        t = TensorType((stacked, *t.shape), t.dtype)
    return rp.Residual(what, t, loc, free=v in free)


def linearize(fn: Function, primals, nonzero, *, where: str = "grad", param_names=None):
    """`linearize_function(fn, primals, nonzero)`, saving what the remat plan says.

    `where` and `param_names` (the user's names of the leading parameters) are for explain.

    Returns:
        (primal results, `LinearFunction`), as `linearize_function`.
    """
    outer = current_trace()
    if not isinstance(outer, JitTrace):
        return linearize_function(fn, primals, nonzero)
    s = current_settings()
    loc = errors.user_location()
    fwd = JitTrace(fn.name + "_fwd", capture_concrete=True)
    with new_trace(fwd), collect_pins() as pins:
        args = [fwd.new_arg(aval_of(p)) for p in primals]
        outs, lin = linearize_function(fn, args, nonzero)
        out_values = [fwd.lift(o) for o in outs]
    mine = [isinstance(r, JitTracer) and r.trace is fwd for r in lin.residuals]
    res_values = [r.value for r, m in zip(lin.residuals, mine) if m]
    external = [r for r, m in zip(lin.residuals, mine) if not m]
    n_out = len(out_values)
    F = fwd.builder.finish([*out_values, *res_values])
    nt = sum(lin.in_nonzero)
    lp = lin.fn.params
    rparams = lp[nt:]
    L = Function(
        lin.fn.name,
        [*lp[:nt], *[p for p, m in zip(rparams, mine) if m]]
        + [p for p, m in zip(rparams, mine) if not m],
        lin.fn.ops,
        lin.fn.results,
    )
    free = set(F.params) | set(out_values)
    uses = rp.backward_uses(L, nt, F.results[n_out:]) if s.enabled else None
    plan = rp.plan_with(s, F, n_out, free=free, pinned=_pinned_values(pins, F), uses=uses)
    F2, L2 = F, L
    if plan.recomputed:
        F2, L2 = rp.rewrite(F, n_out, L, nt, plan)
    caps = [x for x, _ in fwd.captures]
    got = _evaluate(F2, [*primals, *caps])
    new_outs = [_same_weak(v, o) for v, o in zip(got[:n_out], outs)]
    saved_vals = got[n_out:]
    names = [f"input {n}" for n in param_names or ()]
    names += ["a value it closes over"] * (len(F.params) - len(names))
    describe = rp.describer(F, names)
    rec = rp.Record(
        where,
        loc,
        s.mode,
        [_residual(describe, v, free) for v in plan.saved]
        + [rp.Residual("a value of an enclosing trace", aval_of(x).type, None) for x in external],
        [_residual(describe, v, free) for v in plan.recomputed],
        len(plan.ops),
        plan.all_bytes,
    )
    context.remat_record(rec)
    out = RematLinear(
        L2, [*saved_vals, *external], lin.in_avals, lin.in_nonzero, lin.out_avals, lin.out_nonzero
    )
    out.record = rec
    out.num_saved = len(saved_vals)
    if plan.recomputed:
        out.lazy = (L, F.results[n_out:], plan)
    return new_outs, out


def _evaluate(fn: Function, args) -> list:
    """`interpreter.evaluate`, each op bound with the user's line of the op it copies."""
    env = _bind_ops(fn.ops, dict(zip(fn.params, args)))
    return [env[v] for v in fn.results]


def _bind_ops(ops, env: dict) -> dict:
    """Bind `ops` into the current trace(s) on `env` (IR value -> value), each with the
    user's line of the op; returns `env` with their results."""
    frame = errors.user_frame()
    prev = errors.set_location(None, None)
    try:
        for op in ops:
            errors.set_location(op.loc, frame)
            outs = bind(op.name, *[env[v] for v in op.operands], regions=op.regions, **op.attrs)
            env.update(zip(op.results, outs))
        return env
    finally:
        errors.restore_location(prev)


def _same_weak(v, like):
    """`v` with the weak-type flag of `like` (re-evaluating ops loses explicit flags)."""
    a, b = aval_of(v), aval_of(like)
    if a.weak_type == b.weak_type:
        return v
    return bind1("convert", v, dtype=a.dtype, weak=b.weak_type)


# ---- scan bodies ------------------------------------------------------------------------------


def rematerialize_scan(make_split, num_consts: int, num_carry: int, length: int):
    """A scan body's `RegionSplit` (made by `make_split()`), following the remat plan.

    The split's primal region returns the outputs, then the residuals (loop constants are
    passed once, everything else is stacked along the loop); the linear region takes the
    tangents, then the residuals. Returns a split with the same layout whose residuals are
    the plan's saved values and whose linear region recomputes the others.
    """

    def free_of(F, n_out):
        # loop constants are passed once and slices of xs read from xs: neither is copied
        return set(F.params[:num_consts]) | set(F.params[num_consts + num_carry :])

    def names_of(F):
        nx = len(F.params) - num_consts - num_carry
        return (
            [f"loop constant {k}" for k in range(num_consts)]
            + [f"carry {k}" for k in range(num_carry)]
            + [f"xs {k}" for k in range(nx)]
        )

    return _planned_split(
        make_split, free_of, f"scan body (length {length})", names_of, stacked=length
    )


def _planned_split(make_split, free_of, title: str, names_of=None, stacked=None):
    """`make_split()`'s RegionSplit with the remat plan applied inside its region, the plan
    recorded for explain under `title`.

    Args:
        free_of: `(primal, num_out) -> set` of the values that cost nothing to save.
        names_of: `primal -> names` of its parameters for explain (default: positions).
        stacked: the loop length each saved value is stacked to (scan bodies), or None.
    """
    s = current_settings()
    with collect_pins() as pins:
        split = make_split()
    F, n_out = split.primal, split.num_out
    free = free_of(F, n_out)
    uses = None
    if s.enabled:
        uses = rp.backward_uses(split.linear, split.num_tangents, F.results[n_out:])
    plan = rp.plan_with(s, F, n_out, free=free, pinned=_pinned_values(pins, F), uses=uses)
    describe = rp.describer(F, names_of(F)) if names_of else rp.describer(F)

    def residual(v):
        return _residual(describe, v, free, None if v in free else stacked)

    rec = rp.Record(
        title,
        errors.user_location(),
        s.mode,
        [residual(v) for v in plan.saved],
        [residual(v) for v in plan.recomputed],
        len(plan.ops),
        sum(v.type.nbytes * (stacked or 1) for v in F.results[n_out:] if v not in free),
        inner=True,
    )
    context.remat_record(rec)
    if not plan.recomputed:
        return split
    F2, L2 = rp.rewrite(F, n_out, split.linear, split.num_tangents, plan)
    out = copy.copy(split)
    out.primal, out.linear = F2, L2
    index = {p: k for k, p in enumerate(F.params)}
    out.res_is_param = [index.get(v) for v in plan.saved]
    out.res_avals = [_aval(v) for v in plan.saved]
    out.res_params = L2.params[split.num_tangents :]
    return out


def _aval(v) -> ShapedArray:
    return ShapedArray(v.type.shape, v.type.dtype)


# ---- called functions -------------------------------------------------------------------------


def rematerialize_call(make_split, name: str):
    """A called function's `RegionSplit` (made by `make_split()`), following the remat plan.

    A `call` is an expensive op to the enclosing plan: every residual its forward call
    returns is saved there. So the plan is made here, on the body, as the same layer written
    inline would be planned: the call's operands and results cost nothing to save (they are
    values of the enclosing program, which the enclosing plan saves or recomputes), every
    other residual is saved or recomputed in the linear call by the usual cut. Returns a
    split with the same layout whose residuals are the plan's saved values (`res_is_param`
    marks those that are the body's parameters) and whose linear region recomputes the
    others.
    """

    def free_of(F, n_out):
        return set(F.params) | set(F.results[:n_out])

    return _planned_split(make_split, free_of, f"call {name}")


__all__ = [
    "collect_pins",
    "current_settings",
    "linearize",
    "pin",
    "rematerialize_call",
    "rematerialize_scan",
]
