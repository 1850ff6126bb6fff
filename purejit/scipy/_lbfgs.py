"""L-BFGS of `jax.scipy.optimize.minimize(method="l-bfgs-experimental-do-not-rely-on-this")`
(Nocedal & Wright, algorithm 7.5, generalised to complex variables after Sorber et al.
2012), as JAX computes it: the two-loop recursion over the last `maxcor` steps, scaled by
gamma = (y . s) / (y* . y), then the strong-Wolfe line search from a unit step. JAX's
expression order throughout, so its iterates are JAX's bit for bit on CPU."""

from __future__ import annotations

import numpy as np

from purejit import lax
from purejit import numpy as jnp
from purejit.autodiff import value_and_grad
from purejit.scipy._line_search import line_search


def _dot(a, b):
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def _two_loop_recursion(s: dict):
    dtype = s["rho_history"].dtype
    his_size = len(s["rho_history"])
    curr_size = jnp.where(s["k"] < his_size, s["k"], his_size)
    q = -jnp.conj(s["g_k"])
    a_his = jnp.zeros_like(s["rho_history"])

    def first(j, carry):
        i = his_size - 1 - j
        q_, a_ = carry
        a_i = s["rho_history"][i] * _dot(jnp.conj(s["s_history"][i]), q_).real.astype(dtype)
        return q_ - a_i * jnp.conj(s["y_history"][i]), a_.at[i].set(a_i)

    q, a_his = lax.fori_loop(0, curr_size, first, (q, a_his))
    q = s["gamma"] * q

    def second(j, q_):
        i = his_size - curr_size + j
        b_i = s["rho_history"][i] * _dot(s["y_history"][i], q_).real.astype(dtype)
        return q_ + (a_his[i] - b_i) * s["s_history"][i]

    return lax.fori_loop(0, curr_size, second, q)


def _push(history, new):
    """The history with its oldest row dropped and `new` appended (JAX's roll then set)."""
    return jnp.roll(history, -1, axis=0).at[-1].set(new)


def minimize_lbfgs(fun, x0, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09,
                   gtol=1e-05, maxfun=None, maxgrad=None, maxls=20):  # fmt: skip
    """JAX's `_minimize_lbfgs`: the final state as a dict (x_k, f_k, g_k, converged, failed,
    status, k, nfev, ngev, ...)."""
    x0 = jnp.asarray(x0)
    d = len(x0)
    dtype = x0.dtype
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = d * 200
    maxiter = np.inf if maxiter is None else maxiter
    maxfun = np.inf if maxfun is None else maxfun
    maxgrad = np.inf if maxgrad is None else maxgrad
    f_0, g_0 = value_and_grad(fun)(x0)
    state = {
        "converged": jnp.array(False, dtype=bool),
        "failed": jnp.array(False, dtype=bool),
        "k": jnp.asarray(0),
        "nfev": jnp.asarray(1),
        "ngev": jnp.asarray(1),
        "x_k": x0,
        "f_k": f_0,
        "g_k": g_0,
        "s_history": jnp.zeros((maxcor, d), dtype=dtype),
        "y_history": jnp.zeros((maxcor, d), dtype=dtype),
        "rho_history": jnp.zeros((maxcor,), dtype=dtype),
        "gamma": jnp.asarray(1.0, g_0.dtype),
        "status": jnp.asarray(0),
        "ls_status": jnp.asarray(0),
    }

    def cond(s):
        return (~s["converged"]) & (~s["failed"])

    def body(s):
        p_k = _two_loop_recursion(s)
        ls = line_search(f=fun, xk=s["x_k"], pk=p_k, old_fval=s["f_k"], gfk=s["g_k"],
                         maxiter=maxls)  # fmt: skip
        s_k = jnp.asarray(ls.a_k).astype(p_k.dtype) * p_k
        x_kp1 = s["x_k"] + s_k
        y_k = ls.g_k - s["g_k"]
        rho_k_inv = jnp.real(_dot(y_k, s_k))
        rho_k = jnp.reciprocal(rho_k_inv).astype(y_k.dtype)
        gamma = rho_k_inv / jnp.real(_dot(jnp.conj(y_k), y_k))
        status = jnp.array(0)
        status = jnp.where(s["f_k"] - ls.f_k < ftol, 4, status)
        status = jnp.where(s["ngev"] >= maxgrad, 3, status)
        status = jnp.where(s["nfev"] >= maxfun, 2, status)
        status = jnp.where(s["k"] >= maxiter, 1, status)
        status = jnp.where(ls.failed, 5, status)
        converged = jnp.linalg.norm(ls.g_k, ord=norm) < gtol
        return {
            "converged": converged,
            "failed": (status > 0) & (~converged),
            "k": s["k"] + 1,
            "nfev": s["nfev"] + ls.nfev,
            "ngev": s["ngev"] + ls.ngev,
            "x_k": x_kp1.astype(s["x_k"].dtype),
            "f_k": ls.f_k.astype(s["f_k"].dtype),
            "g_k": ls.g_k.astype(s["g_k"].dtype),
            "s_history": _push(s["s_history"], s_k),
            "y_history": _push(s["y_history"], y_k),
            "rho_history": _push(s["rho_history"], rho_k),
            "gamma": gamma.astype(s["g_k"].dtype),
            "status": jnp.where(converged, 0, status),
            "ls_status": ls.status,
        }

    return lax.while_loop(cond, body, state)
