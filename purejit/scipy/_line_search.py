"""The strong-Wolfe line search of `jax.scipy.optimize` (Nocedal & Wright, 'Numerical
Optimization', algorithms 3.5 and 3.6, as JAX implements them): bracket from a start step
that grows by 2, then zoom by cubic, quadratic or bisection steps. Every product and
comparison follows JAX's expression order, so a BFGS run takes JAX's steps bit for bit.

JAX's constants: c1 = 1e-4, c2 = 0.9; zoom's safeguards delta1 = 0.2 (cubic) and
delta2 = 0.1 (quadratic); zoom fails after 30 steps or when its bracket shrinks below 1e-5
(1e-10 in float64); a step below 1e-8 is raised to 1e-8 outside float64.
"""

from __future__ import annotations

from typing import NamedTuple


from purejit import lax
from purejit import numpy as jnp
from purejit.autodiff import value_and_grad


def _dot(a, b):
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimiser of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
    dtype = jnp.result_type(a, fa, fpa, b, fb, c, fc)
    C = fpa
    db = b - a
    dc = c - a
    denom = (db * dc) ** 2 * (db - dc)
    d1 = jnp.array([[dc**2, -(db**2)], [-(dc**3), db**3]], dtype=dtype)
    d2 = jnp.array([fb - fa - C * db, fc - fa - C * dc], dtype=dtype)
    A, B = _dot(d1, d2) / denom
    radical = B * B - 3.0 * A * C
    return a + (-B + jnp.sqrt(radical)) / (3.0 * A)


def _quadmin(a, fa, fpa, b, fb):
    """The minimiser of the parabola through (a, fa) with slope fpa and (b, fb)."""
    D = fa
    C = fpa
    db = b - a
    B = (fb - D - C * db) / (db**2)
    return a - C / (2.0 * B)


def _replace(state: dict, bit, new: dict) -> dict:
    """`state` with each key of `new` taken from `new` where `bit` holds."""
    out = dict(state)
    for k, v in new.items():
        out[k] = jnp.where(bit, v, state[k])
    return out


