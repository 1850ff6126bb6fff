"""Layout assignment: dimension orders that let `dot_general` run without transposes.

XLA runs a `dot_general` as a batch of matrix products and wants each operand as
`[batch..., rows, cols]`: batch dimensions leading (in the order the dot lists them), the
contracting dimensions grouped at the minor end of the left operand and at either end of
the right one. When an operand is not in that order XLA inserts a transpose kernel that
copies it. This pass removes those copies where the program can produce the operand in the
right order to begin with: it pushes the needed permutation up into the producers, where it
costs nothing:

    transpose(transpose(x, p), q)      -> transpose(x, p∘q), or x when that is the identity
    transpose(elementwise(a, b), p)    -> elementwise(transpose(a, p), transpose(b, p))
    transpose(broadcast_in_dim(x), p)  -> broadcast_in_dim(x') with permuted dimensions
    transpose(constant / iota, p)      -> a constant / iota made in the new order
    transpose(reshape(x), p)           -> reshape(transpose(x, p')) when p moves whole groups
    transpose(dot_general(a, b), p)    -> dot_general in a new order: batch dimensions
                                          reordered, operands swapped, operand transposes
                                          pushed further up

Each rewrite is taken only when it lowers the bytes moved by transposes (explicit ones and
the ones XLA would insert for dot operands): a permutation that reaches a parameter or an
op it cannot pass stays as an explicit transpose there and counts at that value's size, so
the pass trades a large activation transpose for a small weight transpose but never the
reverse. It also canonicalises every `dot_general`'s dimension numbers (contracting pairs in
left-operand order; after a rewrite, batch dimensions `0..n-1`).

A dot never gets an operand whose constant data the rewrite would reorder (a constant, or
ops XLA folds over constants): XLA keeps a constant's row-major layout and picks the dot's
kernel, hence the order of its sums, from the operands' physical layouts, so such a rewrite
changes the result's bits (measured on CPU: `dot(ct, X)^T` against `dot(X^T, ct)` with `X` a
constant differs in 102 of 128 elements; with `X` an argument or any computed value, XLA
lays the data out itself and the bits are the same). Programs therefore give JAX's bits.

Guarantees: results keep their types and values (checked by the interpreter in the tests);
values with several users are never recomputed (only transposes, broadcasts, reshapes,
constants and iotas are duplicated, which XLA fuses into their users anyway).
Never touches: parameters and results of the function, ops with side effects, regions'
signatures (region bodies are rewritten on their own).

The dimension-order helpers it plans with (permutations, a reshape's dimension groups, the
operand forms of a dot) are in `_dim_orders.py`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from purejit.ir import Function, Op, TensorType, Value, get_op
from purejit.passes._dim_orders import (
    canonical_dot,
    disorder,
    dot_options,
    inverse,
    is_identity,
    permuted,
    reshape_groups,
    transpose_bytes,
)
from purejit.passes.base import PassResult, has_effect

_MAX_DEPTH = 24  # producers a permutation may travel through
_BUDGET = 256  # plans considered per decision: keeps the pass linear in program size


@functools.lru_cache(maxsize=1024)  # one entry per registered op name
def _traits(name: str) -> frozenset:
    return get_op(name).traits


def _has(op: Op, trait: str) -> bool:
    """`op.has_trait(trait)`, with the registry lookup cached (the pass asks often)."""
    return trait in _traits(op.name)


# how a transpose passes through each producer (ops with the `constant` trait and
# elementwise ops are handled by trait)
_PUSH_RULES = {
    "transpose": "_plan_transpose",
    "iota": "_plan_iota",
    "broadcast_in_dim": "_plan_broadcast",
    "reshape": "_plan_reshape",
    "dot_general": "_plan_dot",
}


@dataclass
class _Plan:
    """How to produce `transpose(value, perm)`; `cost` is the bytes moved by the transposes
    the plan keeps, `saved` the bytes of transposes (explicit or implied) it removes."""

    kind: str
    value: Value
    perm: tuple
    cost: int = 0
    saved: int = 0
    children: tuple = ()
    data: object = None


class _Rewriter:
    """Rewrites one function body (top level; regions get their own rewriter)."""

    def __init__(self, fn: Function, lhs_forms=("FK",), explicit_copies: bool = False):
        self.fn = fn
        self.lhs_forms = lhs_forms
        self.explicit_copies = explicit_copies
        self.producer: dict[Value, Op] = {}
        self.uses: dict[Value, int] = {}
        for op in fn.ops:
            for v in op.operands:
                self.uses[v] = self.uses.get(v, 0) + 1
        for v in fn.results:
            self.uses[v] = self.uses.get(v, 0) + 1
        self.out: list[Op] = []
        self.subst: dict[Value, Value] = {}
        self.stats = {
            "dots_relaid": 0,
            "dots_canonicalised": 0,
            "transposes_folded": 0,
            "bytes_saved": 0,
            "copies_made_explicit": 0,
        }
        self.memo: dict = {}  # plans for the current decision; cleared after each rewrite
        self.budget = _BUDGET

    # ---- bookkeeping ----------------------------------------------------------------------
    def _emit(self, op: Op):
        self.out.append(op)
        for r in op.results:
            self.producer[r] = op

    def _new(self, name, operands, attrs, type_: TensorType, loc=None) -> Value:
        v = Value(type_)
        for x in operands:
            self.uses[x] = self.uses.get(x, 0) + 1
        self._emit(Op(name, operands, attrs, [v], (), loc))
        return v

    def _drop_use(self, v: Value):
        """One use of `v` went away; when none is left, its producer's uses go too."""
        self.uses[v] -= 1
        if self.uses[v] == 0:
            op = self.producer.get(v)
            if (
                op is not None
                and _has(op, "pure")
                and all(not self.uses.get(r) for r in op.results)
            ):
                for x in op.operands:
                    self._drop_use(x)

    def _single_use(self, v: Value) -> bool:
        return self.uses.get(v, 0) == 1

    def _constant_data(self, v: Value, depth: int = 0) -> bool:
        """Whether `v` is data XLA folds to a literal: a constant whose elements are not all
        equal, or a pure op over such values alone."""
        op = self.producer.get(v)
        if op is None or depth > _MAX_DEPTH or op.regions or not _has(op, "pure"):
            return False
        if _has(op, "constant"):
            value = np.asarray(op.attrs.get("value"))
            return value.size > 1 and not bool(np.all(value == value.flat[0]))
        ranked = [x for x in op.operands if x.type.rank]
        return bool(ranked) and all(self._constant_data(x, depth + 1) for x in ranked)

    def _reorders_constant(self, plan: _Plan | None) -> bool:
        """Whether `plan` hands on constant data in another order (see the module docstring:
        a dot reading it would sum in another order than the program as written)."""
        if plan is None or plan.kind in ("same", "iota"):
            return False
        if plan.kind in ("constant", "residual"):
            return self._constant_data(plan.value)
        return any(self._reorders_constant(c) for c in plan.children if isinstance(c, _Plan))

    # ---- planning -------------------------------------------------------------------------
    def plan(self, v: Value, perm, depth: int = 0) -> _Plan:
        """The cheapest way to obtain `transpose(v, perm)`."""
        perm = tuple(perm)
        if is_identity(perm):
            return _Plan("same", v, perm)
        key = (v, perm)
        if key not in self.memo:
            self.budget -= 1
            if self.budget < 0:
                return _Plan("residual", v, perm, cost=transpose_bytes(v, perm))
            self.memo[key] = self._plan(v, perm, depth)
        return self.memo[key]

    def _plan(self, v: Value, perm, depth: int) -> _Plan:
        residual = _Plan("residual", v, perm, cost=transpose_bytes(v, perm))
        op = self.producer.get(v)
        if op is None or depth > _MAX_DEPTH or not _has(op, "pure") or op.regions:
            return residual
        best = residual
        for candidate in self._candidates(op, v, perm, depth):
            if candidate is not None and candidate.cost - candidate.saved < best.cost - best.saved:
                best = candidate
        return best

    def _candidates(self, op: Op, v: Value, perm, depth):
        if _has(op, "constant"):
            # transpose(constant) -> the constant in the new order
            yield _Plan("constant", v, perm)
        elif op.name in _PUSH_RULES:
            yield getattr(self, _PUSH_RULES[op.name])(op, v, perm, depth)
        elif _has(op, "elementwise") and len(op.results) == 1:
            yield self._plan_elementwise(op, v, perm, depth)

    def _plan_transpose(self, op, v, perm, depth):
        # transpose(transpose(x, p), q) -> transpose(x, p∘q); the inner one dies if unshared
        inner = op.attrs["permutation"]
        child = self.plan(op.operands[0], [inner[p] for p in perm], depth + 1)
        saved = transpose_bytes(op.operands[0], inner) if self._single_use(v) else 0
        return _Plan("through", v, perm, child.cost, child.saved + saved, (child,))

    def _plan_iota(self, op, v, perm, depth):
        # transpose(iota(d)) -> iota(perm⁻¹[d])
        return _Plan("iota", v, perm)

    def _plan_elementwise(self, op, v, perm, depth):
        # transpose(f(a, b), p) -> f(transpose(a, p), transpose(b, p)); scalars stay
        if not self._single_use(v):
            return None  # pushing further would compute the producer twice
        children = tuple(
            self.plan(x, perm, depth + 1) if x.type.rank else None for x in op.operands
        )
        cost = sum(c.cost for c in children if c)
        saved = sum(c.saved for c in children if c)
        return _Plan("elementwise", v, perm, cost, saved, children)

    def _plan_broadcast(self, op, v, perm, depth):
        # transpose(broadcast_in_dim(x, dims), p) -> broadcast_in_dim(transpose(x, σ),
        # sorted(p⁻¹[dims])), σ sorting x's dims by where they land
        inv = inverse(perm)
        dims = [inv[d] for d in op.attrs["broadcast_dimensions"]]
        order = sorted(range(len(dims)), key=lambda j: dims[j])
        child = self.plan(op.operands[0], order, depth + 1)
        return _Plan("broadcast", v, perm, child.cost, child.saved, (child,), sorted(dims))

    def _plan_reshape(self, op, v, perm, depth):
        # transpose(reshape(x), p) -> reshape(transpose(x, p')) when p moves whole groups of
        # dims that the reshape splits or merges
        groups = reshape_groups(op.operands[0].type.shape, v.type.shape)
        if groups is None:
            return None
        out_of = {}
        for g, (_, outs) in enumerate(groups):
            for d in outs:
                out_of[d] = g
        # perm must list whole output groups, each in its own order
        order, k = [], 0
        while k < len(perm):
            g = out_of[perm[k]]
            outs = groups[g][1]
            if tuple(perm[k : k + len(outs)]) != tuple(outs):
                return None
            order.append(g)
            k += len(outs)
        in_perm = [d for g in order for d in groups[g][0]]
        in_perm += [d for ins, outs in groups if not outs for d in ins]  # size-1 dims
        child = self.plan(op.operands[0], in_perm, depth + 1)
        return _Plan("reshape", v, perm, child.cost, child.saved, (child,))

    def implied_cost(self, op: Op) -> int:
        """Bytes XLA moves to put this dot's operands in order (0: already fine)."""
        best = None
        n = op.results[0].type.rank
        for _, a, ap, b, bp, _ in dot_options(op, tuple(range(n)), self.lhs_forms):
            c = transpose_bytes(a, ap) + transpose_bytes(b, bp)
            best = c if best is None else min(best, c)
        return best or 0

    def _plan_dot(self, op: Op, v, perm, depth) -> _Plan | None:
        # transpose(dot_general(a, b), p) -> dot_general(a', b') with batch dims reordered,
        # operands swapped, and a', b' transposes of a, b planned in turn
        if not self._single_use(v):
            return None
        best = None
        implied = self.implied_cost(op)  # the old dot's operand copies go away
        for swap, a, ap, b, bp, attrs in dot_options(op, perm, self.lhs_forms):
            ca = self.plan(a, ap, depth + 1)
            cb = self.plan(b, bp, depth + 1)
            if self._reorders_constant(ca) or self._reorders_constant(cb):
                continue
            cost, saved = ca.cost + cb.cost, ca.saved + cb.saved + implied
            p = _Plan("dot", op.results[0], perm, cost, saved, (ca, cb), (op, attrs))
            if best is None or p.cost - p.saved < best.cost - best.saved:
                best = p
        return best

    # ---- building -------------------------------------------------------------------------
    def build(self, plan: _Plan, memo: dict) -> Value:
        key = (plan.value, plan.perm)
        if key in memo:
            return memo[key]
        v = self._build(plan, memo)
        memo[key] = v
        return v

    def _build(self, plan: _Plan, memo) -> Value:
        v, perm = plan.value, plan.perm
        op = self.producer.get(v)
        out_type = permuted(v.type, perm)
        loc = op.loc if op is not None else None
        if plan.kind == "same":
            return v
        if plan.kind == "residual":
            return self._new("transpose", [v], {"permutation": perm}, out_type, loc)
        if plan.kind == "through":
            self.stats["transposes_folded"] += 1
            return self.build(plan.children[0], memo)
        if plan.kind == "constant":
            value = np.ascontiguousarray(np.transpose(op.attrs["value"], perm))
            return self._new(op.name, [], {**op.attrs, "value": value}, out_type, loc)
        if plan.kind == "iota":
            attrs = {**op.attrs, "shape": out_type.shape}
            attrs["dimension"] = inverse(perm)[op.attrs["dimension"]]
            return self._new("iota", [], attrs, out_type, loc)
        if plan.kind == "broadcast":
            x = self.build(plan.children[0], memo)
            attrs = {**op.attrs, "shape": out_type.shape, "broadcast_dimensions": tuple(plan.data)}
            return self._new("broadcast_in_dim", [x], attrs, out_type, loc)
        if plan.kind == "reshape":
            x = self.build(plan.children[0], memo)
            return self._new("reshape", [x], {**op.attrs, "shape": out_type.shape}, out_type, loc)
        if plan.kind == "elementwise":
            xs = [
                self.build(c, memo) if c is not None else x
                for c, x in zip(plan.children, op.operands)
            ]
            return self._new(op.name, xs, dict(op.attrs), out_type, loc)
        if plan.kind == "dot":
            dot, attrs = plan.data
            a = self.build(plan.children[0], memo)
            b = self.build(plan.children[1], memo)
            self.stats["dots_relaid"] += 1
            return self._new("dot_general", [a, b], attrs, out_type, dot.loc)
        raise AssertionError(plan.kind)

    # ---- the walk -------------------------------------------------------------------------
    def run(self) -> Function:
        for op in self.fn.ops:
            operands = [self.subst.get(v, v) for v in op.operands]
            regions = [
                _rewrite(r, self.stats, self.lhs_forms, self.explicit_copies) for r in op.regions
            ]
            op = Op(op.name, operands, op.attrs, op.results, regions, op.loc)
            if op.name == "transpose" and self._fold_transpose(op):
                continue
            if op.name == "dot_general":
                op = self._relayout_dot(op)
                if op.name == "dot_general" and canonical_dot(op) is not op:
                    op = canonical_dot(op)
                    self.stats["dots_canonicalised"] += 1
            self._emit(op)
        results = [self.subst.get(v, v) for v in self.fn.results]
        return Function(self.fn.name, self.fn.params, self.out, results)

    def _fold_transpose(self, op: Op) -> bool:
        (x,) = op.operands
        perm = tuple(op.attrs["permutation"])
        self.memo, self.budget = {}, _BUDGET
        plan = self.plan(x, perm)
        baseline = transpose_bytes(x, perm)  # this transpose goes away
        if plan.kind == "residual" or plan.cost - plan.saved >= max(baseline, 1):
            return False
        new = self.build(plan, {})
        # the transpose's users now read `new`; its own use of `x` is gone
        self.uses[new] = self.uses.get(new, 0) + self.uses.get(op.results[0], 0)
        self._drop_use(x)
        self.subst[op.results[0]] = new
        self.stats["transposes_folded"] += 1
        self.stats["bytes_saved"] += baseline + plan.saved - plan.cost
        return True

    def _relayout_dot(self, op: Op) -> Op:
        implied = self.implied_cost(op)
        if implied == 0:
            return op
        n = op.results[0].type.rank
        best = None
        self.memo, self.budget = {}, _BUDGET
        for swap, a, ap, b, bp, attrs in dot_options(op, tuple(range(n)), self.lhs_forms):
            if swap:
                continue
            ca, cb = self.plan(a, ap), self.plan(b, bp)
            if self._reorders_constant(ca) or self._reorders_constant(cb):
                continue
            cost = ca.cost + cb.cost - ca.saved - cb.saved
            if best is None or cost < best[0]:
                best = (cost, ca, cb, attrs)
        explicit = best is None or best[0] >= implied
        if explicit:
            best = self._explicit_copies(op, implied) if self.explicit_copies else None
            if best is None:
                return op
        _, ca, cb, attrs = best
        lhs, rhs = op.operands
        memo: dict = {}
        a = self.build(ca, memo)
        b = self.build(cb, memo)
        for old, new in ((lhs, a), (rhs, b)):
            if new is not old:
                self.uses[new] = self.uses.get(new, 0) + 1
                self._drop_use(old)
        if explicit:
            self.stats["copies_made_explicit"] += (a is not lhs) + (b is not rhs)
        else:
            self.stats["dots_relaid"] += 1
            self.stats["bytes_saved"] += implied - best[0]
        return Op("dot_general", [a, b], attrs, op.results, (), op.loc)

    def _explicit_copies(self, op: Op, implied: int):
        """Plans for the copies XLA would insert for `op`'s operands, as explicit transposes
        into `[batch, free, contracting]` (either order of the last two for the right
        operand, whichever keeps the operand's own order of those dims), in the form
        `_relayout_dot` builds: `(cost, plan a, plan b, attrs)`, or None. XLA GPU then runs
        the dot on them as they are; left to itself it can copy one operand twice (measured
        on batched attention: 6 copies instead of 4)."""
        best = None
        n = op.results[0].type.rank
        for swap, a, ap, b, bp, attrs in dot_options(op, tuple(range(n)), self.lhs_forms):
            if swap or any(
                not is_identity(p) and self._constant_data(v) for v, p in ((a, ap), (b, bp))
            ):
                continue
            cost = transpose_bytes(a, ap) + transpose_bytes(b, bp)
            key = (cost, disorder(ap, attrs, "lhs"), disorder(bp, attrs, "rhs"))
            if best is None or key < best[0]:
                best = (key, a, ap, b, bp, attrs)
        if best is None or best[0][0] != implied:
            return None
        (cost, *_), a, ap, b, bp, attrs = best
        plans = [
            _Plan("same" if is_identity(p) else "residual", v, tuple(p), transpose_bytes(v, p))
            for v, p in ((a, ap), (b, bp))
        ]
        return (cost, *plans, attrs)


