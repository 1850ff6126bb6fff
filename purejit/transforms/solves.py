"""`lax.custom_root` and `lax.custom_linear_solve` (declared in `purejit/lax/solves.py`).

As in JAX, every function the user passes is traced when the solver is called (so what it
closes over becomes explicit operands, and the backward pass never reads a stale tracer):
for `custom_linear_solve` the `matvec`, its transpose `vecmat` (by transposing `matvec`),
`solve(matvec, .)` and `transpose_solve(vecmat, .)`; for `custom_root` the `f`,
`solve(f, .)` and `tangent_solve(g, .)` with `g` the linearization of `f` at its argument.
The call is one `custom_jvp_call` op whose region runs the user's solve, with a rule that
differentiates implicitly:

- custom_root: `dx* = -tangent_solve(g, df)`, `df` the derivative of `f(x*)` in the
  values `f` closes over (JAX's `_root_jvp`).
- custom_linear_solve: `dx = solve(matvec, db - dmatvec(x))`, the tangent solve being the
  same op again, linear in its right-hand side; its transpose (reverse mode) is the op
  with the transposed functions (`vecmat`, `transpose_solve`) on the cotangent.

vmap batches the region and the rule as for any custom_jvp function.
"""

from __future__ import annotations

from typing import Callable

from purejit import errors
from purejit import numpy as jnp
from purejit.lax import solves as lax_solves
from purejit.tracing import Tracer, aval_of, bind, trace_to_function
from purejit.transforms._ir_eval import trace_closed
from purejit.transforms.autodiff import Context, Zero, evaluate, jvp_function
from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff._core import (
    convert,
    instantiate,
    is_differentiable_dtype,
    is_linear,
    neg,
    register_custom,
    sub,
    tangent_aval,
    zeros,
)
from purejit.tree_util import tree_flatten, tree_unflatten


def _leaf(x):
    return x if isinstance(x, Tracer) else jnp.asarray(x)


def _short(avals) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _flat_fn(fun: Callable, in_tree, api: str, what: str, want_tree, want_avals, has_aux=False):
    """`fun` on flat leaves, returning flat leaves checked against `want_tree`/`want_avals`
    (the results after the first `len(want_avals)` are aux leaves, with `has_aux`)."""
    box = {}

    def flat(*xs):
        out = fun(tree_unflatten(in_tree, list(xs)))
        aux_leaves = []
        if has_aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError(
                    f"{api}: with has_aux=True, {what} must return a pair (solution, aux), "
                    f"got {type(out).__name__}{errors.at(errors.user_location())}"
                )
            out, aux = out
            aux_leaves, box["aux_tree"] = tree_flatten(aux)
            aux_leaves = [_leaf(x) for x in aux_leaves]
        leaves, tree = tree_flatten(out)
        leaves = [_leaf(x) for x in leaves]
        got = [aval_of(x) for x in leaves]
        if tree != want_tree or [a.shape for a in got] != [a.shape for a in want_avals]:
            raise TypeError(
                f"{api}: {what} must return the structure and shapes of its argument "
                f"{want_tree} {_short(want_avals)}, got {tree} {_short(got)}"
                f"{errors.at(errors.user_location())}"
            )
        leaves = [
            x if a.dtype == w.dtype else convert(x, w.dtype)
            for x, a, w in zip(leaves, got, want_avals)
        ]
        return [*leaves, *aux_leaves]

    return flat, box


def _region(solve_fn, num_consts: tuple, offset: int, nb: int, avals, name):
    """The op's region: the user's solve on the operands `[*consts..., *b]` (the solve's
    own constants start at `offset` and number `num_consts[...]`)."""
    start, count = offset, num_consts

    def run(*ops):
        b = list(ops[len(ops) - nb :])
        return evaluate(solve_fn, [*b, *ops[start : start + count]])

    return trace_to_function(run, list(avals), name=name).fn


def _bind(rule, operands):
    return bind("custom_jvp_call", *operands, regions=[rule.region], rule=rule.key,
                weak=rule.weak)  # fmt: skip


def _zero_tangents(values):
    return [zeros(tangent_aval(aval_of(v))) if is_differentiable_dtype(aval_of(v).dtype)
            else zeros(aval_of(v)) for v in values]  # fmt: skip


# ---- custom_linear_solve ----------------------------------------------------------------------