def _zoom(phi_dphi_g, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, dphi_hi, g_0,
          pass_through):  # fmt: skip
    """Algorithm 3.6: shrink [a_lo, a_hi] to a step that meets both Wolfe conditions."""
    dt = jnp.asarray(phi_lo).dtype
    state = {
        "done": jnp.asarray(False),
        "failed": jnp.asarray(False),
        "j": jnp.asarray(0),
        "a_lo": a_lo,
        "phi_lo": phi_lo,
        "dphi_lo": dphi_lo,
        "a_hi": a_hi,
        "phi_hi": phi_hi,
        "dphi_hi": dphi_hi,
        "a_rec": (a_lo + a_hi) / 2.0,
        "phi_rec": (phi_lo + phi_hi) / 2.0,
        "a_star": jnp.asarray(1.0, dt),
        "phi_star": phi_lo,
        "dphi_star": dphi_lo,
        "g_star": g_0,
        "nfev": jnp.asarray(0),
        "ngev": jnp.asarray(0),
    }
    state = {k: jnp.asarray(v) for k, v in state.items()}
    delta1, delta2 = 0.2, 0.1

    def body(s):
        dalpha = s["a_hi"] - s["a_lo"]
        a = jnp.minimum(s["a_hi"], s["a_lo"])
        b = jnp.maximum(s["a_hi"], s["a_lo"])
        cchk = delta1 * dalpha
        qchk = delta2 * dalpha
        threshold = 1e-5 if jnp.finfo(dalpha.dtype).bits < 64 else 1e-10
        s = dict(s, failed=s["failed"] | (dalpha <= threshold))
        a_cubic = _cubicmin(s["a_lo"], s["phi_lo"], s["dphi_lo"], s["a_hi"], s["phi_hi"],
                            s["a_rec"], s["phi_rec"])  # fmt: skip
        use_cubic = (s["j"] > 0) & (a_cubic > a + cchk) & (a_cubic < b - cchk)
        a_quad = _quadmin(s["a_lo"], s["phi_lo"], s["dphi_lo"], s["a_hi"], s["phi_hi"])
        use_quad = (~use_cubic) & (a_quad > a + qchk) & (a_quad < b - qchk)
        a_bisect = (s["a_lo"] + s["a_hi"]) / 2.0
        use_bisect = (~use_cubic) & (~use_quad)
        a_j = jnp.where(use_cubic, a_cubic, s["a_rec"])
        a_j = jnp.where(use_quad, a_quad, a_j)
        a_j = jnp.where(use_bisect, a_bisect, a_j)
        phi_j, dphi_j, g_j = phi_dphi_g(a_j)
        phi_j = phi_j.astype(s["phi_lo"].dtype)
        dphi_j = dphi_j.astype(s["dphi_lo"].dtype)
        g_j = g_j.astype(s["g_star"].dtype)
        s = dict(s, nfev=s["nfev"] + 1, ngev=s["ngev"] + 1)
        hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= s["phi_lo"])
        star_to_j = wolfe_two(dphi_j) & (~hi_to_j)
        hi_to_lo = (dphi_j * (s["a_hi"] - s["a_lo"]) >= 0.0) & (~hi_to_j) & (~star_to_j)
        lo_to_j = (~hi_to_j) & (~star_to_j)
        new = {"a_hi": a_j, "phi_hi": phi_j, "dphi_hi": dphi_j}
        s = _replace(s, hi_to_j, dict(new, a_rec=s["a_hi"], phi_rec=s["phi_hi"]))
        s = dict(s, done=star_to_j | s["done"])
        new = {"a_star": a_j, "phi_star": phi_j, "dphi_star": dphi_j, "g_star": g_j}
        s = _replace(s, star_to_j, new)
        new = {"a_hi": s["a_lo"], "phi_hi": s["phi_lo"], "dphi_hi": s["dphi_lo"]}
        s = _replace(s, hi_to_lo, dict(new, a_rec=s["a_hi"], phi_rec=s["phi_hi"]))
        s = _replace(s, lo_to_j & ~hi_to_lo, {"a_rec": s["a_lo"], "phi_rec": s["phi_lo"]})
        s = _replace(s, lo_to_j, {"a_lo": a_j, "phi_lo": phi_j, "dphi_lo": dphi_j})
        s = dict(s, j=s["j"] + 1)
        return dict(s, failed=s["failed"] | (s["j"] >= 30))

    def cond(s):
        return (~s["done"]) & (~pass_through) & (~s["failed"])

    return lax.while_loop(cond, body, state)