def _rewrite(fn: Function, stats: dict, lhs_forms=("FK",), explicit_copies=False) -> Function:
    r = _Rewriter(fn, lhs_forms, explicit_copies)
    new = r.run()
    for k, v in r.stats.items():
        stats[k] = stats.get(k, 0) + v
    return _remove_dead(new)


def _remove_dead(fn: Function) -> Function:
    live = set(fn.results)
    kept = []
    for op in reversed(fn.ops):
        if any(r in live for r in op.results) or has_effect(op):
            kept.append(op)
            live.update(op.operands)
    kept.reverse()
    return Function(fn.name, fn.params, kept, fn.results)


@dataclass(frozen=True)
class LayoutAssignment:
    """The layout pass (see the module docstring). Its report counts the dots whose operand
    orders changed, the transposes folded away, the transpose bytes saved per call and the
    copies made explicit.

    Attributes:
        transposed_lhs: a left operand may also come as `[batch, contracting, free]`.
        explicit_copies: where a dot's operands must be copied anyway (no producer order
            avoids it), emit the copies as transposes into the dot's canonical operand order
            instead of leaving the choice to XLA (what the GPU back end wants).
    """

    name: str = "layout"
    transposed_lhs: bool = False
    explicit_copies: bool = False  # XLA GPU: see `_Rewriter._explicit_copies`

    def __call__(self, fn: Function) -> PassResult:
        stats: dict = {}
        forms = ("FK", "KF") if self.transposed_lhs else ("FK",)
        new = _rewrite(fn, stats, forms, self.explicit_copies)
        changed = any(v for k, v in stats.items() if k != "bytes_saved")
        return PassResult(new if changed else fn, changed, stats)
