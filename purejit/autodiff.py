"""Automatic differentiation with JAX's API: `grad`, `value_and_grad`, `vjp`, `jvp`,
`linearize`, `linear_transpose`.

Outside `jit` (no staging trace is recording), every entry point runs the user's function
on concrete values, as JAX does (`transforms/autodiff/eager.py`): each op's JVP rule runs
as the op is called, so Python `if`/`while` on values work; reverse mode records the linear
part as an IR program that the transpose rules run backwards. A jitted function
differentiated or vmapped outside jit runs as one cached executable instead
(`Jitted.derived`: `grad(jit(f))` one program for value and gradient, `vjp(jit(f))` a
forward program returning the residuals and a backward program).

Inside `jit` or another staging trace, an entry point traces the function into an IR
function at a new level (values it closes over become captured inputs with zero tangents),
then runs one of the interpreters of `purejit.transforms.autodiff` over it, binding the ops
they produce into the enclosing trace (so `jit(grad(f))` is one program). Both paths apply
the same JVP and transpose rules. Reverse mode is linearize + transpose.

The checks of the arguments and results, raising JAX's errors, are in `_autodiff_checks`.
"""

from __future__ import annotations

import copy
import functools
import operator
from typing import Callable, Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit import numpy as jnp
from purejit._autodiff_checks import (
    as_leaf,
    canonical_argnums,
    check_cotangent,
    check_input_dtypes,
    check_output_leaf,
    check_scalar_output,
    check_tangent,
)
from purejit.api import Jitted, jit
from purejit.fused_attention import fuse_for_grad
from purejit.lax.parallel import typed_in_body
from purejit.tracing import ShapedArray, aval_of
from purejit.transforms import trace_closed
from purejit.transforms.autodiff import (
    Context,
    Zero,
    jvp_function,
    tangent_aval,
)
from purejit.transforms.autodiff import eager, remat
from purejit.transforms.autodiff._core import instantiate
from purejit.tree_util import (
    Partial,
    tree_flatten,
    tree_paths,
    tree_structure,
    tree_unflatten,
)

float0 = pdt.float0


# ---- tracing the user's function ------------------------------------------------------------


class _Traced:
    """The user's function as a flat call, and the trees around it.

    Staged (`eager=False`, inside a `jit` or another staging trace): `closed` is the closed
    IR function and `args` its arguments (the leaves, then the captured values). Eager:
    `flat` runs the function itself on the tracers of `transforms.autodiff.eager`."""

    def __init__(self, fun, leaves, in_tree, has_aux: bool, api: str, eager: bool = False):
        self.out_tree = None
        self.aux_tree = None
        self.num_out = 0

        def flat(*xs):
            out = fun(*tree_unflatten(in_tree, list(xs)))
            aux_leaves = []
            if has_aux:
                if not isinstance(out, (tuple, list)) or len(out) != 2:
                    raise TypeError(
                        f"{api} with has_aux=True: the function must return a pair "
                        f"(output, auxiliary data), got {type(out).__name__}"
                        f"{errors.at(errors.user_location())}"
                    )
                out, aux = out
                aux_leaves, self.aux_tree = tree_flatten(aux)
            out_leaves, self.out_tree = tree_flatten(out)
            self.num_out = len(out_leaves)
            for x in out_leaves:
                check_output_leaf(x, api)
            return [*out_leaves, *aux_leaves]

        self.flat = flat
        self.num_in = len(leaves)
        self.eager = eager
        if eager:
            self.closed = None
            self.args = list(leaves)
            return
        self.closed = trace_closed(flat, [aval_of(x) for x in leaves], name=api)
        self.args = [*leaves, *self.closed.captures]

    def split(self, outs):
        return outs[: self.num_out], outs[self.num_out :]


def _float0_zeros(aval: ShapedArray):
    return np.zeros(aval.shape, dtype=float0)


def _materialize(t, aval: ShapedArray):
    """A tangent or cotangent for the user: zeros for a symbolic zero (float0 for ints)."""
    if aval.dtype == float0:
        return _float0_zeros(aval)
    return instantiate(t, ShapedArray(aval.shape, aval.dtype))