class _LineSearchResults(NamedTuple):
    failed: object
    nit: object
    nfev: object
    ngev: object
    k: object
    a_k: object
    f_k: object
    g_k: object
    status: object


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20):  # fmt: skip
    """Algorithm 3.5: a step along the descent direction `pk` from `xk` that meets the strong
    Wolfe conditions (JAX's `line_search`)."""
    xk, pk = jnp.asarray(xk), jnp.asarray(pk)
    dt = jnp.result_type(xk, pk, jnp.float32)
    xk, pk = xk.astype(dt), pk.astype(dt)

    def phi_dphi_g(t):
        t = jnp.array(t, dtype=pk.dtype)
        phi, g = value_and_grad(f)(xk + t * pk)
        return phi, jnp.real(_dot(g, pk)), g

    if old_fval is None or gfk is None:
        phi_0, dphi_0, gfk = phi_dphi_g(0)
    else:
        phi_0 = old_fval
        dphi_0 = jnp.real(_dot(gfk, pk))
    if old_old_fval is not None:
        # JAX writes 1.01 * 2 * (...) / dphi_0: Python folds 1.01 * 2 first
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start_value = jnp.where(candidate > 1, 1.0, candidate)
    else:
        start_value = 1

    def wolfe_one(a_i, phi_i):
        return phi_i > phi_0 + c1 * a_i * dphi_0

    def wolfe_two(dphi_i):
        return jnp.abs(dphi_i) <= -c2 * dphi_0

    phi_0 = jnp.asarray(phi_0)
    fresh = 1 if (old_fval is None or gfk is None) else 0
    state = {
        "done": jnp.asarray(False),
        "failed": jnp.asarray(False),
        "i": jnp.asarray(1),
        "a_i1": jnp.asarray(0.0, phi_0.dtype),
        "phi_i1": phi_0,
        "dphi_i1": jnp.asarray(dphi_0),
        "nfev": jnp.asarray(fresh),
        "ngev": jnp.asarray(fresh),
        "a_star": jnp.asarray(0.0, phi_0.dtype),
        "phi_star": phi_0,
        "dphi_star": jnp.asarray(dphi_0),
        "g_star": jnp.asarray(gfk),
    }
    picked = ("a_star", "phi_star", "dphi_star", "g_star")

    def body(s):
        a_i = jnp.where(s["i"] == 1, start_value, s["a_i1"] * 2.0)
        phi_i, dphi_i, g_i = phi_dphi_g(a_i)
        s = dict(s, nfev=s["nfev"] + 1, ngev=s["ngev"] + 1)
        star_to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= s["phi_i1"]) & (s["i"] > 1))
        star_to_i = wolfe_two(dphi_i) & (~star_to_zoom1)
        star_to_zoom2 = (dphi_i >= 0.0) & (~star_to_zoom1) & (~star_to_i)
        zoom1 = _zoom(phi_dphi_g, wolfe_one, wolfe_two, s["a_i1"], s["phi_i1"], s["dphi_i1"],
                      a_i, phi_i, dphi_i, gfk, ~star_to_zoom1)  # fmt: skip
        s = dict(s, nfev=s["nfev"] + zoom1["nfev"], ngev=s["ngev"] + zoom1["ngev"])
        zoom2 = _zoom(phi_dphi_g, wolfe_one, wolfe_two, a_i, phi_i, dphi_i, s["a_i1"],
                      s["phi_i1"], s["dphi_i1"], gfk, ~star_to_zoom2)  # fmt: skip
        s = dict(s, nfev=s["nfev"] + zoom2["nfev"], ngev=s["ngev"] + zoom2["ngev"])
        failed = (star_to_zoom1 & zoom1["failed"]) | s["failed"]
        s = dict(s, done=star_to_zoom1 | s["done"], failed=failed)
        s = _replace(s, star_to_zoom1, {k: zoom1[k] for k in picked})
        s = dict(s, done=star_to_i | s["done"])
        new = {"a_star": a_i, "phi_star": phi_i, "dphi_star": dphi_i, "g_star": g_i}
        s = _replace(s, star_to_i, new)
        failed = (star_to_zoom2 & zoom2["failed"]) | s["failed"]
        s = dict(s, done=star_to_zoom2 | s["done"], failed=failed)
        s = _replace(s, star_to_zoom2, {k: zoom2[k] for k in picked})
        return dict(s, i=s["i"] + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

    def cond(s):
        return (~s["done"]) & (s["i"] <= maxiter) & (~s["failed"])

    state = lax.while_loop(cond, body, state)
    status = jnp.where(
        state["failed"],
        jnp.array(1),  # zoom failed
        jnp.where(state["i"] > maxiter, jnp.array(3), jnp.array(0)),  # max iterations; passed
    )
    alpha_k = jnp.asarray(state["a_star"])
    if jnp.finfo(alpha_k.dtype).bits != 64:
        alpha_k = jnp.where(jnp.abs(alpha_k) < 1e-8, jnp.sign(alpha_k) * 1e-8, alpha_k)
    return _LineSearchResults(
        failed=state["failed"] | (~state["done"]),
        nit=state["i"] - 1,
        nfev=state["nfev"],
        ngev=state["ngev"],
        k=state["i"],
        a_k=alpha_k,
        f_k=state["phi_star"],
        g_k=state["g_star"],
        status=status,
    )


__all__ = ["line_search"]
