"""purejit.scipy.stats.multivariate_normal (`jax.scipy.stats.multivariate_normal`): the
log density from the Cholesky factor of the covariance, as JAX computes it."""

from __future__ import annotations

import math

import numpy as np

from purejit.lax import linalg as lax_linalg
from purejit.numpy._core import _lift, astype, exp, log, result_type
from purejit.numpy._manip import diagonal
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._core import broadcast_to
from purejit.numpy._shape import expand_dims

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular=None):
    """log of the multivariate normal density at x (the last axis is the event)."""
    if allow_singular is not None:
        raise NotImplementedError("multivariate_normal.logpdf: allow_singular")
    x, mean, cov = (_lift(v) for v in (x, mean, cov))
    dt = result_type(x, mean, cov)
    if dt.kind not in "fc":
        dt = result_type(dt, 1.0)
    x, mean, cov = (astype(v, dt) for v in (x, mean, cov))
    log2pi = astype(np.asarray(math.log(2 * math.pi)), dt)
    if not mean.shape:
        return -0.5 * (x - mean) ** 2 / cov - 0.5 * (log2pi + log(cov))
    n = mean.shape[-1]
    y = x - mean
    if not cov.shape:
        return -0.5 * _sum(y * y, axis=-1) / cov - n / 2 * (log2pi + log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    low = lax_linalg.cholesky(cov)
    batch = tuple(np.broadcast_shapes(low.shape[:-2], y.shape[:-1]))
    low_b = broadcast_to(low, batch + (n, n))
    y_b = expand_dims(broadcast_to(y, batch + (n,)), -1)
    z = lax_linalg.triangular_solve(low_b, y_b, left_side=True, lower=True)[..., 0]
    half_logdet = _sum(log(diagonal(low, 0, -2, -1)), axis=-1)
    return -0.5 * _sum(z * z, axis=-1) - n / 2 * log2pi - half_logdet


def pdf(x, mean, cov):
    """The multivariate normal density at x."""
    return exp(logpdf(x, mean, cov))
