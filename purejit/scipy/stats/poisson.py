"""purejit.scipy.stats.poisson: the Poisson distribution (`jax.scipy.stats.poisson`)."""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit import numpy as jnp
from purejit.numpy._core import _lift
from purejit.scipy.special import entr, gammaln, xlogy
from purejit.scipy.stats._common import INF, args, igammac

__all__ = ["cdf", "entropy", "logpmf", "pmf"]


def logpmf(k, mu, loc=0):
    """x log mu - lgamma(x + 1) - mu, x = k - loc; -inf below loc or off the integers."""
    k, mu, loc = args("poisson.logpmf", k, mu, loc)
    x = k - loc
    log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
    return jnp.where((x < 0) | (jnp.round(k) != k), -INF, log_probs)


def pmf(k, mu, loc=0):
    """P(k)."""
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """Q(floor(x) + 1, mu), the regularised upper incomplete gamma function; 0 below loc."""
    k, mu, loc = args("poisson.cdf", k, mu, loc)
    x = k - loc
    return jnp.where(x < 0, jnp.zeros_like(x), igammac(jnp.floor(1 + x), mu))


def _entropy_sum(mu, max_k: int, upper):
    """-sum p log p over k < min(max_k, upper) (upper as in JAX: far enough into the tail
    that the terms left out are below the dtype's resolution)."""
    k = jnp.arange(max_k, dtype=mu.dtype)[:, None]
    probs = pmf(k, mu, 0)
    mask = k < jnp.ceil(upper).astype(k.dtype)[None, :]
    return jnp.sum(entr(jnp.where(mask, probs, 0.0)), axis=0)


def entropy(mu, loc=0):
    """The entropy of Poisson(mu): the direct sum for mu < 100 (35 or 250 terms), the
    asymptotic log(2 pi e mu)/2 - 1/(12 mu) beyond. The result has mu and loc's broadcast
    shape (loc does not change the entropy)."""
    mu, loc = _lift(mu), _lift(loc)
    dt = jnp.result_type(mu, loc)
    if not pdt.is_inexact(dt):
        dt = pdt.default_float()
    mu = mu.astype(dt)
    shape = jnp.broadcast_shapes(mu.shape, loc.shape)
    flat = jnp.ravel(mu)
    small = _entropy_sum(flat, 35, flat + 20)
    medium = _entropy_sum(flat, 250, flat + 10 * jnp.sqrt(flat) + 20)
    large = 0.5 * jnp.log(2 * np.pi * np.e * flat) - 1.0 / (12 * flat)
    result = jnp.where(
        flat == 0,
        jnp.zeros_like(flat),
        jnp.where(flat < 10, small, jnp.where(flat < 100, medium, large)),
    )
    return jnp.broadcast_to(jnp.reshape(result, mu.shape), shape)
