"""purejit.scipy.stats.dirichlet: the Dirichlet distribution (`jax.scipy.stats.dirichlet`).
The event runs along axis 0 of x (scipy's convention); alpha is one-dimensional."""

from __future__ import annotations

from purejit import dtypes as pdt
from purejit import numpy as jnp
from purejit.numpy._core import _lift
from purejit.scipy.special import gammaln, xlogy
from purejit.scipy.stats._common import INF

__all__ = ["logpdf", "pdf"]


def _is_simplex(x):
    return jnp.all(x > 0, axis=0) & (abs(jnp.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x, alpha):
    """sum_i (alpha_i - 1) log x_i - (sum_i lgamma(alpha_i) - lgamma(sum_i alpha_i)); -inf
    off the simplex. x may omit the last coordinate (it is then 1 - sum of the others)."""
    x, alpha = _lift(x), _lift(alpha)
    dt = jnp.result_type(x, alpha)
    if not pdt.is_inexact(dt):
        dt = pdt.default_float()
    x, alpha = x.astype(dt), alpha.astype(dt)
    if alpha.ndim != 1:
        raise ValueError(
            f"scipy.stats.dirichlet.logpdf: alpha must be one-dimensional; got alpha.shape="
            f"{alpha.shape}"
        )
    if x.ndim == 0 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError(
            "scipy.stats.dirichlet.logpdf: x must have as many entries along axis 0 as alpha "
            f"or one fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}"
        )
    if x.shape[0] != alpha.shape[0]:
        x = jnp.concatenate([x, 1 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
    normalize = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
    alpha = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
    log_probs = jnp.sum(xlogy(alpha - 1, x), axis=0) - normalize
    return jnp.where(_is_simplex(x), log_probs, -INF)


def pdf(x, alpha):
    """The Dirichlet density."""
    return jnp.exp(logpdf(x, alpha))