# ---- jvp, linearize -------------------------------------------------------------------------


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """Forward-mode derivative: `(fun(*primals), J @ tangents)`, as jax.jvp.

    Args:
        fun: a function of arrays (pytrees) returning arrays (a pytree).
        primals: a tuple or list of arguments.
        tangents: a tuple or list of tangents, one per primal, with the primals' structure,
            shapes and dtypes (float0 for integer and boolean primals).
        has_aux: `fun` returns `(output, aux)`; aux is returned undifferentiated.
    Returns:
        `(primals_out, tangents_out)`, plus `aux` when has_aux.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            "primal and tangent arguments to jvp must be tuples or lists; found "
            f"{type(primals).__name__} and {type(tangents).__name__}."
        )
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(
            "primal and tangent arguments to jvp must have the same tree structure; primals "
            f"have tree structure {p_tree} whereas tangents have tree structure {t_tree}."
        )
    p_leaves = [as_leaf(x, "jvp") for x in p_leaves]
    for k, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        check_tangent("jvp", p, t, f"leaf {k}")
    if all(pdt.is_inexact(aval_of(p).dtype) for p in p_leaves):  # (no float0 tangents)
        unit = compiled_derivative(fun, ("jvp", has_aux), functools.partial(_jvp_of, has_aux))
        if unit is not None:  # jvp(jit(f)): primal and tangent outputs as one program
            return unit(tuple(primals), tuple(tangents))
    tans = []
    for p, t in zip(p_leaves, t_leaves):
        a = tangent_aval(aval_of(p))
        tans.append(Zero(a) if a.dtype == float0 else as_leaf(t, "jvp"))
    if eager.is_eager():
        tr = _Traced(fun, p_leaves, p_tree, has_aux, "jvp", eager=True)
        outs, touts = eager.jvp(tr.flat, p_leaves, tans, "purejit.jvp", _NumOut(tr))
        out_avals = [aval_of(o) for o in outs[: tr.num_out]]
    else:
        tr = _Traced(fun, p_leaves, p_tree, has_aux, "jvp")
        caps = [Zero(tangent_aval(aval_of(c))) for c in tr.closed.captures]
        outs, touts = jvp_function(tr.closed.fn, tr.args, tans + caps, Context(linearizing=False))
        out_avals = tr.closed.out_avals[: tr.num_out]
    outs, aux = tr.split(outs)
    touts = touts[: tr.num_out]
    touts = [_materialize(t, tangent_aval(a)) for t, a in zip(touts, out_avals)]
    res = (tree_unflatten(tr.out_tree, outs), tree_unflatten(tr.out_tree, touts))
    if has_aux:
        return (*res, tree_unflatten(tr.aux_tree, aux))
    return res


class _NumOut:
    """How many of a flat call's outputs are differentiated, known once it has run."""

    def __init__(self, traced: _Traced):
        self.traced = traced

    def __index__(self):
        return self.traced.num_out


def _jvp_of(has_aux, f):
    return lambda primals, tangents: jvp(f, primals, tangents, has_aux=has_aux)


