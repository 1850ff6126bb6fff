"""Jacobians and Hessians built on `vmap`, as JAX builds them: `jacfwd`, `jacrev`,
`jacobian`, `hessian`.

    jacfwd(f)(x)    one JVP per input direction, batched: vmap of jvp over the standard
                    basis of the inputs (cheap for few inputs and many outputs);
    jacrev(f)(x)    one VJP per output direction, batched: vmap of the pullback over the
                    standard basis of the outputs (cheap for many inputs and few outputs);
    hessian(f)(x)   jacfwd(jacrev(f)).

The standard basis is made of iotas inside the program, so the traced program's size does
not grow with the number of inputs or outputs: only its shapes do. This module sits at the
top of purejit (beside `autodiff`, whose `jvp` and `vjp` it batches).
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from purejit import errors
from purejit import lax
from purejit.api import Jitted
from purejit.autodiff import argnums_partial, compiled_derivative, jvp, linearize, vjp
from purejit.ir import dtypes as irdt
from purejit.tracing import aval_of
from purejit.transforms.autodiff import eager
from purejit.transforms.vmap import vmap
from purejit.tree_util import tree_flatten, tree_unflatten


def _argnums(argnums, nargs: int, api: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not isinstance(i, (int, np.integer)) or not -nargs <= i < nargs:
            raise ValueError(
                f"{api}: argnums={argnums} out of range for a function called with {nargs} "
                f"positional arguments{errors.at(errors.user_location())}"
            )
    return tuple(int(i) % nargs for i in nums)


def _check(api: str, what: str, leaves, holomorphic: bool, direct: str):
    for x in leaves:
        dt = np.dtype(aval_of(x).dtype)
        if holomorphic and not irdt.is_complex(dt):
            raise TypeError(
                f"{api} with holomorphic=True requires {what}s with complex dtype, but got "
                f"{dt.name}{errors.at(errors.user_location())}."
            )
        if not holomorphic and not irdt.is_float(dt):
            raise TypeError(
                f"{api} requires real-valued {what}s ({what} dtype that is a sub-dtype of "
                f"np.floating), but got {dt.name}{errors.at(errors.user_location())}. For "
                "holomorphic differentiation, pass holomorphic=True. For differentiation of "
                f"non-holomorphic functions involving complex {what}s, use purejit.{direct} "
                "directly."
            )


def std_basis(leaves) -> list:
    """The standard basis of the flattened `leaves`: one array per leaf, shaped
    `(N, *leaf.shape)` with N the total element count, built from iotas (not constants)."""
    avals = [aval_of(x) for x in leaves]
    sizes = [int(np.prod(a.shape, dtype=np.int64)) for a in avals]
    n, start, out = sum(sizes), 0, []
    for a, size in zip(avals, sizes):
        rows = lax.broadcasted_iota(np.int32, (n, size), 0)
        cols = lax.broadcasted_iota(np.int32, (n, size), 1)
        if start:
            cols = lax.add(cols, lax.full((n, size), start, np.int32))
        hot = lax.convert_element_type(lax.eq(rows, cols), a.dtype)
        out.append(lax.reshape(hot, (n, *a.shape)))
        start += size
    return out


def _pieces(jac, leaves, axis: int) -> list:
    """`jac`'s dimension `axis` (one entry per element of `leaves`, flattened in order)
    split per leaf and unflattened into the leaf's shape."""
    shape = aval_of(jac).shape
    out, start = [], 0
    for x in leaves:
        s = aval_of(x).shape
        size = int(np.prod(s, dtype=np.int64))
        lo = [0] * len(shape)
        hi = list(shape)
        lo[axis], hi[axis] = start, start + size
        piece = lax.slice(jac, lo, hi)
        out.append(lax.reshape(piece, (*shape[:axis], *s, *shape[axis + 1 :])))
        start += size
    return out


def _key(argnums):
    return argnums if isinstance(argnums, int) else tuple(argnums)


def _nest(per_in_leaves, in_tree, argnums):
    """A result for one output leaf: the differentiated arguments' structure."""
    tree = tree_unflatten(in_tree, per_in_leaves)
    return tree[0] if isinstance(argnums, int) else tuple(tree)