class _LinearSolveRule:
    """The rule of one custom_linear_solve: operands `[*matvec consts, *vecmat consts,
    *solve consts, *transpose_solve consts, *b]`; results `[*x, *aux]`."""

    def __init__(self, fns, counts, nb, b_avals, out_avals, name):
        self.mv, self.vm, self.s, self.ts = fns  # ClosedFunctions (vm, ts None: no transpose)
        self.counts = counts
        self.nb, self.b_avals, self.name = nb, b_avals, name
        self.num_args = sum(counts) + nb
        self.weak = tuple(a.weak_type for a in out_avals)
        self.out_avals = out_avals
        in_avals = [aval_of(c) for f in fns if f is not None for c in f.captures]
        in_avals += list(b_avals)
        self.in_avals = in_avals
        off = sum(counts[:2])
        self.region = _region(self.s.fn, counts[2], off, nb, in_avals, name)
        self.key = register_custom("custom_jvp", name, self)
        self._transposed = None

    def _split(self, xs):
        out, k = [], 0
        for n in self.counts:
            out.append(list(xs[k : k + n]))
            k += n
        return out, list(xs[k:])

    def jvp(self, primals, tangents):
        (mv_c, _, _, _), _ = self._split(primals)
        (mv_t, _, _, _), b_dot = self._split(tangents)
        x_all = _bind(self, primals)
        x = x_all[: self.nb]
        # d(A x) in the values matvec closes over, at the solution
        ts = [Zero(tangent_aval(aval_of(v))) for v in x]
        ts += [t if is_differentiable_dtype(aval_of(c).dtype) else Zero(tangent_aval(aval_of(c)))
               for t, c in zip(mv_t, mv_c)]  # fmt: skip
        if any(not isinstance(t, Zero) for t in ts):
            _, dmv = jvp_function(self.mv.fn, [*x, *mv_c], ts, Context(False))
            rhs = [sub(bd, t) for bd, t in zip(b_dot, dmv)]
        else:
            rhs = list(b_dot)
        consts = list(primals[: sum(self.counts)])
        x_dot = _bind(self, [*consts, *rhs])[: self.nb]
        return [*x_all, *x_dot, *_zero_tangents(x_all[self.nb :])]

    def transposed(self):
        """The rule of the transposed solve: matvec and vecmat, solve and transpose_solve
        swapped (its operands are this one's constants in the swapped order, then b)."""
        if self._transposed is None:
            if self.ts is None:
                raise NotImplementedError(
                    "custom_linear_solve: transpose_solve required for backwards mode "
                    "automatic differentiation of custom_linear_solve (or pass "
                    "symmetric=True)"
                )
            c = self.counts
            t = _LinearSolveRule((self.vm, self.mv, self.ts, self.s), (c[1], c[0], c[3], c[2]),
                                 self.nb, self.b_avals, self.out_avals,
                                 self.name + "_transpose")  # fmt: skip
            t._transposed = self
            self._transposed = t
        return self._transposed

    def transpose(self, cts, operands):
        nc = sum(self.counts)
        if any(is_linear(x) for x in operands[:nc]):
            raise NotImplementedError(
                "custom_linear_solve is linear only in b: it cannot be transposed with "
                "respect to the values matvec or solve close over"
            )
        t = self.transposed()
        (mv_c, vm_c, s_c, ts_c), _ = self._split(operands)
        ct = [instantiate(c, a) for c, a in zip(cts[: self.nb], self.b_avals)]
        ct = [c if aval_of(c).dtype == a.dtype else convert(c, a.dtype)
              for c, a in zip(ct, self.b_avals)]  # fmt: skip
        got = _bind(t, [*vm_c, *mv_c, *ts_c, *s_c, *ct])[: self.nb]
        return [*[None] * nc, *got]


def _vecmat(mv, tree, b_avals):
    """The transpose of the traced matvec (as a function of pytrees)."""
    nb = len(b_avals)

    def vecmat(y):
        ys, ytree = tree_flatten(y)
        if ytree != tree:
            raise TypeError(f"custom_linear_solve: vecmat takes {tree}, got {ytree}")
        ys = [_leaf(v) for v in ys]
        linear = [True] * nb + [False] * len(mv.captures)
        got = interp.transpose_function(mv.fn, linear, [None] * nb + list(mv.captures), ys)
        return tree_unflatten(tree, [instantiate(g, a) for g, a in zip(got, b_avals)])

    return vecmat


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):  # fmt: skip
    api = "custom_linear_solve"
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, tree = tree_flatten(b)
    b_leaves = [_leaf(x) for x in b_leaves]
    b_avals = [aval_of(x) for x in b_leaves]
    for a in b_avals:
        if not is_differentiable_dtype(a.dtype):
            raise TypeError(f"{api}: b must hold float or complex arrays, got {a.str_short()}")
    flat, _ = _flat_fn(matvec, tree, api, "matvec", tree, b_avals)
    mv = trace_closed(flat, b_avals, name="matvec")
    flat, box = _flat_fn(lambda x: solve(matvec, x), tree, api, "solve", tree, b_avals, has_aux)
    s = trace_closed(flat, b_avals, name="solve")
    vm = ts = None
    if transpose_solve is not None:
        if symmetric:
            vm, vecmat = mv, matvec
        else:
            vecmat = _vecmat(mv, tree, b_avals)
            flat, _ = _flat_fn(vecmat, tree, api, "vecmat", tree, b_avals)
            vm = trace_closed(flat, b_avals, name="vecmat")
        flat, tbox = _flat_fn(lambda x: transpose_solve(vecmat, x), tree, api,
                              "transpose_solve", tree, b_avals, has_aux)  # fmt: skip
        ts = trace_closed(flat, b_avals, name="transpose_solve")
        if has_aux and [aval_of(x) for x in ts.out[len(b_avals) :]] != s.out_avals[len(b_avals) :]:
            raise TypeError(f"{api}: solve and transpose_solve must return the same aux")
    fns = (mv, vm, s, ts)
    counts = tuple(0 if f is None else len(f.captures) for f in fns)
    rule = _LinearSolveRule(fns, counts, len(b_avals), b_avals, s.out_avals, "custom_linear_solve")
    consts = [c for f in fns if f is not None for c in f.captures]
    outs = _bind(rule, [*consts, *b_leaves])
    x = tree_unflatten(tree, outs[: len(b_avals)])
    if has_aux:
        return x, tree_unflatten(box["aux_tree"], outs[len(b_avals) :])
    return x