def _linearize(fun, primals, has_aux, api, transform=None):
    p_leaves, p_tree = tree_flatten(tuple(primals))
    p_leaves = [as_leaf(x, api) for x in p_leaves]
    if eager.is_eager():
        tr = _Traced(fun, p_leaves, p_tree, has_aux, api, eager=True)
        nonzero = [True] * tr.num_in
        outs, lin = eager.linearize(
            tr.flat, p_leaves, nonzero, transform or f"purejit.{api}", _NumOut(tr)
        )
        return tr, p_leaves, p_tree, outs, lin
    tr = _Traced(fun, p_leaves, p_tree, has_aux, api)
    nonzero = [True] * tr.num_in + [False] * len(tr.closed.captures)
    names = tree_paths(p_tree, "args")  # how explain names residuals that are inputs
    fn = typed_in_body(tr.closed.fn, tr.args)  # inside a shard_map body: JAX's vma typing
    fn = fuse_for_grad(fn)  # attention gets its fused op's VJP, and remat plans around it
    outs, lin = remat.linearize(fn, tr.args, nonzero, where=api, param_names=names)
    return tr, p_leaves, p_tree, outs, lin


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """`(fun(*primals), f_jvp)` where `f_jvp(*tangents)` applies the linearization, as
    jax.linearize: the forward pass runs once; `f_jvp` only runs the linear program."""
    tr, p_leaves, p_tree, outs, lin = _linearize(fun, primals, has_aux, "linearize")
    outs, aux = tr.split(outs)
    n = tr.num_out
    out_avals = lin.out_avals[:n]

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tuple(tangents))
        if t_tree != p_tree:
            raise TypeError(
                f"linearize: the tangents have tree structure {t_tree}, the primals {p_tree}"
            )
        for k, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            check_tangent("linearize", p, t, f"leaf {k}")
        ts = [
            Zero(a) if a.dtype == float0 else as_leaf(t, "linearize")
            for t, a in zip(t_leaves, lin.in_avals)
        ]
        ts += [Zero(a) for a in lin.in_avals[len(ts) :]]
        got = lin.apply(ts)[:n]
        return tree_unflatten(tr.out_tree, [_materialize(t, a) for t, a in zip(got, out_avals)])

    out = tree_unflatten(tr.out_tree, outs)
    if has_aux:
        return out, f_jvp, tree_unflatten(tr.aux_tree, aux)
    return out, f_jvp


# ---- vjp, grad ----------------------------------------------------------------------------


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """Reverse-mode derivative, as jax.vjp.

    Args:
        fun: a function of arrays (pytrees).
        *primals: its arguments.
        has_aux: `fun` returns `(output, aux)`.
    Returns:
        `(fun(*primals), vjp_fn)` (and `aux` when has_aux); `vjp_fn(cotangent)` returns a
        tuple with one cotangent per primal (float0 zeros for integer primals).
    """
    fwd = compiled_derivative(
        fun, ("vjp", has_aux), lambda f: lambda *p: _vjp(f, p, has_aux, "purejit.vjp")
    )
    if fwd is not None:
        return _jitted_vjp(fwd, primals)
    return _vjp(fun, primals, has_aux, "purejit.vjp")


def _vjp(fun, primals, has_aux, transform):
    """`vjp`, naming `transform` (the API the user called) in errors."""
    tr, p_leaves, p_tree, outs, lin = _linearize(fun, primals, has_aux, "vjp", transform)
    outs, aux = tr.split(outs)
    out_avals = [aval_of(o) for o in outs]
    in_avals = [aval_of(x) for x in p_leaves]
    pullback = _Pullback(lin, tr.out_tree, p_tree, out_avals, [tangent_aval(a) for a in in_avals])
    # as JAX's: a pytree (its leaves are the residuals), so it can leave and enter a jit
    vjp_fn = Partial(pullback, list(lin.residuals))
    out = tree_unflatten(tr.out_tree, outs)
    if has_aux:
        return out, vjp_fn, tree_unflatten(tr.aux_tree, aux)
    return out, vjp_fn


class _Pullback:
    """The static part of a vjp function: the linear program and the trees around it.
    Called with the residuals (the pytree part) and a cotangent of the output."""

    def __init__(self, lin, out_tree, p_tree, out_avals, in_avals):
        self.lin, self.out_tree, self.p_tree = lin, out_tree, p_tree
        self.out_avals, self.in_avals = out_avals, in_avals
        self.compiled = None  # its jitted form, made by the first `vjp(jit(f))` that runs it

    def __call__(self, residuals, ct):
        lin = self.lin
        residuals = list(residuals)
        if len(residuals) != len(lin.residuals) or any(
            a is not b for a, b in zip(residuals, lin.residuals)
        ):  # the residuals came back through a jit (fwd_and_bwd): the same program on them
            lin = copy.copy(lin)
            lin.residuals = residuals
        n, out_avals, in_avals = len(self.out_avals), self.out_avals, self.in_avals
        ct_leaves, ct_tree = tree_flatten(ct)
        check_cotangent("vjp", ct_leaves, out_avals, self.out_tree, ct_tree)
        cts = []
        for c, a in zip(ct_leaves, out_avals):
            ta = tangent_aval(a)
            if ta.dtype == float0:
                cts.append(Zero(ta))
            else:
                c = as_leaf(c, "vjp")
                if c.dtype != ta.dtype:
                    c = jnp.asarray(c, dtype=ta.dtype)
                cts.append(c)
        cts += [Zero(a) for a in lin.out_avals[n:]]
        got = lin.transpose(cts)[: len(in_avals)]
        leaves = [_materialize(g, a) for g, a in zip(got, in_avals)]
        # as JAX: the cotangent of a weakly typed input is weakly typed
        leaves = [
            jnp.convert(g, a.dtype, weak=True) if a.weak_type and a.dtype != float0 else g
            for g, a in zip(leaves, in_avals)
        ]
        return tree_unflatten(self.p_tree, leaves)


