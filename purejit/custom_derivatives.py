"""`custom_jvp`, `custom_vjp` and `closure_convert`, as in JAX.

A decorated function is traced into the region of one op (`custom_jvp_call` /
`custom_vjp_call`) whose `rule` attribute names the Python rules: compiled code runs the
region, and differentiation runs the rules instead of differentiating the region. Called
outside any trace (eagerly, no transformation), the function simply runs.

`custom_jvp` and `custom_vjp` themselves live in `_custom_jvp_vjp`; this module re-exports them
and holds what is built beside or on them.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from purejit import errors
from purejit import numpy as jnp

# re-exported: custom_jvp and custom_vjp are public here, _JVPRule is what fused_attention reuses
from purejit._custom_jvp_vjp import _JVPRule, _leaf, custom_jvp, custom_vjp  # noqa: F401
from purejit.dtypes import float0
from purejit.runtime import eval_trace
from purejit.tracing import Tracer, aval_of, bind, current_trace, trace_to_function
from purejit.tracing.primitive import get_primitive
from purejit.transforms import trace_closed
from purejit.transforms.autodiff import Zero, evaluate
from purejit.transforms.autodiff._core import (
    CustomVJPPrimal,
    SymbolicZero,
    instantiate,
    intern_custom,
    register_custom,
    tangent_aval,
)
from purejit.tree_util import register_pytree_node, tree_flatten, tree_map, tree_unflatten


class _GradientRule:
    """The residuals of a `custom_gradient` function: its VJP function traced to IR (static)
    and the values that function closes over (the pytree children)."""

    def __init__(self, fn, in_tree, out_tree, consts):
        self.fn, self.in_tree, self.out_tree, self.consts = fn, in_tree, out_tree, consts


register_pytree_node(
    _GradientRule,
    lambda r: (list(r.consts), (r.fn, r.in_tree, r.out_tree)),
    lambda aux, consts: _GradientRule(*aux, list(consts)),
)


def custom_gradient(fun: Callable) -> Callable:
    """A function with a custom gradient, as jax.custom_gradient (TensorFlow's API).

    `fun(*args)` returns `(value, vjp_fn)`: `vjp_fn(ct)` gives the cotangents of the
    arguments (a tuple, or one array for a one-argument function) and may close over
    values `fun` computed. The decorated function returns `value`; reverse-mode
    differentiation calls `vjp_fn` (built on custom_vjp: forward mode is not supported).
    """

    @functools.wraps(fun)
    def primal(*args, **kwargs):
        ans, _ = _pair(fun(*args, **kwargs))
        return ans

    wrapped = custom_vjp(primal)

    def fwd(*args):
        ans, rule = _pair(fun(*args))
        if not callable(rule):
            raise TypeError(
                f"custom_gradient: {wrapped._name!r} must return (value, vjp_fn) with a "
                f"callable vjp_fn, got {type(rule).__name__}"
            )
        ans_leaves, out_tree = tree_flatten((ans,))
        box = {}

        def flat(*cts):
            got = rule(*tree_unflatten(out_tree, list(cts)))
            leaves, box["tree"] = tree_flatten(got)
            return [_leaf(x) for x in leaves]

        # traced here, so the values it closes over become residuals (they are tracers of
        # this forward pass, which the backward pass cannot read directly)
        closed = trace_closed(flat, [aval_of(_leaf(x)) for x in ans_leaves], name="vjp_fn")
        return ans, _GradientRule(closed.fn, box["tree"], out_tree, closed.captures)

    def bwd(res, ct):
        cts, tree = tree_flatten((ct,))
        if tree != res.out_tree:
            raise TypeError(
                f"custom_gradient: the cotangent has structure {tree}, the output {res.out_tree}"
            )
        got = tree_unflatten(res.in_tree, evaluate(res.fn, [*cts, *res.consts]))
        return (got,) if res.in_tree.kind is None else got  # one bare cotangent

    wrapped.defvjp(fwd, bwd)
    return wrapped


def _pair(out):
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(
            "custom_gradient: the function must return a pair (value, vjp_fn), got "
            f"{type(out).__name__}{errors.at(errors.user_location())}"
        )
    return out


def closure_convert(fun: Callable, *example_args):
    """`(converted, consts)`: `converted(*args, *consts)` computes `fun(*args)` with the
    traced values `fun` closes over passed explicitly as `consts`, as jax.closure_convert."""
    leaves, in_tree = tree_flatten(example_args)
    box = {}

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        out_leaves, box["tree"] = tree_flatten(out)
        return out_leaves

    closed = trace_closed(flat, [aval_of(_leaf(x)) for x in leaves], name="closure_convert")
    consts = list(closed.captures)
    n = len(leaves)

    def converted(*args):
        a_leaves, _ = tree_flatten(args[: len(args) - len(consts)])
        outs = evaluate(
            closed.fn, [*[_leaf(x) for x in a_leaves], *args[len(args) - len(consts) :]]
        )
        return tree_unflatten(box["tree"], outs)

    del n
    return converted, consts


def zero_from_primal(val, symbolic_zeros: bool = False):
    """The zero tangent of each leaf of `val`: a `SymbolicZero` if `symbolic_zeros`, else
    an array of zeros (float0 for integer leaves), as jax.custom_derivatives'."""

    def zero(x):
        t = tangent_aval(aval_of(_leaf(x)))
        if symbolic_zeros:
            return SymbolicZero(t)
        return np.zeros(t.shape, float0) if t.dtype == float0 else jnp.zeros(t.shape, t.dtype)

    return tree_map(zero, val)


def custom_vjp_primal_tree_values(tree):
    """`tree` with each `CustomVJPPrimal` leaf (what a symbolic-zeros fwd receives) replaced
    by its value; TypeError for any other leaf, as JAX's."""

    def value(leaf):
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value

    return tree_map(value, tree)


class _LinearCallRule:
    """The rule of `linear_call`s of one (fun, fun_transpose, argument structure and types):
    operands `[*residuals, *linear args, *captures]`. Its JVP is the call again on the
    tangents of the linear arguments; its transpose is a `linear_call` of `fun_transpose`
    (with `fun` as that one's transpose)."""

    symbolic_zeros = True  # residual tangents must be zero: the rule checks they are

    def __init__(self, fun, fun_t, res_tree, lin_tree, out_tree, name):
        self.fun, self.fun_t = fun, fun_t
        self.res_tree, self.lin_tree, self.out_tree = res_tree, lin_tree, out_tree
        self.num_res = res_tree.num_leaves
        self.num_args = self.num_res + lin_tree.num_leaves
        self.name = name

    def _call(self, res, lin) -> list:
        got = linear_call(
            self.fun,
            self.fun_t,
            tree_unflatten(self.res_tree, list(res)),
            tree_unflatten(self.lin_tree, list(lin)),
        )
        return tree_flatten(got)[0]

    def jvp(self, primals, tangents):
        nr = self.num_res
        if any(not isinstance(t, SymbolicZero) for t in tangents[:nr]):
            raise NotImplementedError(
                f"linear_call {self.name!r}: a residual argument is being differentiated; "
                "linear_call is linear in its linear arguments only (pass values that "
                "depend on the differentiated inputs as linear arguments)"
            )
        lin_ts = [instantiate(Zero(t.aval)) if isinstance(t, SymbolicZero) else t
                  for t in tangents[nr:]]  # fmt: skip
        res = primals[:nr]
        return [*self._call(res, primals[nr:]), *self._call(res, lin_ts)]

    def transpose(self, cts, operands):
        nr, n = self.num_res, self.num_args
        res = list(operands[:nr])
        cts = [instantiate(c) for c in cts]
        got = linear_call(
            self.fun_t,
            self.fun,
            tree_unflatten(self.res_tree, res),
            tree_unflatten(self.out_tree, cts),
        )
        leaves, tree = tree_flatten(got)
        if tree != self.lin_tree:
            raise TypeError(
                f"linear_call {self.name!r}: transpose output pytree structure must match that "
                f"of linear inputs, got output structure {tree} and input structure "
                f"{self.lin_tree}."
            )
        return [None] * nr + [_leaf(x) for x in leaves] + [None] * (len(operands) - n)


def linear_call(fun: Callable, fun_transpose: Callable, residual_args, linear_args):
    """`fun(residual_args, linear_args)`, a function linear in `linear_args`, whose transpose
    is `fun_transpose(residual_args, cotangents)`, as jax.custom_derivatives.linear_call.

    Differentiating it gives the call again on the tangents of `linear_args` (residuals are
    not differentiated); transposing it calls `fun_transpose`, so reverse mode uses the
    transpose the user wrote instead of transposing `fun`'s ops.
    """
    res_leaves, res_tree = tree_flatten(residual_args)
    lin_leaves, lin_tree = tree_flatten(linear_args)
    leaves = [_leaf(x) for x in [*res_leaves, *lin_leaves]]
    if current_trace() is eval_trace and not any(isinstance(x, Tracer) for x in leaves):
        return fun(residual_args, linear_args)  # nothing differentiates or traces it
    nr = len(res_leaves)
    box = {}

    def flat(*xs):
        r = tree_unflatten(res_tree, list(xs[:nr]))
        x = tree_unflatten(lin_tree, list(xs[nr:]))
        out_leaves, box["out_tree"] = tree_flatten(fun(r, x))
        return [_leaf(o) for o in out_leaves]

    avals = tuple(aval_of(x) for x in leaves)
    name = getattr(fun, "__name__", "linear_call")
    traced = trace_to_function(flat, list(avals), name=name)
    out_tree = box["out_tree"]

    def make():
        return _LinearCallRule(fun, fun_transpose, res_tree, lin_tree, out_tree, name)

    try:
        identity = (fun, fun_transpose, res_tree, lin_tree, out_tree, avals)
        hash(identity)
    except TypeError:
        key = register_custom("custom_jvp", name, make())
    else:
        key = intern_custom("custom_jvp", name, identity, make)
    outs = bind("custom_jvp_call", *leaves, *traced.captures, regions=[traced.fn], rule=key,
                weak=tuple(a.weak_type for a in traced.out_avals))  # fmt: skip
    return tree_unflatten(out_tree, list(outs))


# the ops a custom function traces into, as primitive objects (what jaxpr equations carry)
custom_jvp_call_p = get_primitive("custom_jvp_call")
custom_vjp_call_p = get_primitive("custom_vjp_call")

__all__ = [
    "CustomVJPPrimal",
    "SymbolicZero",
    "closure_convert",
    "custom_gradient",
    "custom_jvp",
    "custom_jvp_call_p",
    "custom_vjp",
    "custom_vjp_call_p",
    "custom_vjp_primal_tree_values",
    "linear_call",
    "np",
    "zero_from_primal",
]