# ---- custom_root ------------------------------------------------------------------------------


class _RootRule:
    """The rule of one custom_root: operands `[*f consts, *solve consts, *tangent_solve
    consts, *initial guess]`; results `[*solution, *aux]`."""

    def __init__(self, fns, ng, g_avals, out_avals, name):
        self.f, self.s, self.ls = fns
        self.counts = tuple(len(f.captures) for f in fns)
        self.ng, self.name = ng, name
        self.num_args = sum(self.counts) + ng
        self.weak = tuple(a.weak_type for a in out_avals)
        in_avals = [aval_of(c) for f in fns for c in f.captures] + list(g_avals)
        self.region = _region(self.s.fn, self.counts[1], self.counts[0], ng, in_avals, name)
        self.key = register_custom("custom_jvp", name, self)

    def jvp(self, primals, tangents):
        nf, ns, nl = self.counts
        f_c, l_c = primals[:nf], primals[nf + ns : nf + ns + nl]
        sol_all = _bind(self, primals)
        sol = sol_all[: self.ng]
        ts = [Zero(tangent_aval(aval_of(v))) for v in sol]
        ts += [t if is_differentiable_dtype(aval_of(c).dtype) else Zero(tangent_aval(aval_of(c)))
               for t, c in zip(tangents[:nf], f_c)]  # fmt: skip
        _, rhs = jvp_function(self.f.fn, [*sol, *f_c], ts, Context(False))
        rhs = [instantiate(r, tangent_aval(aval_of(v))) for r, v in zip(rhs, sol)]
        sol_dot = [neg(v) for v in evaluate(self.ls.fn, [*sol, *rhs, *l_c])]
        return [*sol_all, *sol_dot, *_zero_tangents(sol_all[self.ng :])]


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    api = "custom_root"
    g_leaves, tree = tree_flatten(initial_guess)
    g_leaves = [_leaf(x) for x in g_leaves]
    g_avals = [aval_of(x) for x in g_leaves]
    ng = len(g_avals)
    flat_f, _ = _flat_fn(f, tree, api, "f", tree, g_avals)
    fc = trace_closed(flat_f, g_avals, name="f")
    flat, box = _flat_fn(lambda x: solve(f, x), tree, api, "solve", tree, g_avals, has_aux)
    s = trace_closed(flat, g_avals, name="solve")

    def linearized_at(xs):
        def g(t):
            t_leaves, ttree = tree_flatten(t)
            if ttree != tree or len(t_leaves) != ng:
                raise TypeError(f"{api}: the linearized f takes {tree}, got {ttree}")
            tl = []
            for v, a in zip(t_leaves, g_avals):
                v = _leaf(v)
                tl.append(v if aval_of(v).dtype == a.dtype else convert(v, a.dtype))
            ts = [*tl, *[Zero(tangent_aval(aval_of(c))) for c in fc.captures]]
            _, out = jvp_function(fc.fn, [*xs, *fc.captures], ts, Context(False))
            return tree_unflatten(tree, [instantiate(o, tangent_aval(a))
                                         for o, a in zip(out, g_avals)])  # fmt: skip

        return g

    def l_and_s(*xb):
        xs, bs = list(xb[:ng]), list(xb[ng:])
        return tangent_solve(linearized_at(xs), tree_unflatten(tree, bs))

    pair_tree = tree_flatten(tuple(range(2 * ng)))[1]  # l_and_s takes x's and b's leaves
    flat, _ = _flat_fn(lambda xb: l_and_s(*xb), pair_tree, api, "tangent_solve", tree, g_avals)
    ls = trace_closed(flat, g_avals + g_avals, name="tangent_solve")
    rule = _RootRule((fc, s, ls), ng, g_avals, s.out_avals, "custom_root")
    consts = [c for fn in (fc, s, ls) for c in fn.captures]
    outs = _bind(rule, [*consts, *g_leaves])
    x = tree_unflatten(tree, outs[:ng])
    if has_aux:
        return x, tree_unflatten(box["aux_tree"], outs[ng:])
    return x


lax_solves.register("custom_linear_solve", custom_linear_solve)
lax_solves.register("custom_root", custom_root)

__all__ = ["custom_linear_solve", "custom_root"]