def argnums_partial(fun, nums, args, kwargs=None):
    """`fun` of the positional arguments at `nums` (the other arguments and `kwargs` held
    fixed), and those arguments (JAX's `api_util.argnums_partial`)."""
    kwargs = kwargs or {}

    def f(*dyn):
        full = list(args)
        for i, v in zip(nums, dyn):
            full[i] = v
        return fun(*full, **kwargs)

    return f, tuple(args[i] for i in nums)


def value_and_grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Sequence = (),
) -> Callable:
    """A function returning `(fun(*args), gradient)`, as jax.value_and_grad.

    Args:
        fun: a function returning a scalar (or `(scalar, aux)` with has_aux).
        argnums: the positional argument(s) to differentiate with respect to; a sequence
            gives a tuple of gradients.
        has_aux: `fun` returns `(value, aux)`; the result is then `((value, aux), grad)`.
        holomorphic: `fun` is holomorphic (complex inputs and output).
        allow_int: allow integer inputs (their gradients are float0 zeros).
    Returns:
        The function.
    """
    return _value_and_grad(
        fun, argnums, has_aux, holomorphic, allow_int, reduce_axes, "value_and_grad"
    )


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes, api):
    if reduce_axes:
        raise NotImplementedError(f"{api}: reduce_axes is not supported (as in JAX)")

    @errors.api_boundary
    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = argnums if isinstance(argnums, int) else tuple(argnums)
        key = ("value_and_grad", nums, has_aux, holomorphic, allow_int, api)
        make = functools.partial(
            _value_and_grad,
            argnums=nums,
            has_aux=has_aux,
            holomorphic=holomorphic,
            allow_int=allow_int,
            reduce_axes=(),
            api=api,
        )
        unit = compiled_derivative(fun, key, make)
        if unit is not None:  # grad(jit(f)): value and gradient as one compiled program
            return unit(*args, **kwargs)
        positions = canonical_argnums(argnums, len(args), api)
        f_partial, dyn = argnums_partial(fun, positions, args, kwargs)
        dyn_leaves = [as_leaf(x, api) for x in tree_flatten(dyn)[0]]
        check_input_dtypes(api, dyn_leaves, holomorphic, allow_int)
        got = _vjp(f_partial, dyn, has_aux, f"purejit.{api}")
        ans, vjp_fn = got[0], got[1]
        aux = got[2] if has_aux else None
        leaf = check_scalar_output(api, ans, holomorphic)
        one = jnp.ones((), aval_of(leaf).dtype)
        g = vjp_fn(tree_unflatten(tree_structure(ans), [one]))
        g = g[0] if isinstance(argnums, int) else g
        return ((ans, aux), g) if has_aux else (ans, g)

    return value_and_grad_f


def grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
    reduce_axes: Sequence = (),
) -> Callable:
    """The gradient of a scalar function, as jax.grad (see `value_and_grad` for the options).

    Returns:
        A function with `fun`'s arguments returning the gradient (with has_aux, the pair
        `(gradient, aux)`).
    """
    vg = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes, "grad")

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_f


# ---- a jitted function differentiated outside jit runs compiled, as a unit -------------------


