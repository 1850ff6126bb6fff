"""purejit.scipy.optimize: `minimize` by BFGS (or JAX's experimental L-BFGS,
purejit/scipy/_lbfgs.py) and its `OptimizeResults`, as
`jax.scipy.optimize` (Nocedal & Wright, 'Numerical Optimization', algorithm 6.1, with the
strong-Wolfe line search of `purejit.scipy._line_search`).

BFGS keeps a dense inverse Hessian H: each step goes along -H g, then updates
H <- (I - rho s y^T) H (I - rho s y^T)^T + rho s s^T with s the step, y the change of gradient
and rho = 1 / (y . s), skipped where rho is not finite. Products are JAX's, in JAX's order and
at HIGHEST precision, so the iterates equal jax.scipy.optimize.minimize's bit for bit on CPU.
The whole run is one `lax.while_loop`, so `minimize` works under `jit` and `vmap`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from purejit import lax
from purejit import numpy as jnp
from purejit.autodiff import value_and_grad
from purejit.scipy._lbfgs import minimize_lbfgs
from purejit.scipy._line_search import line_search


class OptimizeResults(NamedTuple):
    """The result of `minimize`, as jax.scipy.optimize.OptimizeResults.

    x: the final point; success: converged and the line search did not fail; status: 0
    converged, 1 the maximum number of BFGS iterations, 3 zoom failed, 4 saddle point, 5 the
    maximum number of line-search iterations, -1 undefined; fun, jac: the objective and its
    gradient at x; hess_inv: the final inverse-Hessian estimate; nfev, njev: objective and
    gradient evaluations; nit: BFGS iterations.
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _dot(a, b):
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def _bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    x0 = jnp.asarray(x0)
    if maxiter is None:
        maxiter = np.size(x0) * 200
    d = x0.shape[0]
    f_0, g_0 = value_and_grad(fun)(x0)
    state = {
        "converged": jnp.linalg.norm(g_0, ord=norm) < gtol,
        "failed": jnp.asarray(False),
        "k": jnp.asarray(0),
        "nfev": jnp.asarray(1),
        "ngev": jnp.asarray(1),
        "x_k": x0,
        "f_k": f_0,
        "g_k": g_0,
        "H_k": jnp.eye(d, dtype=x0.dtype),
        "old_old_fval": f_0 + jnp.linalg.norm(g_0) / 2,
        "line_search_status": jnp.asarray(0),
    }

    def cond(s):
        return jnp.logical_not(s["converged"]) & jnp.logical_not(s["failed"]) & (s["k"] < maxiter)

    def body(s):
        p_k = -_dot(s["H_k"], s["g_k"])
        ls = line_search(fun, s["x_k"], p_k, old_fval=s["f_k"], old_old_fval=s["old_old_fval"],
                         gfk=s["g_k"], maxiter=line_search_maxiter)  # fmt: skip
        s_k = ls.a_k * p_k
        x_kp1 = s["x_k"] + s_k
        y_k = ls.g_k - s["g_k"]
        rho_k = jnp.reciprocal(_dot(y_k, s_k))
        sy_k = s_k[:, np.newaxis] * y_k[np.newaxis, :]
        w = jnp.eye(d, dtype=rho_k.dtype) - rho_k * sy_k
        H = jnp.einsum("ij,jk,lk", w, s["H_k"], w, precision=lax.Precision.HIGHEST)
        H_kp1 = H + rho_k * s_k[:, np.newaxis] * s_k[np.newaxis, :]
        H_kp1 = jnp.where(jnp.isfinite(rho_k), H_kp1, s["H_k"])
        return {
            "converged": jnp.linalg.norm(ls.g_k, ord=norm) < gtol,
            "failed": ls.failed,
            "k": s["k"] + 1,
            "nfev": s["nfev"] + ls.nfev,
            "ngev": s["ngev"] + ls.ngev,
            "x_k": x_kp1,
            "f_k": ls.f_k,
            "g_k": ls.g_k,
            "H_k": H_kp1,
            "old_old_fval": s["f_k"],
            "line_search_status": ls.status,
        }

    s = lax.while_loop(cond, body, state)
    status = jnp.where(
        s["converged"],
        0,
        jnp.where(s["k"] == maxiter, 1, jnp.where(s["failed"], 2 + s["line_search_status"], -1)),
    )
    return s, status


def minimize(
    fun: Callable,
    x0,
    args: tuple = (),
    *,
    method: str,
    tol: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> OptimizeResults:
    """Minimise the scalar `fun(x, *args)` over a 1-d `x` from `x0`, as
    jax.scipy.optimize.minimize. `method` is "BFGS" (`options`: maxiter, norm, gtol,
    line_search_maxiter) or JAX's "l-bfgs-experimental-do-not-rely-on-this" (`options`:
    maxiter, norm, maxcor, ftol, gtol, maxfun, maxgrad, maxls; no hess_inv). As in JAX, `tol`
    is accepted and not used (the methods stop on options['gtol'])."""
    options = {} if options is None else dict(options)
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")
    known = {"maxiter", "norm", "gtol", "line_search_maxiter"}
    if method.lower() == "l-bfgs-experimental-do-not-rely-on-this":
        known = {"maxiter", "norm", "maxcor", "ftol", "gtol", "maxfun", "maxgrad", "maxls"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"minimize(method={method!r}): unexpected options {unknown}")

    def fun_with_args(x):
        return fun(x, *args)

    if method.lower() == "bfgs":
        s, status = _bfgs(fun_with_args, x0, **options)
        return OptimizeResults(
            x=s["x_k"],
            success=s["converged"] & jnp.logical_not(s["failed"]),
            status=status,
            fun=s["f_k"],
            jac=s["g_k"],
            hess_inv=s["H_k"],
            nfev=s["nfev"],
            njev=s["ngev"],
            nit=s["k"],
        )
    if method.lower() == "l-bfgs-experimental-do-not-rely-on-this":
        s = minimize_lbfgs(fun_with_args, x0, **options)
        return OptimizeResults(
            x=s["x_k"],
            success=s["converged"] & jnp.logical_not(s["failed"]),
            status=s["status"],
            fun=s["f_k"],
            jac=s["g_k"],
            hess_inv=None,
            nfev=s["nfev"],
            njev=s["ngev"],
            nit=s["k"],
        )
    raise ValueError(f"Method {method} not recognized")


__all__ = ["OptimizeResults", "minimize"]
