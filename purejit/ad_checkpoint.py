"""`checkpoint` (alias `remat`), its saving policies and `checkpoint_name`, as JAX's
`jax.checkpoint`, `jax.checkpoint_policies` and `jax.ad_checkpoint.checkpoint_name`.

The function is traced into the region of a `checkpoint` op. Differentiating it runs the
function forward keeping only the values the policy saves (its inputs always); the
backward pass recomputes the rest from the inputs, passed through an optimization barrier
so that no compiler pass merges the recomputation back into the forward pass.
A policy is `policy(prim, *avals, **params) -> bool` (or `Saveable` / `Recompute`, the
result objects of JAX's policies), asked for every op of the function; `prim.name` is the
op's name (`"dot_general"`, `"checkpoint_name"`, ...); for a user-defined primitive, `prim` is
the `Primitive` itself and the parameters are its use's, as in JAX. `print_saved_residuals`
lists what a reverse-mode derivative of a function keeps for its backward pass.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable, NamedTuple, Sequence

from purejit import numpy as jnp
from purejit.api import jit
from purejit.ir.ops.user_primitive import OPS as USER_PRIMITIVE_OPS
from purejit.ir.ops.user_primitive import lookup_use
from purejit.autodiff import vjp
from purejit.tracing import Tracer, aval_of, bind, bind1, trace_to_function
from purejit.transforms.autodiff._core import register_custom
from purejit.transforms.autodiff.autodiff import Prim
from purejit.tree_util import tree_flatten, tree_unflatten


class _CheckpointRule:
    def __init__(self, policy, name):
        self.policy = policy
        self.name = name

    def saveable(self, op) -> bool:
        if self.policy is None:
            return False
        avals = [v.type for v in op.operands]
        params = dict(op.attrs)
        prim = Prim(op.name)
        if op.name == "checkpoint_name":  # JAX's policies read the name as `name`
            params["name"] = params.pop("label")
        if op.name in USER_PRIMITIVE_OPS:  # the user's primitive and parameters, as in JAX
            use = lookup_use(op.attrs["primitive"])
            prim, params = use.prim, dict(use.params)
        got = self.policy(prim, *avals, **params)
        if isinstance(got, Offloadable):
            raise NotImplementedError(
                f"checkpoint policy {self.name!r} returned {got} for {op.name}: purejit does "
                "not offload residuals to host memory; return Saveable (keep it on the "
                "device) or Recompute"
            )
        if got is Saveable or got is Recompute:
            return got is Saveable
        return bool(got)


class RecomputeType:
    """The type of `Recompute`."""

    def __repr__(self):
        return "Recompute"


class SaveableType:
    """The type of `Saveable`."""

    def __repr__(self):
        return "Saveable"


# what a policy may return instead of a bool, as JAX's (jax.ad_checkpoint)
Recompute = RecomputeType()
Saveable = SaveableType()


class Offloadable(NamedTuple):
    """A policy's answer "save it in memory `dst` (moved from `src`)": JAX's host offloading,
    which purejit does not do (a policy returning it raises NotImplementedError)."""

    src: Any
    dst: Any


_rules: dict = {}


def _rule_key(policy) -> str:
    key = _rules.get(id(policy))
    if key is None or key[0] is not policy:
        name = getattr(policy, "__name__", "policy") if policy is not None else "nothing_saveable"
        key = (policy, register_custom("checkpoint", name, _CheckpointRule(policy, name)))
        _rules[id(policy)] = key
    return key[1]


def checkpoint(
    fun: Callable,
    *,
    prevent_cse: bool = True,
    policy: Callable | None = None,
    static_argnums: int | Sequence[int] = (),
) -> Callable:
    """`fun`, recomputed in the backward pass instead of saving its intermediate values.

    Args:
        fun: the function.
        prevent_cse: keep compiler passes from merging the recomputation with the forward
            pass (True, as in JAX; False inside a `scan`, where it is not needed).
        policy: which intermediate values may be saved (see `checkpoint_policies`); by
            default none are, only the inputs.
        static_argnums: arguments that are Python values, not arrays.
    Returns:
        The wrapped function.
    """
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        if kwargs:
            raise TypeError("checkpoint: pass arguments positionally (as jax.checkpoint needs)")
        static = {i % len(args): args[i] for i in statics}
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_flatten(dyn)
        leaves = [x if isinstance(x, Tracer) else jnp.asarray(x) for x in leaves]
        box = {}

        def flat(*xs):
            it = iter(tree_unflatten(in_tree, list(xs)))
            full = [static[i] if i in static else next(it) for i in range(len(args))]
            out_leaves, box["tree"] = tree_flatten(fun(*full))
            return out_leaves

        traced = trace_to_function(flat, [aval_of(x) for x in leaves], name="checkpoint")
        outs = bind(
            "checkpoint",
            *leaves,
            *traced.captures,
            regions=[traced.fn],
            rule=_rule_key(policy),
            prevent_cse=bool(prevent_cse),
            weak=tuple(a.weak_type for a in traced.out_avals),
        )
        return tree_unflatten(box["tree"], outs)

    return wrapped


remat = checkpoint


def checkpoint_name(x, name: str):
    """`x`, named `name` for the checkpoint policies that save values by name."""
    leaves, tree = tree_flatten(x)
    out = [bind1("checkpoint_name", jnp.asarray(v), label=str(name)) for v in leaves]
    return tree_unflatten(tree, out)


def everything_saveable(*_, **__) -> bool:
    return True


def nothing_saveable(*_, **__) -> bool:
    return False


def dots_saveable(prim, *_, **__) -> bool:
    return prim.name == "dot_general"


def dots_with_no_batch_dims_saveable(prim, *_, **params) -> bool:
    return prim.name == "dot_general" and not params.get("lhs_batching_dimensions")


def save_only_these_names(*names: str):
    names = set(names)

    def policy(prim, *_, **params):
        return prim.name == "checkpoint_name" and params.get("name") in names

    return policy


def save_any_names_but_these(*names: str):
    names = set(names)

    def policy(prim, *_, **params):
        return prim.name == "checkpoint_name" and params.get("name") not in names

    return policy


def save_anything_except_these_names(*names: str):
    names = set(names)

    def policy(prim, *_, **params):
        return not (prim.name == "checkpoint_name" and params.get("name") in names)

    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_anything_except_these_names=save_anything_except_these_names,
)


def saved_residuals(f: Callable, *args, **kwargs) -> list[tuple[Any, str]]:
    """What reverse-mode differentiation of `f` at `args` keeps for the backward pass, under
    `jit` (purejit's remat plan decides it there): `(abstract value, where it comes from)`
    per residual, as jax.ad_checkpoint.saved_residuals."""
    fun = functools.partial(f, **kwargs) if kwargs else f

    def forward(*xs):
        return vjp(fun, *xs)

    records = jit(forward).lower(*args).residuals
    out = []
    for rec in records:
        if rec.inner:
            continue
        for r in rec.saved:
            src = r.what
            if r.what.startswith("input "):
                src = f"from the argument {r.what[len('input ') :]}"
            elif r.loc:
                src = f"{r.what} from {r.loc}"
            out.append((r.type, src))
    return out


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
    """Print `saved_residuals(f, *args, **kwargs)`, one residual a line
    (`f32[3] output of sin from model.py:12`), as jax.ad_checkpoint.print_saved_residuals."""
    for t, src in saved_residuals(f, *args, **kwargs):
        print(f"{t} {src}")


def custom_remat(f, f_fwd, f_rem, f_bwd, *, static_argnums=(), static_argnames=()):
    """`f` with its own rematerialisation rules, as jax 0.11's `jax.custom_remat`.

    The rules (`f_fwd(policy, *args) -> (out, res)` saving residuals under a checkpoint,
    `f_rem(res, *args) -> (out, res2)` recomputing in the backward pass and
    `f_bwd(res2, out_ct) -> args_ct`) take effect in JAX only under its `jax_remat3`
    checkpoint implementation, off by default; with it off, JAX evaluates `f` and
    differentiates `f` itself, in forward and reverse mode, inside `checkpoint` or not.
    purejit has no remat3 (`config.update("jax_remat3", True)` raises, naming the unknown
    option, in drop-in mode too), so the wrapped function is `f`, evaluated and
    differentiated as JAX does with its default, and the rules are kept on the wrapper
    (`.f_fwd`, `.f_rem`, `.f_bwd`) for inspection.

    Args:
        f: the function to wrap.
        f_fwd, f_rem, f_bwd: the rules above (callables).
        static_argnums, static_argnames: as in `jit`: arguments passed to `f` as Python
            values.
    Returns:
        A function with `f`'s call behaviour.
    """
    for name, rule in (("f", f), ("f_fwd", f_fwd), ("f_rem", f_rem), ("f_bwd", f_bwd)):
        if not callable(rule):
            raise TypeError(f"custom_remat: {name} must be callable, got {rule!r}")
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)

    @functools.wraps(f)
    def call(*args, **kwargs):
        return f(*args, **kwargs)

    call.f_fwd, call.f_rem, call.f_bwd = f_fwd, f_rem, f_bwd
    call.static_argnums, call.static_argnames = nums, names
    return call


__all__ = [
    "Offloadable",
    "Recompute",
    "Saveable",
    "checkpoint",
    "checkpoint_name",
    "checkpoint_policies",
    "print_saved_residuals",
    "remat",
    "saved_residuals",
]