def compiled_derivative(fun, key, make) -> Jitted | None:
    """For `fun` a jitted function called outside any staging trace: its derivative
    `jit(make(fun.fun))`, cached with it (see `Jitted.derived`); else None (run op by op)."""
    if not isinstance(fun, Jitted) or not eager.is_eager():
        return None
    return fun.derived(key, make)


def _jitted_vjp(fwd: Jitted, primals):
    """`vjp(jit(f))` as JAX runs it: the compiled forward pass `fwd` returns the outputs and
    the residuals, and `vjp_fn`'s backward pass is a second compiled program."""
    got = fwd(*primals)
    f_vjp = got[1]
    pullback = f_vjp.func
    compiled = pullback.compiled
    if compiled is None:
        compiled = pullback.compiled = _CompiledPullback(jit(pullback))
    return (got[0], Partial(compiled, *f_vjp.args), *got[2:])


class _CompiledPullback:
    """A `_Pullback` run as one jitted program (its residuals and cotangent as arguments)."""

    def __init__(self, jitted):
        self.jitted = jitted

    def __call__(self, residuals, ct):
        return self.jitted(residuals, ct)


def fwd_and_bwd(
    fun: Callable, argnums: int | Sequence[int], has_aux: bool = False, jitted: bool = True
) -> tuple[Callable, Callable]:
    """The forward and backward passes of `fun` as two functions, as jax.fwd_and_bwd.

    `fwd(*args)` returns `(fun(*args), residuals)` (and `aux` with has_aux), as `vjp` of
    `fun` in the arguments `argnums` (the others are held fixed); `bwd(residuals, ct)`
    returns the cotangents of those arguments (one, not a tuple, for an int `argnums`).
    The residuals are a pytree of arrays, so with `jitted=True` (the default) both are
    jitted functions that compile once and are reused across calls.

    Args:
        fun: the function.
        argnums: the positional argument(s) to differentiate with respect to.
        has_aux: `fun` returns `(output, aux)`; aux is returned by `fwd`, undifferentiated.
        jitted: return `jit(fwd)` and `jit(bwd)`.
    Returns:
        `(fwd, bwd)`.
    """
    if not callable(fun):
        raise TypeError(f"fwd_and_bwd: expected a callable, got {type(fun).__name__}")
    if not isinstance(argnums, int):
        argnums = tuple(operator.index(a) for a in argnums)
    else:
        argnums = operator.index(argnums)

    def fwd(*args, **kwargs):
        nums = canonical_argnums(argnums, len(args), "fwd_and_bwd")
        f_partial, dyn = argnums_partial(fun, nums, args, kwargs)
        return vjp(f_partial, *dyn, has_aux=has_aux)

    def bwd(f_vjp, outgrad):
        g = f_vjp(outgrad)
        return g[0] if isinstance(argnums, int) else g

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd


def linear_transpose(fun: Callable, *primals, reduce_axes=()) -> Callable:
    """The transpose of the linear function `fun`, as jax.linear_transpose.

    Args:
        fun: a linear function.
        *primals: example arguments (arrays or anything with shape and dtype) fixing the
            input structure, shapes and dtypes.
    Returns:
        `f_t(cotangent)` returning a tuple with one cotangent per primal.
    """
    p_leaves, p_tree = tree_flatten(tuple(primals))
    avals = [ShapedArray(tuple(np.shape(x)), pdt.canonicalize(np.dtype(x.dtype))) for x in p_leaves]
    for a in avals:
        if not pdt.is_inexact(a.dtype):
            raise TypeError(
                "linear_transpose only supports [float or complex] -> [float or complex] "
                f"functions, but got an input of dtype {a.dtype}"
            )

    def transposed(*cts):
        ct = cts[0] if len(cts) == 1 else cts
        zeros = [jnp.zeros(a.shape, a.dtype) for a in avals]
        _, vjp_fn = vjp(fun, *tree_unflatten(p_tree, zeros))
        return vjp_fn(ct)

    return transposed


__all__ = [
    "float0",
    "fwd_and_bwd",
    "grad",
    "jvp",
    "linear_transpose",
    "linearize",
    "value_and_grad",
    "vjp",
]
