"""Samplers that need a matrix factorisation: orthogonal (QR) and multivariate_normal
(Cholesky, SVD or eigh). Bit-identity with JAX needs the same factorisation routines JAX
calls (LAPACK on CPU, cuSOLVER on GPU), so these use `purejit.numpy.linalg` and say so when
it is not there."""

from __future__ import annotations

import operator

import numpy as np

from purejit import dtypes as pdt
from purejit import numpy as jnp
from purejit.random._core import (
    canonical_shape,
    check_param_shapes,
    float_dtype,
    normal_impl,
    sampler_jit,
)
from purejit.random._keys import check_key


def _linalg(name: str, fn: str):
    linalg = getattr(jnp, "linalg", None)
    if linalg is None or not hasattr(linalg, fn):
        raise NotImplementedError(
            f"random.{name} needs purejit.numpy.linalg.{fn}, which this purejit does not have"
        )
    return getattr(linalg, fn)


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Random orthogonal n x m matrices (Haar): the Q of a QR of normal samples."""
    data, _ = check_key("orthogonal", key)
    dt = float_dtype("orthogonal", dtype)
    shape = canonical_shape("orthogonal", shape)
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    qr = _linalg("orthogonal", "qr")
    return _orthogonal(data, n=n, m=m, shape=shape, dtype=dt, qr=qr)


# one compiled program per call, as JAX's jitted `_orthogonal`: run op by op, the products
# and factorisations could round differently on GPU than inside one program
@sampler_jit(static_argnames=("n", "m", "shape", "dtype", "qr"))
def _orthogonal(key, n, m, shape, dtype, qr):
    z = normal_impl(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x


def _promote_inexact(*xs):
    """JAX's promote_dtypes_inexact: a common dtype, integers and bools made float."""
    dt = np.dtype(jnp.result_type(*xs))
    if not (dt.kind in "fc" or dt == pdt.bfloat16):
        dt = pdt.default_float()
    return tuple(jnp.asarray(x, dt) for x in xs)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Normal samples with the given mean and covariance."""
    data, _ = check_key("multivariate_normal", key)
    mean, cov = _promote_inexact(jnp.asarray(mean), jnp.asarray(cov))
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    # as JAX: mean and cov keep their (common inexact) dtype; `dtype` is the samples'
    dt = mean.dtype if dtype is None else float_dtype("multivariate_normal", dtype)
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got {cov.ndim}")
    n = mean.shape[-1]
    if tuple(cov.shape[-2:]) != (n, n):
        raise ValueError(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
            f"but got cov.shape == {tuple(cov.shape)}."
        )
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        shape = canonical_shape("multivariate_normal", shape)
        check_param_shapes("normal", shape, tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    factorise = _linalg("multivariate_normal", method)
    return _multivariate_normal(
        data, mean, cov, shape=shape, dtype=dt, method=method, factorise=factorise
    )


# one compiled program, as JAX's jitted `_multivariate_normal` (eagerly on GPU, a separate
# einsum kernel rounded differently from the fused one JAX runs)
@sampler_jit(static_argnames=("shape", "dtype", "method", "factorise"))
def _multivariate_normal(key, mean, cov, shape, dtype, method, factorise):
    n = mean.shape[-1]
    if method == "svd":
        u, s, _ = factorise(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = factorise(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = factorise(cov)
    samples = normal_impl(key, (*shape, n), dtype)
    return mean + jnp.einsum("...ij,...j->...i", factor, samples)
