"""Rematerialisation: which residuals the backward pass recomputes instead of saving.

Reverse-mode differentiation splits a function into a forward program `fwd` (its parameters
-> the outputs, then the residuals) and a linear program `lin` (the tangents, then one
parameter per residual -> the output tangents); the residuals are what crosses from the
forward pass to the backward pass and stays in memory in between. Saving every residual, as
JAX does unless the user writes a `checkpoint` policy, keeps many arrays that are cheap to
rebuild: the coefficients of elementwise derivatives (`1 - tanh(x)**2`), broadcast masks,
converted copies. `plan` chooses what to save by a minimum cut (the idea behind
torch.compile's partitioner): every value of `fwd` can be saved at the cost of its bytes, a
value made by a cheap op (elementwise, data movement, constants) can instead be recomputed
from its operands, and the cheapest cut separating the forward's inputs from the residuals
is what the forward hands over. A cut costs the bytes it holds plus, for each value it
leaves to recompute, `TRAFFIC_WEIGHT` times the memory traffic the recomputation adds to
the backward pass (`recompute_traffic`: nothing when it fuses into the kernel that reads it,
its inputs read and itself written when it must exist in memory, as for a backward dot's
operand; `backward_uses` says how the backward pass reads each residual). Outputs of
expensive ops (dot_general, convolutions, reductions, gathers, control flow, collectives)
are saved, never recomputed, unless a `budget` (a fraction of the save-everything bytes)
asks for less memory: then the cut is of bytes alone and the expensive ops become
recomputable one at a time, cheapest flops per byte first, until it fits. `rewrite`
builds the programs that follow the plan: the forward returns the cut and the linear
program starts by recomputing the dropped residuals from it, behind an
`optimization_barrier` per connected recomputation so that no pass (ours or XLA's) merges
the recomputation back into the forward pass (the transposition in
`purejit.transforms.autodiff.remat` instead rebuilds each residual by its own `chains`
entry where the backward pass first reads it).

Guarantees: the rewritten pair computes the same numbers (the recomputation runs the very
ops of `fwd`); values in `pinned` (what a user's `checkpoint` policy saves) are saved as
they are; parameters listed as `free` cost nothing to save (they live anyway: the inputs of
a jitted function, a loop's constants). Never touches: ops with effects, collectives,
control flow (always saved); the order of the linear program's own ops.

The cost model (`recomputable`, `backward_uses`, `recompute_traffic`, `TRAFFIC_WEIGHT`) lives
in `_remat_cost.py`; this module re-exports it for readers, and reads it through that module
(`cost_model.TRAFFIC_WEIGHT`), so a diagnostic that sets a constant sets it in one place:
`passes._remat_cost`.

The module keeps no state: the differentiation that calls it passes its `Settings` in
(`plan_with`) and files the `Record` it builds where its caller collects them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Collection, Sequence

from purejit.ir import Function, Op, TensorType, Value
from purejit.passes import _remat_cost as cost_model
from purejit.passes._remat_cost import (  # noqa: F401 - re-exported: the cost model
    _FREE_OPS,
    TRAFFIC_WEIGHT,
    _fusible_reader,
    _made_from_wider,
    _nbytes,
    _sources,
    backward_uses,
    recomputable,
    recompute_traffic,
)
from purejit.passes.base import has_effect
from purejit.passes.cost import flops

# ---- what differentiation reports, for explain ----------------------------------------------


@dataclass
class Residual:
    """One array the backward pass reads from the forward pass."""

    what: str  # "output of dot_general", "input 2"
    type: TensorType  # stacked along the loop for residuals of a scan body
    loc: str | None  # the user's line that computed it
    free: bool = False  # an input or a loop constant: saving it copies nothing
    read: bool = True  # False once the backward pass was built without reading it

    @property
    def nbytes(self) -> int:
        return self.type.nbytes


@dataclass
class Record:
    """What one differentiation saved and recomputed.

    `saved` crosses from the forward to the backward pass; `recomputed` are the residuals
    saving everything would keep that the backward pass rebuilds (by `recompute_ops` ops);
    `all_bytes` is what saving everything would keep (free inputs not counted).
    """

    where: str
    loc: str | None
    mode: str  # "off", "auto", "budget=0.3"
    saved: list[Residual]
    recomputed: list[Residual] = field(default_factory=list)
    recompute_ops: int = 0
    all_bytes: int = 0
    # a loop body's: its residuals reach the backward pass as outputs of the loop, which
    # the enclosing differentiation's record lists (so totals leave this one out)
    inner: bool = False

    @property
    def saved_bytes(self) -> int:
        return sum(r.nbytes for r in self.saved if not r.free and r.read)


@dataclass(frozen=True)
class Settings:
    """`enabled`: plan at all (False saves every residual, as JAX); `budget`: None for the
    automatic plan, else the fraction of the save-everything bytes to keep at most;
    `fused_attention`: attention written by hand is fused before it is differentiated
    (where the target has the kernel); `keeps_barriers`: whether the compiler keeps the
    `optimization_barrier` in front of a recomputation (XLA's CPU compiler drops it);
    `uniform_calls`: a `call` is linearized with a tangent for every differentiable
    operand of a type one of its results has, even a zero one, so the layers of a chain are
    linearized alike and roll into one loop (`roll_layers`; the first layer's input is
    otherwise not differentiated); `forced`: the user asked for the plan in this program
    (`compiler_options` `remat=True` or a `remat_budget`), so it runs where the default
    would not (programs over several devices); `why_off`: why the default saves
    everything here, for explain."""

    enabled: bool = True
    budget: float | None = None
    fused_attention: bool = False
    keeps_barriers: bool = True
    uniform_calls: bool = False
    forced: bool = False
    why_off: str = ""
    partitioned: bool = False

    @property
    def mode(self) -> str:
        if not self.enabled:
            return f"off ({self.why_off})" if self.why_off else "off"
        return "auto" if self.budget is None else f"budget={self.budget:g}"


# Measured on 2 and 4 GPUs (`bench.tp_train`, sessions 12 and 15): in data-, tensor- and
# fully-sharded training steps the automatic plan cost 4-17% of the step against saving
# everything, at temporaries no larger than `jax.jit`'s (the per-device activations are a
# fraction of one device's), while on one device it is as fast or faster. So by default a
# program over several devices saves everything, as JAX does; `remat=True` or a
# `remat_budget` in its compiler options plans it all the same.
OVER_DEVICES = "the program runs over several devices; compiler_options remat=True plans it"


def over_devices(s: Settings) -> Settings:
    """`s` for a program that runs over several devices: the automatic plan off unless the
    user forced it."""
    if s.enabled and not s.forced:
        return replace(s, enabled=False, why_off=OVER_DEVICES)
    return s


def check_budget(budget, what: str) -> float | None:
    """`budget` as a float in [0, 1] (None stays None); a clear error otherwise."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 <= budget <= 1:
        raise ValueError(
            f"{what}: remat_budget={budget!r} must be None (automatic) or a fraction of the "
            "save-everything residual bytes between 0.0 and 1.0"
        )
    return float(budget)


# ---- the plan -------------------------------------------------------------------------------


def _may_recompute(op: Op) -> bool:
    """Ops a budget may recompute too: anything without effects, loops, device identity or
    results that are saved by design (`saved`: fused attention's output and statistics)."""
    t = op.opdef.traits
    return not has_effect(op) and not t & {"control_flow", "per_device", "saved"}


@dataclass
class Plan:
    """`saved`: the values of `fwd` the forward hands over (in `fwd`'s order);
    `recomputed`: the residuals rebuilt from them; `ops`: the ops that rebuild them."""

    saved: list[Value]
    recomputed: list[Value]
    ops: list[Op]
    all_bytes: int
    saved_bytes: int


class _Graph:
    """A flow network with integer capacities; `min_cut` gives the source side (Dinic)."""

    def __init__(self, n: int):
        self.n = n
        self.adj: list[list[int]] = [[] for _ in range(n)]
        self.to: list[int] = []
        self.cap: list[int] = []

    def edge(self, a: int, b: int, c: int):
        self.adj[a].append(len(self.to))
        self.to.append(b)
        self.cap.append(c)
        self.adj[b].append(len(self.to))
        self.to.append(a)
        self.cap.append(0)

    def _levels(self, s: int, t: int):
        level = [-1] * self.n
        level[s] = 0
        q = deque([s])
        while q:
            a = q.popleft()
            for e in self.adj[a]:
                b = self.to[e]
                if self.cap[e] > 0 and level[b] < 0:
                    level[b] = level[a] + 1
                    q.append(b)
        return level

    def min_cut(self, s: int, t: int) -> list[bool]:
        """Saturate every path from `s` to `t`; returns which nodes `s` still reaches."""
        to, cap, adj = self.to, self.cap, self.adj
        while True:
            level = self._levels(s, t)
            if level[t] < 0:
                return [lv >= 0 for lv in level]
            it = [0] * self.n
            while True:  # blocking flow, iteratively (no recursion limit on deep graphs)
                path, a = [], s
                while a != t:
                    while it[a] < len(adj[a]):
                        e = adj[a][it[a]]
                        if cap[e] > 0 and level[to[e]] == level[a] + 1:
                            break
                        it[a] += 1
                    else:
                        if a == s:
                            break
                        level[a] = -1  # a dead end: never visit again in this phase
                        a = to[path.pop() ^ 1]
                        continue
                    e = adj[a][it[a]]
                    path.append(e)
                    a = to[e]
                if a != t:
                    break
                push = min(cap[e] for e in path)
                for e in path:
                    cap[e] -= push
                    cap[e ^ 1] += push


def _cut(fwd, residuals, free, pinned, banned_fn, order, traffic=None):
    """The values to save: a minimum cut (bytes held plus weighted recompute traffic first,
    then later values first)."""
    producer = {r: op for op in fwd.ops for r in op.results}
    index: dict[Value, int] = {}
    values: list[Value] = []
    stack = list(residuals)
    while stack:  # every value a residual may be rebuilt from
        v = stack.pop()
        if v in index:
            continue
        index[v] = len(values)
        values.append(v)
        op = producer.get(v)
        if op is not None and v not in pinned and not banned_fn(op):
            stack.extend(op.operands)
    n = len(values)
    traffic = traffic or {}
    # the price of recomputing v (its node on the sink side): weighted traffic, whole bytes
    price = {v: int(cost_model.TRAFFIC_WEIGHT * traffic.get(v, 0)) for v in values}
    big = n * (len(order) + 2) + 1  # bytes dominate; the tie-break only orders equal cuts
    inf = big * (1 + sum(v.type.nbytes for v in values) + sum(price.values())) + 1
    g = _Graph(2 * n + 2)
    src, sink = 2 * n, 2 * n + 1
    for v, i in index.items():
        op = producer.get(v)
        cost = 0 if v in free else v.type.nbytes * big + (len(order) - order.get(op, -1))
        g.edge(2 * i, 2 * i + 1, cost)
        if op is None or v in pinned or banned_fn(op):
            g.edge(src, 2 * i, inf)  # made in the forward pass: available only if saved
        else:
            if price[v]:
                g.edge(src, 2 * i, price[v] * big)  # cut when v is recomputed
            for u in dict.fromkeys(op.operands):
                g.edge(2 * index[u] + 1, 2 * i, inf)
    for r in dict.fromkeys(residuals):
        g.edge(2 * index[r] + 1, sink, inf)
    reach = g.min_cut(src, sink)
    return {v for v, i in index.items() if reach[2 * i] and not reach[2 * i + 1]}


def plan(
    fwd: Function,
    num_out: int,
    *,
    free: Collection[Value] = (),
    pinned: Collection[Value] = (),
    budget: float | None = None,
    uses: dict | None = None,
    keeps_barriers: bool = True,
) -> Plan:
    """Decide which values of `fwd` the forward pass saves for the backward pass.

    Args:
        fwd: the forward program: its results are `num_out` outputs, then the residuals.
        num_out: how many results are outputs.
        free: values that cost nothing to save (parameters that live anyway).
        pinned: residuals that must be saved as they are (a user's checkpoint policy).
        budget: None for the automatic plan (recompute only cheap ops), else the most bytes
            to save as a fraction of the save-everything bytes (1.0 saves everything).
        uses: `backward_uses` of the residuals: how the backward pass reads them, which
            decides whether a recomputation fuses into its reader or costs a kernel.
        keeps_barriers: False where the compiler drops the barriers (XLA on CPU), so an
            expensive recomputation merges into the forward pass (`recompute_traffic`).
    Returns:
        The `Plan`.
    """
    free, pinned = set(free), set(pinned)
    residuals = list(dict.fromkeys(fwd.results[num_out:]))
    all_bytes = sum(v.type.nbytes for v in residuals if v not in free)
    order = {op: k for k, op in enumerate(fwd.ops)}
    if budget is not None and budget >= 1.0:
        return Plan(residuals, [], [], all_bytes, all_bytes)

    traffic = cost_model.recompute_traffic(fwd, uses, keeps_barriers, num_out)

    def cut_with(unbanned: set, traffic=None):
        def banned(op):
            return not (cost_model.recomputable(op) or op in unbanned)

        saved = _cut(fwd, residuals, free, pinned, banned, order, traffic)
        return saved, sum(v.type.nbytes for v in saved if v not in free)

    saved, nbytes = cut_with(set(), traffic)
    if budget is not None and nbytes > budget * all_bytes:
        # a budget asks for memory first: bytes alone, then expensive ops recomputed too
        saved, nbytes = cut_with(set())
    if budget is not None and nbytes > budget * all_bytes:
        # expensive ops become recomputable cheapest-first until the cut fits the budget
        cands = [op for op in fwd.ops if not cost_model.recomputable(op) and _may_recompute(op)]
        cands.sort(key=lambda op: (flops(op) or 0) / max(1, op.results[0].type.nbytes))
        lo, hi, best = 1, len(cands), (saved, nbytes)
        while lo <= hi:  # the smallest prefix that fits (bytes fall as more is recomputable)
            mid = (lo + hi) // 2
            got = cut_with(set(cands[:mid]))
            if got[1] <= budget * all_bytes:
                best, hi = got, mid - 1
            else:
                lo = mid + 1
                if got[1] < best[1]:
                    best = got
        saved, nbytes = best
    return _finish(fwd, residuals, saved, all_bytes, nbytes)


def _finish(fwd, residuals, saved: set, all_bytes, nbytes) -> Plan:
    producer = {r: op for op in fwd.ops for r in op.results}
    need: set = set()
    stack = [r for r in residuals if r not in saved]
    while stack:
        v = stack.pop()
        op = producer[v]
        if op in need:
            continue
        need.add(op)
        stack.extend(u for u in op.operands if u not in saved)
    ops = [op for op in fwd.ops if op in need]
    # a zero-cost (free) value can land in the cut without anything reading it
    read = {r for r in residuals if r in saved}
    read.update(u for op in ops for u in op.operands if u in saved)
    position = {p: -1 for p in fwd.params}
    position.update({r: k for k, op in enumerate(fwd.ops) for r in op.results})
    # residuals keep their order (a plan that recomputes nothing changes nothing), then the
    # values the cut saves instead, in program order
    kept = [r for r in residuals if r in read]
    others = sorted(read - set(kept), key=lambda v: (position[v], v.id))
    saved_list = kept + others
    recomputed = [r for r in residuals if r not in saved]
    return Plan(saved_list, recomputed, ops, all_bytes, nbytes)


def plan_with(
    settings: Settings,
    fwd: Function,
    num_out: int,
    *,
    free: Collection[Value] = (),
    pinned: Collection[Value] = (),
    uses: dict | None = None,
) -> Plan:
    """The plan `settings` ask for: `plan` when enabled (with their budget), else
    `save_everything`. The other arguments are `plan`'s."""
    if not settings.enabled:
        return save_everything(fwd, num_out, free)
    return plan(
        fwd,
        num_out,
        free=free,
        pinned=pinned,
        budget=settings.budget,
        uses=uses,
        keeps_barriers=settings.keeps_barriers,
    )


def save_everything(fwd: Function, num_out: int, free: Collection[Value] = ()) -> Plan:
    """The plan that saves every residual (JAX's default)."""
    free = set(free)
    residuals = list(dict.fromkeys(fwd.results[num_out:]))
    nbytes = sum(v.type.nbytes for v in residuals if v not in free)
    return Plan(residuals, [], [], nbytes, nbytes)


# ---- the programs that follow a plan ----------------------------------------------------------


@dataclass
class Group:
    """Recomputations that feed each other: `ops` (in `fwd`'s order) read only `inputs`
    (saved values) and each other's results."""

    inputs: list[Value]
    ops: list[Op]


def groups(p: Plan) -> list[Group]:
    """The plan's recomputation, one `Group` per connected part (one barrier each)."""
    out = []
    for ops in _components(p.ops):
        made = {r for op in ops for r in op.results}
        inputs = list(dict.fromkeys(u for op in ops for u in op.operands if u not in made))
        out.append(Group(inputs, ops))
    return out


def _components(ops: Sequence[Op]) -> list[list[Op]]:
    """`ops` grouped by the values they share (recomputations that feed each other)."""
    parent = list(range(len(ops)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    made = {r: k for k, op in enumerate(ops) for r in op.results}
    for k, op in enumerate(ops):
        for u in op.operands:
            j = made.get(u)
            if j is not None:
                parent[find(k)] = find(j)
    groups: dict[int, list[Op]] = {}
    for k, op in enumerate(ops):
        groups.setdefault(find(k), []).append(op)
    return list(groups.values())


def _prune(fn: Function) -> Function:
    live = set(fn.results)
    kept = []
    for op in reversed(fn.ops):
        if has_effect(op) or any(r in live for r in op.results):
            live.update(op.operands)
            kept.append(op)
    kept.reverse()
    return Function(fn.name, fn.params, kept, fn.results)


def rewrite(
    fwd: Function, num_out: int, lin: Function, num_tangents: int, p: Plan, *, barrier=True
) -> tuple[Function, Function]:
    """The forward and linear programs that follow plan `p`.

    Args:
        fwd: the forward program (outputs, then residuals).
        num_out: its number of outputs.
        lin: the linear program: `num_tangents` tangent parameters, then one parameter per
            residual of `fwd` in order, then any further parameters (kept as they are).
        num_tangents: how many leading parameters of `lin` are tangents.
        p: the plan.
        barrier: put the recomputation behind `optimization_barrier`s.
    Returns:
        `(fwd2, lin2)`: `fwd2` returns the outputs then `p.saved` (ops only the dropped
        residuals needed are gone); `lin2` takes the tangents, one parameter per saved
        value, then `lin`'s further parameters, and recomputes what was dropped first.
    """
    residuals = fwd.results[num_out:]
    nres = len(residuals)
    tparams = lin.params[:num_tangents]
    res_params = lin.params[num_tangents : num_tangents + nres]
    rest = lin.params[num_tangents + nres :]
    saved_params = {v: Value(v.type) for v in p.saved}
    new_ops: list[Op] = []
    env: dict[Value, Value] = {}  # values of fwd -> values of lin2
    for g in groups(p):
        inputs = g.inputs
        local = {u: saved_params[u] for u in inputs}
        if barrier and inputs:
            outs = [Value(u.type) for u in inputs]
            new_ops.append(Op("optimization_barrier", [local[u] for u in inputs], {}, outs))
            local = dict(zip(inputs, outs))
        for op in g.ops:
            results = [Value(r.type) for r in op.results]
            operands = [local[u] for u in op.operands]
            new_ops.append(Op(op.name, operands, op.attrs, results, op.regions, op.loc))
            local.update(zip(op.results, results))
        env.update((r, local[r]) for op in g.ops for r in op.results)
    subst = {}
    for r, param in zip(residuals, res_params):
        subst[param] = saved_params[r] if r in saved_params else env[r]
    for op in lin.ops:
        operands = [subst.get(u, u) for u in op.operands]
        new_ops.append(op.rebuilt(operands, op.regions))
    lin2 = Function(
        lin.name,
        [*tparams, *saved_params.values(), *rest],
        new_ops,
        [subst.get(r, r) for r in lin.results],
    )
    fwd2 = _prune(Function(fwd.name, fwd.params, fwd.ops, [*fwd.results[:num_out], *p.saved]))
    return fwd2, lin2


def describer(fn: Function, param_names: Sequence[str] | None = None):
    """`describe(v) -> (what, loc)` for values `v` of `fn`, for reports: the parameter's
    name ("input k" by default) or "output of <op>" with the op's line."""
    names = list(param_names or [])
    names += [f"input {k}" for k in range(len(names), len(fn.params))]
    known = {p: (n, None) for p, n in zip(fn.params, names)}
    known.update((r, (f"output of {op.name}", op.loc)) for op in fn.ops for r in op.results)
    return lambda v: known.get(v, ("a value from outside", None))


__all__ = [
    "Group",
    "Plan",
    "Record",
    "Residual",
    "Settings",
    "TRAFFIC_WEIGHT",
    "backward_uses",
    "check_budget",
    "describer",
    "groups",
    "plan",
    "plan_with",
    "recomputable",
    "recompute_traffic",
    "rewrite",
    "save_everything",
]
