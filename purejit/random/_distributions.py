"""Distributions derived from uniform, normal, gamma and binomial draws, each the arithmetic
of `jax.random`'s (same key splits, same ops in the same order): cauchy, chisquare, f,
geometric, lognormal, maxwell, double_sided_maxwell, pareto, rayleigh, t, triangular, wald,
weibull_min, multinomial, and clone."""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit import lax
from purejit import numpy as jnp
from purejit.random._binomial import _binomial
from purejit.random._core import (
    shape_of,
    user_line,
    canonical_shape,
    finfo,
    float_dtype,
    normal_impl,
    param_shape,
    sampler_jit,
    split_n,
    uniform_impl,
)
from purejit.random._keys import PRNGKeyArray, check_key
from purejit.random._loops import gamma_impl
from purejit.random._samplers import _rademacher, exponential_impl
from purejit.random._threefry import split as split_keys
from purejit.tracing import bind1


def _dtype_of(x) -> np.dtype | None:
    """The dtype of an array argument; None for a Python scalar (weak: casts to anything)."""
    if isinstance(x, (bool, int, float, complex)):
        return None
    return pdt.canonicalize(np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype)


def _check_safe_cast(name: str, dtype, *params):
    """JAX's `_check_all_safe_to_cast`: an array parameter whose dtype would promote past
    `dtype` (e.g. float32 into float16) is an error; Python scalars always cast."""
    for p in params:
        dt = _dtype_of(p)
        if dt is not None and np.dtype(jnp.result_type(dt, dtype)) != np.dtype(dtype):
            raise TypeError(
                f"In arguments to {name}, cannot safely cast argument of type {dt} to "
                f"{np.dtype(dtype)}{user_line()}; convert it first (x.astype(dtype))"
            )


def _prepare(name: str, key, shape, dtype, *params, allow_complex: bool = False):
    """A sampler's key data, float dtype and result shape, its array parameters checked as
    JAX checks them (broadcastable to `shape`, safely castable to the dtype)."""
    data, _ = check_key(name, key)
    dt = float_dtype(name, dtype, allow_complex=allow_complex)
    shape = param_shape(name, shape, *params)
    _check_safe_cast(name, dt, *params)
    return data, dt, shape


def _sum_last(x):
    """jnp.sum over the last axis as JAX computes it (float16/bfloat16 summed in float32)."""
    if x.dtype in (np.dtype(np.float16), pdt.bfloat16):
        s = jnp.sum(lax.convert_element_type(x, np.float32), axis=-1)
        return lax.convert_element_type(s, x.dtype)
    return jnp.sum(x, axis=-1)


# ---- location-scale and inverse-CDF samplers -----------------------------------------------