def jacfwd(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:
    """The Jacobian of `fun` by forward mode (`jax.jacfwd`): vmap of `jvp` over the standard
    basis of the differentiated inputs.

    Args:
        fun: a function of arrays (pytrees) returning arrays (a pytree).
        argnums: the positional argument (or tuple of them) to differentiate with respect to.
        has_aux: `fun` returns `(out, aux)`; aux is returned as it is.
        holomorphic: `fun` is holomorphic (complex inputs and outputs).
    Returns:
        `jac(*args, **kwargs)`: a pytree shaped like the output whose leaves are shaped like
        the differentiated arguments (a tuple of them for a tuple `argnums`), each leaf
        `out_leaf.shape + in_leaf.shape`; with has_aux, `(jac, aux)`.
    """

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        key = ("jacfwd", _key(argnums), has_aux, holomorphic)
        unit = compiled_derivative(fun, key, lambda f: jacfwd(f, argnums, has_aux, holomorphic))
        if unit is not None:  # jacfwd(jit(f)): one compiled program
            return unit(*args, **kwargs)
        nums = _argnums(argnums, len(args), "jacfwd")
        f, dyn = argnums_partial(fun, nums, args, kwargs)
        leaves, in_tree = tree_flatten(tuple(dyn))
        _check("jacfwd", "input", leaves, holomorphic, "jvp")

        if eager.is_eager():
            # on concrete values (Python control flow on them works): one forward pass,
            # then its linear map batched over the basis
            y, f_jvp, *aux = linearize(f, *dyn, has_aux=has_aux)

            def push_lin(*basis):
                return f_jvp(*tree_unflatten(in_tree, list(basis)))

            got = (y, vmap(push_lin, out_axes=-1)(*std_basis(leaves)), *aux)
        else:

            def push(*basis):
                tangents = tree_unflatten(in_tree, list(basis))
                return jvp(f, tuple(dyn), tangents, has_aux=has_aux)

            out_axes = (None, -1, None) if has_aux else (None, -1)
            got = vmap(push, out_axes=out_axes)(*std_basis(leaves))
        y, tangents = got[0], got[1]
        y_leaves, y_tree = tree_flatten(y)
        if not holomorphic:
            _check("jacfwd", "output", y_leaves, False, "jvp")
        t_leaves = tree_flatten(tangents)[0]
        jac = [_nest(_pieces(t, leaves, aval_of(t).ndim - 1), in_tree, argnums) for t in t_leaves]
        jac = tree_unflatten(y_tree, jac)
        return (jac, got[2]) if has_aux else jac

    return jacfun


def jacrev(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable:
    """The Jacobian of `fun` by reverse mode (`jax.jacrev`): vmap of the `vjp` pullback over
    the standard basis of the outputs. Arguments and result as `jacfwd`'s; `allow_int`
    allows integer inputs (their Jacobian is float0, as JAX's)."""

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        key = ("jacrev", _key(argnums), has_aux, holomorphic, allow_int)
        unit = compiled_derivative(
            fun, key, lambda f: jacrev(f, argnums, has_aux, holomorphic, allow_int)
        )
        if unit is not None:  # jacrev(jit(f)): one compiled program
            return unit(*args, **kwargs)
        nums = _argnums(argnums, len(args), "jacrev")
        f, dyn = argnums_partial(fun, nums, args, kwargs)
        leaves, in_tree = tree_flatten(tuple(dyn))
        if not allow_int:
            _check("jacrev", "input", leaves, holomorphic, "vjp")
        got = vjp(f, *dyn, has_aux=has_aux)
        y, pullback = got[0], got[1]
        y_leaves, y_tree = tree_flatten(y)
        _check("jacrev", "output", y_leaves, holomorphic, "vjp")

        def pull(*basis):
            return pullback(tree_unflatten(y_tree, list(basis)))

        cts = vmap(pull)(*std_basis(y_leaves))  # per input leaf: (M, *in_shape)
        ct_leaves = tree_flatten(cts)[0]
        per_in = [_pieces(c, y_leaves, 0) for c in ct_leaves]  # [in][out]
        jac = [_nest([p[k] for p in per_in], in_tree, argnums) for k in range(len(y_leaves))]
        jac = tree_unflatten(y_tree, jac)
        return (jac, got[2]) if has_aux else jac

    return jacfun


jacobian = jacrev


def hessian(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:
    """The Hessian of a scalar-valued `fun` (`jax.hessian`): `jacfwd(jacrev(fun))`."""
    if isinstance(fun, Jitted):  # hessian(jit(f)): one compiled program where it can be
        inner_fun = hessian(fun.fun, argnums, has_aux, holomorphic)
        key = ("hessian", _key(argnums), has_aux, holomorphic)

        @functools.wraps(fun)
        def hess(*args, **kwargs):
            unit = compiled_derivative(
                fun, key, lambda f: hessian(f, argnums, has_aux, holomorphic)
            )
            return (inner_fun if unit is None else unit)(*args, **kwargs)

        return hess
    inner = jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic)
    if not has_aux:
        return jacfwd(inner, argnums, holomorphic=holomorphic)
    return jacfwd(inner, argnums, has_aux=True, holomorphic=holomorphic)


__all__ = ["hessian", "jacfwd", "jacobian", "jacrev", "std_basis"]
