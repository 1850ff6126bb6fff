"""purejit.scipy.stats.multinomial: the multinomial distribution
(`jax.scipy.stats.multinomial`); the last axis of x and p is the category."""

from __future__ import annotations

import numpy as np

from purejit import numpy as jnp
from purejit.numpy._core import _lift
from purejit.scipy.special import gammaln, xlogy
from purejit.scipy.stats._common import INF, args

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
    """lgamma(n + 1) + sum_i (x_i log p_i - lgamma(x_i + 1)); -inf unless the counts sum to n.
    x and n must be integers. As JAX's, the check adds up every count of x (all axes, so a
    batch of x passes when its total is n)."""
    p = args("multinomial.logpmf", p)
    x, n = _lift(x), _lift(n)
    dt = jnp.result_type(x, n)
    if dt != np.bool_ and dt.kind not in "iu":
        raise ValueError(
            "scipy.stats.multinomial.logpmf: x and n must be of integer type; got "
            f"x.dtype={x.dtype}, n.dtype={n.dtype}"
        )
    # JAX promotes x and n's ranks, not their shapes: n of shape (m,) becomes (1, m) against
    # a 2-d x, and the result broadcasts with the per-row sums as JAX's does
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    if x.ndim and n.ndim and x.ndim != n.ndim:
        rank = max(x.ndim, n.ndim)
        x, n = (v.reshape((1,) * (rank - v.ndim) + v.shape) for v in (x, n))
    log_probs = gammaln(n + 1) + jnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return jnp.where(jnp.sum(x) == n, log_probs, -INF)


def pmf(x, n, p):
    """P(x)."""
    return jnp.exp(logpmf(x, n, p))