@sampler_jit(static_argnames=("shape", "dtype"))
def _cauchy(key, shape, dtype):
    u = uniform_impl(key, shape, dtype, finfo(dtype).eps, 1.0)
    pi = np.array(np.pi, dtype)
    # XLA's own tan (not purejit's faster CPU one), as jax.random computes it
    return bind1("tan", lax.mul(pi, lax.sub(u, np.array(0.5, dtype))), impl="xla")


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy samples: tan(pi * (u - 1/2))."""
    data, _ = check_key("cauchy", key)
    dt = float_dtype("cauchy", dtype)
    return _cauchy(data, shape=canonical_shape("cauchy", shape), dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _pareto(key, b, shape, dtype):
    b = lax.convert_element_type(b, dtype)
    e = exponential_impl(key, shape, dtype)
    return lax.exp(jnp.divide(e, b))


def pareto(key, b, shape=None, dtype=None):
    """Pareto(b) samples: exp(e / b), e exponential."""
    data, dt, shape = _prepare("pareto", key, shape, dtype, b)
    return _pareto(data, b, shape=shape, dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _rayleigh(key, scale, shape, dtype):
    u = uniform_impl(key, shape, dtype, 0.0, 1.0)
    scale = jnp.broadcast_to(lax.convert_element_type(scale, dtype), shape)
    sqrt_u = lax.sqrt(lax.mul(lax.log(u), np.array(-2, dtype)))
    return lax.mul(scale, sqrt_u)


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh(scale) samples: scale * sqrt(-2 log u)."""
    data, dt, shape = _prepare("rayleigh", key, shape, dtype, scale)
    return _rayleigh(data, scale, shape=shape, dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _weibull_min(key, scale, concentration, shape, dtype):
    u = uniform_impl(key, shape, dtype, 0.0, 1.0)
    return jnp.multiply(
        jnp.power(jnp.negative(jnp.log1p(jnp.negative(u))), jnp.divide(1.0, concentration)),
        scale,
    )


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples by the inverse CDF: (-log1p(-u)) ** (1 / concentration) * scale."""
    data, _ = check_key("weibull_min", key)
    dt = float_dtype("weibull_min", dtype)
    shape = canonical_shape("weibull_min", shape)
    return _weibull_min(data, scale, concentration, shape=shape, dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _triangular(key, left, mode, right, shape, dtype):
    left = jnp.broadcast_to(lax.convert_element_type(left, dtype), shape)
    right = jnp.broadcast_to(lax.convert_element_type(right, dtype), shape)
    mode = jnp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
    width = jnp.subtract(right, left)
    fc = jnp.divide(jnp.subtract(mode, left), width)
    u = uniform_impl(key, shape, dtype, 0.0, 1.0)
    out1 = jnp.add(left, lax.sqrt(jnp.multiply(jnp.multiply(u, width), jnp.subtract(mode, left))))
    right_part = jnp.multiply(jnp.multiply(jnp.subtract(1, u), width), jnp.subtract(right, mode))
    out2 = jnp.subtract(right, lax.sqrt(right_part))
    return lax.select(jnp.less(u, fc), out1, out2)


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular(left, mode, right) samples by the inverse CDF."""
    data, dt, shape = _prepare("triangular", key, shape, dtype, left, mode, right)
    return _triangular(data, left, mode, right, shape=shape, dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _lognormal(key, sigma, shape, dtype):
    sigma = lax.convert_element_type(sigma, dtype)
    return lax.exp(jnp.multiply(normal_impl(key, shape, dtype), sigma))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """exp(sigma * normal) samples (complex dtypes too)."""
    data, dt, shape = _prepare("lognormal", key, shape, dtype, sigma, allow_complex=True)
    return _lognormal(data, sigma, shape=shape, dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _geometric(key, p, shape, dtype):
    u = uniform_impl(key, shape, p.dtype, 0.0, 1.0)
    # u = 0 is mapped to 1, as JAX does, so log(u) is finite
    u = jnp.where(jnp.equal(u, 0), 1, u)
    log_u = lax.log(u)
    log_one_minus_p = jnp.broadcast_to(lax.log1p(lax.neg(p)), shape)
    g = jnp.add(lax.floor(lax.div(log_u, log_one_minus_p)), 1)
    return lax.convert_element_type(g, dtype)


def geometric(key, p, shape=None, dtype=None):
    """Geometric(p) samples (the number of trials to the first success), integers."""
    data, _ = check_key("geometric", key)
    dt = pdt.canonicalize(np.dtype(int if dtype is None else dtype))
    if dt.kind not in "iu":
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dt}")
    shape = param_shape("geometric", shape, p)
    pdt_ = _dtype_of(p)
    if pdt_ is None or not (pdt_.kind == "f" or pdt_ == pdt.bfloat16):
        pdt_ = pdt.default_float()
    return _geometric(data, lax.convert_element_type(p, pdt_), shape=shape, dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _wald(key, mean, shape, dtype):
    k1, k2 = split_n(key, 2)
    mean = jnp.broadcast_to(lax.convert_element_type(mean, dtype), shape)
    v = normal_impl(k1, shape, dtype)
    z = uniform_impl(k2, shape, dtype, 0.0, 1.0)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    four_mean_y = jnp.multiply(jnp.multiply(4, mean), y)
    sqrt_term = lax.sqrt(jnp.add(four_mean_y, jnp.multiply(mean_sq, y_sq)))
    x = jnp.add(mean, jnp.divide(jnp.multiply(mean_sq, y), 2))
    x = jnp.subtract(x, jnp.multiply(jnp.divide(mean, 2), sqrt_term))
    accept = lax.le(z, jnp.divide(mean, jnp.add(mean, x)))
    return lax.select(accept, x, jnp.divide(mean_sq, x))


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) samples with the given mean (Michael et al.'s method)."""
    data, dt, shape = _prepare("wald", key, shape, dtype, mean)
    return _wald(data, mean, shape=shape, dtype=dt)


# ---- from normal draws ----------------------------------------------------------------------


def _maxwell_impl(key, shape, dtype):
    x = normal_impl(key, (*shape, 3), dtype)
    return lax.sqrt(_sum_last(jnp.multiply(x, x)))


@sampler_jit(static_argnames=("shape", "dtype"))
def _maxwell(key, shape, dtype):
    return _maxwell_impl(key, shape, dtype)


def maxwell(key, shape=(), dtype=None):
    """Maxwell samples: the norm of three independent normals."""
    data, _ = check_key("maxwell", key)
    dt = float_dtype("maxwell", dtype)
    return _maxwell(data, shape=canonical_shape("maxwell", shape), dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _double_sided_maxwell(key, loc, scale, shape, dtype):
    params = tuple(np.broadcast_shapes(shape_of(loc), shape_of(scale)))
    shape = (shape or params) + params
    maxwell_key, rademacher_key = split_n(key, 2)
    rvs = _maxwell_impl(maxwell_key, shape, dtype)
    sign = _rademacher(rademacher_key, shape=shape, dtype=dtype)
    return jnp.add(jnp.multiply(jnp.multiply(sign, rvs), scale), loc)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell samples: a random sign times a Maxwell draw, scaled and shifted.
    As in JAX, the result shape is `shape + broadcast(loc, scale).shape`."""
    data, _ = check_key("double_sided_maxwell", key)
    dt = float_dtype("double_sided_maxwell", dtype)
    shape = canonical_shape("double_sided_maxwell", shape)
    return _double_sided_maxwell(data, loc, scale, shape=shape, dtype=dt)


# ---- from gamma draws -----------------------------------------------------------------------


def _chisquare_impl(key, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    two = np.array(2, dtype)
    half_df = lax.div(df, two)
    log_g = gamma_impl(key, half_df, shape, dtype, True)
    return lax.mul(jnp.exp(log_g), two)


@sampler_jit(static_argnames=("shape", "dtype"))
def _chisquare(key, df, shape, dtype):
    return _chisquare_impl(key, df, shape, dtype)


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square(df) samples: 2 exp(loggamma(df / 2))."""
    data, dt, shape = _prepare("chisquare", key, shape, dtype, df)
    return _chisquare(data, df, shape=shape, dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _f(key, dfnum, dfden, shape, dtype):
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    key_dfd, key_dfn = split_n(key, 2)
    num = lax.div(_chisquare_impl(key_dfn, dfnum, shape, dtype), jnp.broadcast_to(dfnum, shape))
    den = lax.div(_chisquare_impl(key_dfd, dfden, shape, dtype), jnp.broadcast_to(dfden, shape))
    return lax.div(num, den)


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F(dfnum, dfden) samples: the ratio of two scaled chi-square draws."""
    data, dt, shape = _prepare("f", key, shape, dtype, dfnum, dfden)
    return _f(data, dfnum, dfden, shape=shape, dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _t(key, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    key_n, key_g = split_n(key, 2)
    n = normal_impl(key_n, shape, dtype)
    half_df = lax.div(df, np.array(2, dtype))
    g = gamma_impl(key_g, half_df, shape, dtype, False)
    return jnp.multiply(n, jnp.sqrt(jnp.divide(half_df, g)))


def t(key, df, shape=None, dtype=None):
    """Student's t(df) samples: normal * sqrt((df / 2) / gamma(df / 2))."""
    data, dt, shape = _prepare("t", key, shape, dtype, df)
    return _t(data, df, shape=shape, dtype=dt)


# ---- multinomial ----------------------------------------------------------------------------


@sampler_jit(static_argnames=("shape", "dtype", "unroll"))
def _multinomial(key, n, p, shape, dtype, unroll):
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.broadcast_to(p, shape)
    p = jnp.moveaxis(p, -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = jnp.divide(p, jnp.where(jnp.equal(remaining, 0), 1, remaining))
    keys = split_keys(key, (ratios.shape[0],))

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        prob = jnp.minimum(jnp.maximum(ratio, 0), 1)  # ratio.clip(0, 1)
        count = _binomial_traced(k, remainder, prob, remainder.dtype)
        return jnp.subtract(remainder, count), count

    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return lax.convert_element_type(jnp.moveaxis(counts, 0, -1), dtype)


def _binomial_traced(key, count, prob, dtype):
    shape = tuple(np.broadcast_shapes(shape_of(count), shape_of(prob)))
    return _binomial(key, count, prob, shape=shape, dtype=dtype, prob_dtype=np.dtype(prob.dtype))


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial(n, p) counts (outcomes along p's last axis), by successive binomials.

    Args:
        key: a PRNG key.
        n: the number of trials, broadcast-compatible with `p.shape[:-1]`.
        p: the outcome probabilities, outcomes along the last axis.
        shape: the result shape (default: p's shape); its last axis is the outcomes'.
        dtype: the counts' dtype (default float32, float64 with x64).
        unroll: passed to the `scan` over outcomes.
    Returns:
        Counts of `shape` and `dtype`.
    """
    data, _ = check_key("multinomial", key)
    n, p = jnp.asarray(n), jnp.asarray(p)
    common = np.dtype(jnp.result_type(n, p))
    if not (common.kind in "fc" or common == pdt.bfloat16):
        common = pdt.default_float()
    n, p = n.astype(common), p.astype(common)
    # as JAX: the counts are cast to `dtype` at the end, whatever it is (default float)
    dt = pdt.canonicalize(np.dtype(float if dtype is None else dtype))
    shape = tuple(p.shape) if shape is None else canonical_shape("multinomial", shape)
    if not shape:
        raise ValueError(f"multinomial: p must have at least one axis (the outcomes){user_line()}")
    return _multinomial(data, n, p, shape=shape, dtype=dt, unroll=unroll)


def clone(key):
    """The same key (JAX's `clone`: an identity outside key-reuse checking)."""
    check_key("clone", key, allow_batched=True)
    return key if isinstance(key, PRNGKeyArray) else jnp.asarray(key)
