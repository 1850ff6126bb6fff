"""`custom_jvp` and `custom_vjp`: the two decorators, their shared wrapper (`_Wrapped`), their
eager calls and the JVP/VJP rules their ops carry.

Apart from `purejit.custom_derivatives` (which re-exports both) because the APIs built on them
(`custom_gradient`, `closure_convert`, `linear_call`) are a layer above.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable, Sequence

import numpy as np

from purejit import errors
from purejit import numpy as jnp
from purejit.dtypes import float0
from purejit.runtime import eval_trace
from purejit.tracing import (
    Tracer,
    aval_of,
    bind,
    current_trace,
    find_top_trace,
    set_current_trace,
    trace_to_function,
)
from purejit.transforms.autodiff import Zero, eager, is_differentiable_dtype
from purejit.transforms.autodiff._core import (
    CustomVJPPrimal,
    SymbolicZero,
    instantiate,
    register_custom,
    tangent_aval,
    zeros,
)
from purejit.transforms.autodiff.interpreter import NonDifferentiableError
from purejit.tree_util import (
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)


def _resolve_args(fun, args, kwargs, api):
    if not kwargs:
        return tuple(args)
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{api}: {e}") from None
    bound.apply_defaults()
    return tuple(bound.args)


def _leaf(x):
    return x if isinstance(x, Tracer) else jnp.asarray(x)


class _Wrapped:
    """Shared by custom_jvp and custom_vjp: splitting static (nondiff) arguments, tracing the
    function into a region, and one rule key per (argument structure, static values)."""

    kind = ""
    # whether a rule keeps what one use's forward hands its backward (its input types): then
    # each input type gets its own rule, so two uses of different shapes never share one
    keyed_by_types = False

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(int(i) for i in nondiff_argnums))
        self._keys: dict = {}

    @property
    def _name(self):
        return getattr(self.fun, "__name__", type(self.fun).__name__)

    def _split(self, args):
        nondiff = tuple(args[i] for i in self.nondiff_argnums)
        dyn = tuple(a for i, a in enumerate(args) if i not in self.nondiff_argnums)
        return nondiff, dyn

    def _merge(self, nondiff, dyn):
        it_n, it_d = iter(nondiff), iter(dyn)
        n = len(nondiff) + len(dyn)
        return tuple(next(it_n) if i in self.nondiff_argnums else next(it_d) for i in range(n))

    def _bind(self, args, make_rule):
        nondiff, dyn = self._split(args)
        leaves, in_tree = tree_flatten(dyn)
        leaves = [_leaf(x) for x in leaves]
        outer = not any(isinstance(x, Tracer) for x in leaves)
        if outer and current_trace() is eval_trace:
            return self.fun(*args)  # nothing traces or differentiates it: just run it
        top = find_top_trace(leaves)
        if isinstance(top, eager.JVPTrace):  # differentiated on concrete values
            return self._eager(top, nondiff, leaves, in_tree)
        box = {}

        def flat(*xs):
            out = self.fun(*self._merge(nondiff, tree_unflatten(in_tree, list(xs))))
            out_leaves, box["out_tree"] = tree_flatten(out)
            return out_leaves

        traced = trace_to_function(flat, [aval_of(x) for x in leaves], name=self._name)
        try:
            cache_key = (in_tree, nondiff)
            if self.keyed_by_types:
                cache_key += (tuple(aval_of(x) for x in leaves),)
            hash(cache_key)
        except TypeError:
            cache_key = None
        key = self._keys.get(cache_key) if cache_key is not None else None
        if key is None:
            rule = make_rule(nondiff, in_tree, len(leaves), box["out_tree"])
            key = register_custom(self.kind, self._name, rule)
            if cache_key is not None:
                self._keys[cache_key] = key
        outs = bind(
            f"{self.kind}_call", *leaves, *traced.captures, regions=[traced.fn], rule=key,
            weak=tuple(a.weak_type for a in traced.out_avals),
        )  # fmt: skip
        return tree_unflatten(box["out_tree"], outs)


class _EagerCall:
    """A custom function called on the tracers of an eager differentiation (`trace`): the
    primal values and tangents of its flat arguments. As in JAX, the user's rules then run
    on concrete values, so Python control flow in them works."""

    def __init__(self, trace, leaves):
        self.trace = trace
        self.primals, self.tangents = [], []
        for x in leaves:
            if isinstance(x, eager.JVPTracer) and x.trace is trace:
                self.primals.append(x.primal)
                self.tangents.append(x.tangent)
            else:
                self.primals.append(x)
                self.tangents.append(Zero(tangent_aval(aval_of(x))))
        self.live = any(not isinstance(t, Zero) for t in self.tangents)
        self.diff = [is_differentiable_dtype(aval_of(p).dtype) for p in self.primals]

    def tangents_for_rule(self, symbolic: bool = False) -> list:
        """A tangent per argument: zeros for symbolic ones (a `SymbolicZero` if `symbolic`),
        float0 for integer arguments."""
        out = []
        for p, t, d in zip(self.primals, self.tangents, self.diff):
            if symbolic and (isinstance(t, Zero) or not d):
                out.append(SymbolicZero(tangent_aval(aval_of(p))))
            else:
                out.append(instantiate(t, tangent_aval(aval_of(p))) if d else
                           np.zeros(np.shape(p), float0))  # fmt: skip
        return out

    def perturbed(self) -> list[bool]:
        """Per argument: whether it is differentiated (a nonzero float tangent)."""
        return [d and not isinstance(t, Zero) for t, d in zip(self.tangents, self.diff)]

    def wrap(self, outs, touts) -> list:
        return [
            eager.JVPTracer(self.trace, o, t)
            if is_differentiable_dtype(aval_of(o).dtype) and not isinstance(t, Zero)
            else o
            for o, t in zip(outs, touts)
        ]


class _JVPRule:
    def __init__(self, owner, nondiff, in_tree, num_args, out_tree):
        self.owner, self.nondiff, self.in_tree = owner, nondiff, in_tree
        self.num_args, self.out_tree, self.name = num_args, out_tree, owner._name
        self.symbolic_zeros = owner.symbolic_zeros

    def jvp(self, primals, tangents):
        p = tree_unflatten(self.in_tree, primals)
        t = tree_unflatten(self.in_tree, tangents)
        res = self.owner.jvp_rule(*self.nondiff, p, t)
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise TypeError(
                f"custom_jvp rule of {self.name!r} must return a pair (primal_out, tangent_out), "
                f"got {type(res).__name__}"
            )
        out, t_out = res
        o_leaves, o_tree = tree_flatten(out)
        t_leaves, t_tree = tree_flatten(t_out)
        if self.out_tree is None:  # called on concrete values: the rule's own structure
            self.out_tree = o_tree
        if o_tree != self.out_tree:
            raise TypeError(
                f"custom_jvp rule of {self.name!r} must produce primal outputs with the same "
                f"container (pytree) structure as the function: the function returns "
                f"{self.out_tree}, the rule {o_tree}"
            )
        if t_tree != o_tree:
            raise TypeError(
                f"custom_jvp rule of {self.name!r} must produce primal and tangent outputs with "
                f"equal container (pytree) structures, but got {o_tree} and {t_tree} respectively."
            )
        fixed = []
        for o, t in zip(o_leaves, t_leaves):
            oa = aval_of(o)
            if not is_differentiable_dtype(oa.dtype):
                fixed.append(zeros(oa))  # an integer output's tangent is never read
                continue
            ta = t.aval if isinstance(t, SymbolicZero) else aval_of(t)
            if ta.shape != oa.shape:
                raise TypeError(
                    f"custom_jvp rule of {self.name!r} returned a tangent of shape {ta.shape} "
                    f"for a primal output of shape {oa.shape}; they must be equal"
                )
            if isinstance(t, SymbolicZero):
                fixed.append(zeros(oa))
                continue
            fixed.append(t if ta.dtype == oa.dtype else jnp.asarray(t, dtype=oa.dtype))
        return [*o_leaves, *fixed]


class custom_jvp(_Wrapped):
    """A function with a custom forward-mode derivative, as jax.custom_jvp.

    Define the rule with `@f.defjvp` (a function `(primals, tangents) -> (primal_out,
    tangent_out)`, after the nondiff arguments) or `f.defjvps(*per_argument_rules)`.
    Reverse mode differentiates the rule (it must be linear in the tangents)."""

    kind = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp_rule = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the JVP rule; returns it (so it decorates).

        Args:
            jvp: `jvp(primals, tangents) -> (primal_out, tangent_out)`.
            symbolic_zeros: pass a `SymbolicZero` (not an array) for each tangent known to
                be zero (an argument not differentiated); the rule may also return one.
        """
        self.jvp_rule = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        self._keys.clear()
        return jvp

    def defjvps(self, *jvps: Callable | None):
        """One rule per argument, `rule(g, ans, *args) -> tangent contribution`."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals, tangents):
            ans = self(*primals)
            out = None
            for rule, t in zip(jvps, tangents):
                if rule is None:
                    continue
                term = rule(t, ans, *primals)
                out = term if out is None else jnp.add(out, term)
            if out is None:
                out = jnp.zeros_like(ans)
            return ans, out

        self.defjvp(jvp)

    def _eager(self, trace, nondiff, leaves, in_tree):
        call = _EagerCall(trace, leaves)
        with set_current_trace(trace.parent):
            primal_args = self._merge(nondiff, tree_unflatten(in_tree, call.primals))
            if not call.live:
                return self(*primal_args)
            rule = _JVPRule(self, nondiff, in_tree, len(leaves), None)
            got = rule.jvp(call.primals, call.tangents_for_rule(self.symbolic_zeros))
        n = len(got) // 2
        return tree_unflatten(rule.out_tree, call.wrap(got[:n], got[n:]))

    def __call__(self, *args, **kwargs):
        if self.jvp_rule is None:
            raise AttributeError(
                f"No JVP defined for custom_jvp function {self._name} using defjvp."
            )
        args = _resolve_args(self.fun, args, kwargs, "custom_jvp")
        return self._bind(args, lambda nd, tree, n, out: _JVPRule(self, nd, tree, n, out))


class _VJPRule:
    def __init__(self, owner, nondiff, in_tree, num_args, out_tree):
        self.owner, self.nondiff, self.in_tree = owner, nondiff, in_tree
        self.num_args, self.out_tree, self.name = num_args, out_tree, owner._name
        self.res_tree = None
        self.static_res: tuple = ()  # (position, Python scalar) among the residual leaves
        self.in_avals = None
        self.symbolic_zeros = owner.symbolic_zeros

    def fwd(self, primals, perturbed=None):
        """Run the user's fwd on flat primals (`perturbed`: per primal, whether it is
        differentiated; what fwd sees with symbolic zeros)."""
        self.in_avals = [aval_of(x) for x in primals]
        if self.symbolic_zeros:
            flags = [True] * len(primals) if perturbed is None else perturbed
            primals = [CustomVJPPrimal(x, bool(f)) for x, f in zip(primals, flags)]
        p = tree_unflatten(self.in_tree, primals)
        res = self.owner.fwd(*self.nondiff, *p)
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise TypeError(
                f"Custom VJP fwd rule {self.name!r} must produce a pair (list or tuple of length "
                f"two) representing primal outputs and residuals (values stored from the "
                f"forward pass for use on the backward pass), got {type(res).__name__}."
            )
        out, r = res
        o_leaves, o_tree = tree_flatten(out)
        if self.out_tree is None:  # called on concrete values: fwd's own structure
            self.out_tree = o_tree
        if o_tree != self.out_tree:
            raise TypeError(
                f"Custom VJP fwd rule {self.name!r} must produce primal outputs with the same "
                f"container (pytree) structure as the function: the function returns "
                f"{self.out_tree}, fwd {o_tree}"
            )
        r_leaves, self.res_tree = tree_flatten(r)
        # Python scalars among the residuals stay Python values, as in JAX: bwd gets back
        # the bool or int fwd saved (Equinox saves its `perturbed` flags so and branches on
        # them); only the other leaves travel as arrays
        self.static_res = tuple(
            (i, x) for i, x in enumerate(r_leaves) if type(x) in (bool, int, float, complex)
        )
        static = {i for i, _ in self.static_res}
        return o_leaves, [_leaf(x) for i, x in enumerate(r_leaves) if i not in static]

    def bwd_flat(self, res, cts):
        res = list(res)
        for i, x in self.static_res:
            res.insert(i, x)
        r = tree_unflatten(self.res_tree, res)
        if not self.symbolic_zeros:
            cts = [instantiate(Zero(c.aval)) if isinstance(c, SymbolicZero) else c for c in cts]
        ct = tree_unflatten(self.out_tree, cts)
        got = self.owner.bwd(*self.nondiff, r, ct)
        want_tree = self.in_tree
        if not isinstance(got, (tuple, list)):
            raise TypeError(
                f"Custom VJP bwd rule {self.name!r} must produce a tuple of length equal to the "
                f"number of differentiable arguments ({len(want_tree.children)}), got "
                f"{type(got).__name__}"
            )
        got = tuple(got)
        leaves = self._match_inputs(got)
        out = []
        for k, (g, a) in enumerate(zip(leaves, self.in_avals)):
            if not is_differentiable_dtype(a.dtype):
                continue
            if g is None:
                out.append(Zero(a))
                continue
            ga = g.aval if isinstance(g, SymbolicZero) else aval_of(g)
            if ga.shape != a.shape or ga.dtype != a.dtype:
                raise ValueError(
                    f"Custom VJP bwd rule {self.name!r} must produce an output with the same "
                    f"shape/dtypes as the args tuple of the primal function, but at output "
                    f"leaf {k} the bwd rule produced an output of shape/dtype "
                    f"{ga.str_short()} corresponding to an input of shape/dtype "
                    f"{a.str_short()}{errors.at(errors.user_location())}"
                )
            out.append(Zero(a) if isinstance(g, SymbolicZero) else _leaf(g))
        return out

    def _match_inputs(self, got: tuple) -> list:
        """One cotangent (None: zero) per primal input leaf, read as JAX reads bwd's
        output: its structure is a prefix of the primal inputs' (None for a whole argument
        or subtree: zeros; a leaf where the input has a subtree: that value for each of its
        leaves; anything where the input is an empty subtree such as None: nothing)."""
        want_tree = self.in_tree
        dummy = tree_unflatten(want_tree, [object() for _ in range(want_tree.num_leaves)])
        flat: list = []

        def append(g, d):
            n = len(tree_leaves(d))
            flat.extend([None] * n if g is None else [g] * n)

        try:
            if len(got) != len(want_tree.children):
                raise ValueError
            tree_map(append, got, tuple(dummy), is_leaf=_none)
        except ValueError:
            raise TypeError(
                f"Custom VJP bwd rule {self.name!r} must produce an output with the same "
                f"container (pytree) structure as the args tuple of the primal function, and "
                f"in particular must produce a tuple of length equal to the number of arguments "
                f"to the primal function, but got bwd output structure "
                f"{tree_structure(got, is_leaf=_none)} for primal input structure "
                f"{want_tree}."
            ) from None
        return flat


def _none(x) -> bool:
    return x is None


class custom_vjp(_Wrapped):
    """A function with a custom reverse-mode derivative, as jax.custom_vjp.

    `f.defvjp(fwd, bwd)`: `fwd(*args) -> (out, residuals)`, `bwd(residuals, ct_out) ->
    tuple of one cotangent per argument` (nondiff arguments come first in both)."""

    kind = "custom_vjp"
    keyed_by_types = True

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None
        self.symbolic_zeros = False

    def defvjp(
        self,
        fwd: Callable,
        bwd: Callable,
        symbolic_zeros: bool = False,
        optimize_remat: bool = False,
    ):
        """Set the forward and backward rules.

        Args:
            fwd: `fwd(*args) -> (out, residuals)`.
            bwd: `bwd(residuals, ct_out) -> one cotangent per argument` (None: zero).
            symbolic_zeros: fwd receives each primal leaf as a `CustomVJPPrimal` (`value`,
                `perturbed`), and bwd a `SymbolicZero` for each output cotangent known to
                be zero; bwd may return SymbolicZeros too.
            optimize_remat: JAX's experimental remat optimisation of fwd; purejit's remat
                plan keeps what fwd returns, so only False is accepted.
        """
        if optimize_remat:
            raise NotImplementedError(
                "custom_vjp.defvjp(optimize_remat=True): purejit saves the residuals fwd "
                "returns (its remat plan never recomputes fwd); pass optimize_remat=False"
            )
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)
        self._keys.clear()

    def _eager(self, trace, nondiff, leaves, in_tree):
        call = _EagerCall(trace, leaves)
        with set_current_trace(trace.parent):
            primal_args = self._merge(nondiff, tree_unflatten(in_tree, call.primals))
            if not call.live:
                return self(*primal_args)
            if not trace.ctx.linearizing:
                raise NonDifferentiableError(
                    f"can't apply forward-mode autodiff (jvp) to a custom_vjp function "
                    f"({self._name!r}); use reverse mode (grad, vjp) or define it with custom_jvp"
                )
            rule = _VJPRule(self, nondiff, in_tree, len(leaves), None)
            outs, res = rule.fwd(call.primals, call.perturbed())
            try:
                # the rule's state (structures, input types) is part of the key
                avals = tuple(rule.in_avals)
                cache_key = ("eager", in_tree, nondiff, rule.out_tree, rule.res_tree, avals)
                cache_key += (tuple((i, type(x), x) for i, x in rule.static_res),)
                hash(cache_key)
            except TypeError:
                cache_key = None
            key = self._keys.get(cache_key) if cache_key is not None else None
            if key is None:
                key = register_custom(self.kind, self._name, rule)
                if cache_key is not None:
                    self._keys[cache_key] = key
            ts = [t for t, d in zip(call.tangents_for_rule(), call.diff) if d]
            out_types = tuple((tuple(aval_of(o).shape), aval_of(o).dtype) for o in outs)
            # the linear map the user's bwd transposes: recorded in the linear trace
            touts = bind("custom_lin", *res, *ts, rule=key, num_res=len(res), out_types=out_types)
        return tree_unflatten(rule.out_tree, call.wrap(outs, touts))

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(
                f"No VJP defined for custom_vjp function {self._name} using defvjp."
            )
        args = _resolve_args(self.fun, args, kwargs, "custom_vjp")
        return self._bind(args, lambda nd, tree, n, out: _VJPRule(self, nd, tree, n, out))
