"""`check_grads`, as jax.test_util.check_grads: derivatives checked against finite
differences (forward mode) and against each other (reverse mode: <vjp(u), v> = <u, jvp(v)>),
recursively up to `order`."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from purejit import numpy as jnp
from purejit.autodiff import jvp, vjp
from purejit.tree_util import tree_flatten, tree_map, tree_unflatten

_EPS = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-2, np.dtype(np.float64): 1e-5}
_TOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 2e-2, np.dtype(np.float64): 1e-5}


def _rand_like(x, rng):
    x = np.asarray(x)
    v = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        v = v + 1j * rng.standard_normal(x.shape)
    return v.astype(x.dtype)


def _conj(x):
    x = np.asarray(x)
    return np.conj(x) if x.dtype.kind == "c" else x


def _inner(xs, ys) -> float:
    total = 0.0
    for x, y in zip(tree_flatten(xs)[0], tree_flatten(ys)[0]):
        total += np.real(np.vdot(np.asarray(y).ravel(), np.asarray(x).ravel()))
    return float(total)


def _close(a, b, atol, rtol, what):
    for x, y in zip(tree_flatten(a)[0], tree_flatten(b)[0]):
        x, y = np.asarray(x).astype(np.complex128), np.asarray(y).astype(np.complex128)
        if not np.allclose(x, y, atol=atol, rtol=rtol):
            raise AssertionError(
                f"check_grads: {what} differ:\n{x}\nvs\n{y}\n(atol={atol}, rtol={rtol})"
            )


def _tolerance(args, atol, rtol, eps):
    dts = [np.asarray(x).dtype for x in tree_flatten(args)[0]]
    worst = max((np.dtype(np.float32) if d.kind == "c" and d.itemsize == 8 else d for d in dts),
                key=lambda d: _TOL.get(d, 1e-2))  # fmt: skip
    return (
        _TOL.get(worst, 2e-2) if atol is None else atol,
        _TOL.get(worst, 2e-2) if rtol is None else rtol,
        _EPS.get(worst, 1e-2) if eps is None else eps,
    )


def check_jvp(f, args, atol=None, rtol=None, eps=None, rng=None):
    """jvp(f) against central finite differences along a random direction."""
    rng = rng or np.random.default_rng(0)
    atol, rtol, eps = _tolerance(args, atol, rtol, eps)
    v = tree_map(lambda x: _rand_like(x, rng), args)
    _, t = jvp(f, tuple(args), tuple(v))
    plus = f(*tree_map(lambda x, d: np.asarray(x) + eps * d, args, v))
    minus = f(*tree_map(lambda x, d: np.asarray(x) - eps * d, args, v))
    fd = tree_map(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * eps), plus, minus)
    _close(t, fd, atol, rtol, "jvp and finite differences")


def check_vjp(f, args, atol=None, rtol=None, eps=None, rng=None):
    """<vjp(u), v> against <u, jvp(v)> for random u, v (as JAX: conj(vjp(conj(u))) for
    complex values, since a vjp is the transpose, not the adjoint, of the jvp)."""
    rng = rng or np.random.default_rng(1)
    atol, rtol, _ = _tolerance(args, atol, rtol, eps)
    v = tree_map(lambda x: _rand_like(x, rng), args)
    out, t = jvp(f, tuple(args), tuple(v))
    u = tree_map(lambda o: _rand_like(o, rng), out)
    _, vjp_fn = vjp(f, *args)
    ct = tree_map(_conj, vjp_fn(tree_map(_conj, u)))
    lhs, rhs = _inner(ct, v), _inner(u, t)
    _close(lhs, rhs, atol, rtol * max(1.0, abs(rhs)), "<vjp(u), v> and <u, jvp(v)>")


def check_grads(
    f: Callable,
    args: Sequence,
    order: int,
    modes: Sequence[str] = ("fwd", "rev"),
    atol=None,
    rtol=None,
    eps=None,
):
    """Check `f`'s derivatives at `args` up to `order`, as jax.test_util.check_grads.

    Args:
        f: the function.
        args: a tuple of arguments (pytrees of float arrays).
        order: the highest derivative order checked.
        modes: "fwd" (jvp against finite differences) and/or "rev" (vjp against jvp).
        atol, rtol, eps: tolerances and finite-difference step (defaults by dtype).
    Raises:
        AssertionError: naming which check failed and the two sides.
    """
    args = tuple(args)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {mode!r}")

    def rec(f, args, order):
        if "fwd" in modes:
            check_jvp(f, args, atol, rtol, eps)
            if order > 1:
                v = tuple(tree_map(lambda x: _rand_like(x, np.random.default_rng(2)), a)
                          for a in args)  # fmt: skip

                def f_jvp(*primals):
                    return jvp(f, primals, v)[1]

                rec(f_jvp, args, order - 1)
        if "rev" in modes:
            check_vjp(f, args, atol, rtol, eps)
            if order > 1:
                out = f(*args)
                u = tree_map(lambda o: _rand_like(o, np.random.default_rng(3)), out)

                def f_vjp(*primals):
                    return vjp(f, *primals)[1](u)

                rec(f_vjp, args, order - 1)

    rec(f, args, order)


__all__ = ["check_grads", "check_jvp", "check_vjp", "jnp", "tree_unflatten"]
