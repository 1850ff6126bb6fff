"""Samplers with rejection loops: gamma (Marsaglia-Tsang), loggamma, beta, dirichlet,
generalized_normal, ball, poisson (Knuth / Hormann's transformed rejection) and binomial
(inversion / BTRS), each the arithmetic of `jax.random`'s.

JAX draws gamma by a `vmap` of a scalar sampler over one key per element; a batched
`while_loop` runs until every lane is done and keeps a lane's state once its predicate is
false. `_gamma_lanes` is that program written out on arrays of lanes (a `while_loop` whose
predicate is "any lane active", with a `select` per lane), so every lane sees the same key
sequence and arithmetic as JAX's.

The draw (`_gamma_draw`) is a `custom_jvp`, as JAX's `random_gamma` primitive has a JVP of its
own: the samples are not differentiated through the rejection loop but by implicit
reparameterisation, d sample / d a = `lax.random_gamma_grad(a, sample)`, so every sampler
built on gamma (beta, dirichlet, chisquare, f, t, generalized_normal, ball) differentiates in
its parameters as JAX's does.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from purejit import dtypes as pdt
from purejit import lax
from purejit import numpy as jnp
from purejit.custom_derivatives import custom_jvp
from purejit.random._core import (
    shape_of,
    canonical_shape,
    check_param_shapes,
    finfo,
    float_dtype,
    int_dtype,
    normal_real_impl,
    opt_shape,
    param_shape,
    sampler_jit,
    split_n,
    uniform_impl,
)
from purejit.random._keys import check_key
from purejit.random._threefry import split as split_keys
from purejit.tree_util import tree_map


def _sum(x, axis):
    """jnp.sum as JAX computes it: float16/bfloat16 summed in float32, then rounded back."""
    if x.dtype in (np.dtype(np.float16), pdt.bfloat16):
        out = jnp.sum(lax.convert_element_type(x, np.float32), axis=axis, keepdims=True)
        return lax.convert_element_type(out, x.dtype)
    return jnp.sum(x, axis=axis, keepdims=True)


def _c(v, dtype):
    return np.array(v, dtype)


def _select_lanes(pred, new, old):
    """Per lane: `new` where `pred` (lanes are the leading axis), else `old`."""

    def pick(n, o):
        p = lax.broadcast_in_dim(pred, tuple(n.shape), (0,)) if n.ndim > 1 else pred
        return lax.select(p, n, o)

    return tree_map(pick, new, old)


def _batched_while(cond_lanes, body, init):
    """JAX's batched while_loop: run while any lane's predicate holds; lanes whose predicate
    is false keep their state."""

    def cond(state):
        return jnp.any(cond_lanes(state))

    def step(state):
        return _select_lanes(cond_lanes(state), body(state), state)

    return lax.while_loop(cond, step, init)


def _gamma_lanes(keys, alpha, log_space: bool):
    """One gamma sample per lane: keys `[n, 2]`, alpha `[n]` (JAX's `_gamma_one`, vmapped)."""
    dtype = alpha.dtype
    zero, one, minus_one = _c(0, dtype), _c(1, dtype), _c(-1, dtype)
    third, squeeze = _c(1.0 / 3.0, dtype), _c(0.0331, dtype)
    n = alpha.shape[0]
    full = lambda v: lax.full((n,), v, dtype)  # noqa: E731

    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, third)
    c = lax.div(third, lax.sqrt(d))

    def cond_lanes(state):
        _, x, v, u = state
        a = lax.ge(u, lax.sub(one, lax.mul(squeeze, lax.mul(x, x))))
        rhs = lax.add(lax.mul(x, _c(0.5, dtype)), lax.mul(d, lax.add(lax.sub(one, v), lax.log(v))))
        return lax.bitwise_and(a, lax.ge(lax.log(u), rhs))

    def body(state):
        key = state[0]
        key, x_key, u_key = split_n(key, 3)

        def inner_body(kxv):
            k, _, _ = kxv
            k, sub = split_n(k, 2)
            x = normal_real_impl(sub, (), dtype)
            return k, x, lax.add(one, lax.mul(x, c))

        _, x, v = _batched_while(
            lambda kxv: lax.le(kxv[2], zero), inner_body, (x_key, full(0), full(-1))
        )
        big_x = lax.mul(x, x)
        big_v = lax.mul(lax.mul(v, v), v)
        u = uniform_impl(u_key, (), dtype, 0.0, 1.0)
        return key, big_x, big_v, u

    key, subkey = split_n(keys, 2)
    _, _, v, _ = _batched_while(cond_lanes, body, (key, full(0), full(1), full(2)))
    del minus_one
    if log_space:
        u = uniform_impl(subkey, (), dtype, 0.0, 1.0)
        log_samples = lax.neg(lax.neg(lax.log1p(lax.neg(u))))
        use_zero = lax.bitwise_or(boost_mask, lax.eq(log_samples, zero))
        log_boost = lax.select(use_zero, full(0), lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
    samples = jnp.subtract(1, uniform_impl(subkey, (), dtype, 0.0, 1.0))
    boost = lax.select(boost_mask, full(1), lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


@functools.partial(custom_jvp, nondiff_argnums=(2,))
def _gamma_draw(key, a, log_space):
    """Gamma(a, 1) samples (their logs where `log_space`) of a's shape, one key per element:
    JAX's `random_gamma` primitive, differentiable in `a` by its JVP rule below."""
    n = math.prod(a.shape)
    keys = lax.reshape(split_keys(key, (n,)), (n, 2))
    samples = _gamma_lanes(keys, lax.reshape(a, (n,)), log_space)
    return lax.reshape(samples, tuple(a.shape))


@_gamma_draw.defjvp
def _gamma_draw_jvp(log_space, primals, tangents):
    # implicit reparameterisation, as JAX's random_gamma JVP: the key is not differentiable
    key, a = primals
    a_dot = tangents[1]
    out = _gamma_draw(key, a, log_space)
    if log_space:
        # d log(x) = dx / x, with x = exp(log x) rounded up to the smallest normal where it
        # underflows to 0
        x = lax.exp(out)
        tiny = lax.full(tuple(x.shape), finfo(x.dtype).tiny, x.dtype)
        x = lax.select(lax.eq(x, lax.full(tuple(x.shape), 0, x.dtype)), tiny, x)
        grad = lax.div(lax.random_gamma_grad(a, x), x)
    else:
        grad = lax.random_gamma_grad(a, out)
    return out, lax.mul(a_dot, grad)


def gamma_impl(key, a, shape, dtype, log_space: bool):
    if shape is None:
        shape = tuple(a.shape)
    else:
        check_param_shapes("gamma", shape, shape_of(a))
    a = lax.convert_element_type(a, dtype)
    if tuple(a.shape) != tuple(shape):
        a = jnp.broadcast_to(a, shape)
    return _gamma_draw(key, a, log_space)


@sampler_jit(static_argnames=("shape", "dtype", "log_space"))
def _gamma(key, a, shape, dtype, log_space):
    return gamma_impl(key, a, shape, dtype, log_space)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a, 1) samples (Marsaglia and Tsang's method, JAX's per-element loop).

    Args:
        key: a PRNG key.
        a: the shape parameter, broadcast-compatible with `shape`.
        shape: the result shape (default: a's shape).
        dtype: a float dtype.
    Returns:
        An array of `shape` and `dtype`.
    """
    data, _ = check_key("gamma", key)
    dt = float_dtype("gamma", dtype)
    return _gamma(data, a, shape=opt_shape("gamma", shape), dtype=dt, log_space=False)


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a, 1) samples, accurate for small `a`."""
    data, _ = check_key("loggamma", key)
    dt = float_dtype("gamma", dtype)
    return _gamma(data, a, shape=opt_shape("loggamma", shape), dtype=dt, log_space=True)


@sampler_jit(static_argnames=("shape", "dtype"))
def _beta(key, a, b, shape, dtype):
    shape = param_shape("beta", shape, a, b)
    a = lax.convert_element_type(a, dtype)
    b = lax.convert_element_type(b, dtype)
    key_a, key_b = split_n(key, 2)
    a = jnp.broadcast_to(a, shape)
    b = jnp.broadcast_to(b, shape)
    log_a = gamma_impl(key_a, a, shape, dtype, True)
    log_b = gamma_impl(key_b, b, shape, dtype, True)
    log_max = lax.max(log_a, log_b)
    ga = jnp.exp(jnp.subtract(log_a, log_max))
    gb = jnp.exp(jnp.subtract(log_b, log_max))
    return jnp.divide(ga, jnp.add(ga, gb))


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) samples from two log-gamma draws."""
    data, _ = check_key("beta", key)
    dt = float_dtype("beta", dtype)
    return _beta(data, a, b, shape=opt_shape("beta", shape), dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _dirichlet(key, alpha, shape, dtype):
    if alpha.ndim < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {alpha.ndim}")
    if shape is None:
        shape = tuple(alpha.shape[:-1])
    else:
        check_param_shapes("dirichlet", shape, tuple(alpha.shape[:-1]))
    alpha = lax.convert_element_type(alpha, dtype)
    x = gamma_impl(key, alpha, tuple(shape) + tuple(alpha.shape[-1:]), dtype, True)
    # jax.nn.softmax: exp(x - max) / sum
    unnormalized = jnp.exp(jnp.subtract(x, jnp.max(x, axis=-1, keepdims=True)))
    return jnp.divide(unnormalized, _sum(unnormalized, -1))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) samples (the last axis of alpha holds the concentrations)."""
    data, _ = check_key("dirichlet", key)
    dt = float_dtype("dirichlet", dtype)
    alpha = jnp.asarray(alpha)
    return _dirichlet(data, alpha, shape=opt_shape("dirichlet", shape), dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _generalized_normal(key, p, shape, dtype):
    k1, k2 = split_n(key, 2)
    inv_p = jnp.divide(1, p)
    g = gamma_impl(k1, inv_p, shape, dtype, False)
    r = lax.convert_element_type(_rademacher_float(k2, shape), dtype)
    return jnp.multiply(r, jnp.power(g, inv_p))


def _rademacher_float(key, shape):
    p = lax.convert_element_type(0.5, pdt.default_float())
    b = jnp.less(uniform_impl(key, shape, p.dtype, 0.0, 1.0), p)
    return jnp.subtract(jnp.multiply(2, b.astype(pdt.default_float())), 1)


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal samples with shape parameter `p`."""
    data, _ = check_key("generalized_normal", key)
    dt = float_dtype("generalized_normal", dtype)
    return _generalized_normal(
        data, p, shape=canonical_shape("generalized_normal", shape), dtype=dt
    )


@sampler_jit(static_argnames=("d", "shape", "dtype"))
def _ball(key, p, d, shape, dtype):
    k1, k2 = split_n(key, 2)
    g = _generalized_normal(k1, p, shape=(*shape, d), dtype=dtype)
    u = uniform_impl(k2, shape, dtype, 0.0, 1.0)
    e = lax.neg(lax.log1p(lax.neg(u)))
    norm = jnp.add(jnp.squeeze(_sum(jnp.power(jnp.abs(g), p), -1), -1), e)
    return jnp.divide(g, jnp.power(norm, jnp.divide(1, p))[..., None])


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit p-norm ball of dimension `d`."""
    data, _ = check_key("ball", key)
    dt = float_dtype("ball", dtype)
    d = int(d)
    return _ball(data, p, d=d, shape=canonical_shape("ball", shape), dtype=dt)


# ---- poisson ------------------------------------------------------------------------------


def _poisson_knuth(key, lam, shape, dtype, max_iters):
    def body(carry):
        i, k, rng, log_prod = carry
        rng, sub = split_n(rng, 2)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, _c(1, dtype)), k)
        u = uniform_impl(sub, shape, np.float32, 0.0, 1.0)
        return lax.add(i, _c(1, np.int32)), k, rng, lax.add(log_prod, lax.log(u))

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return jnp.logical_and(jnp.any(lax.gt(log_prod, lax.neg(lam))), lax.lt(i, max_iters))

    init = (_c(0, np.int32), lax.full(shape, 0, dtype), key, lax.full(shape, 0, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return lax.convert_element_type(lax.sub(k, _c(1, dtype)), dtype)


def _poisson_rejection(key, lam, shape, dtype, max_iters):
    f32 = lam.dtype
    log_lam = lax.log(lam)
    b = jnp.add(0.931, jnp.multiply(2.53, lax.sqrt(lam)))
    a = jnp.add(-0.059, jnp.multiply(0.02483, b))
    inv_alpha = jnp.add(1.1239, jnp.divide(1.1328, jnp.subtract(b, 3.4)))
    v_r = jnp.subtract(0.9277, jnp.divide(3.6224, jnp.subtract(b, 2)))

    def body(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = split_n(key, 3)
        u = jnp.subtract(uniform_impl(sub0, shape, f32, 0.0, 1.0), 0.5)
        v = uniform_impl(sub1, shape, f32, 0.0, 1.0)
        us = jnp.subtract(0.5, jnp.abs(u))
        k = lax.floor(
            jnp.add(
                jnp.add(jnp.multiply(jnp.add(jnp.divide(jnp.multiply(2, a), us), b), u), lam), 0.43
            )
        )
        s = lax.log(
            jnp.divide(jnp.multiply(v, inv_alpha), jnp.add(jnp.divide(a, jnp.multiply(us, us)), b))
        )
        t = jnp.subtract(
            jnp.add(jnp.negative(lam), jnp.multiply(k, log_lam)), lax.lgamma(jnp.add(k, 1))
        )
        accept1 = jnp.logical_and(jnp.greater_equal(us, 0.07), jnp.less_equal(v, v_r))
        reject = jnp.logical_or(
            jnp.less(k, 0), jnp.logical_and(jnp.less(us, 0.013), jnp.greater(v, us))
        )
        accept2 = jnp.less_equal(s, t)
        accept = jnp.logical_or(accept1, jnp.logical_and(jnp.logical_not(reject), accept2))
        k_out = lax.select(accept, k, k_out)
        accepted = jnp.logical_or(accepted, accept)
        return lax.add(i, _c(1, np.int32)), k_out, accepted, key

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.logical_and(jnp.any(jnp.logical_not(accepted)), lax.lt(i, max_iters))

    init = (_c(0, np.int32), lax.full(shape, -1, f32), lax.full(shape, False, np.bool_), key)
    k = lax.while_loop(cond, body, init)[1]
    return lax.convert_element_type(k, dtype)


@sampler_jit(static_argnames=("shape", "dtype"))
def _poisson(key, lam, shape, dtype):
    use_knuth = jnp.logical_or(jnp.isnan(lam), jnp.less(lam, 10))
    lam_knuth = lax.select(use_knuth, lam, lax.full(shape, 0.0, lam.dtype))
    lam_rejection = lax.select(use_knuth, lax.full(shape, 1e5, lam.dtype), lam)
    max_iters = _c(np.iinfo(dtype).max, dtype)
    # the loop counter is int32 in JAX (a weak Python 0); compare against the same bound
    max_iters = lax.convert_element_type(max_iters, np.int32)
    result = lax.select(
        use_knuth,
        _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
        _poisson_rejection(key, lam_rejection, shape, dtype, max_iters),
    )
    return lax.select(jnp.equal(lam, 0), lax.full(shape, 0, dtype), result)


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) samples: Knuth's method below lam = 10, transformed rejection above.

    Args:
        key: a PRNG key.
        lam: the rate, broadcast-compatible with `shape`.
        shape: the result shape (default: lam's shape).
        dtype: an integer dtype (default int32).
    Returns:
        An integer array of `shape`.
    """
    data, _ = check_key("poisson", key)
    dt = int_dtype("poisson", dtype)
    shape = shape_of(lam) if shape is None else canonical_shape("poisson", shape)
    lam = lax.convert_element_type(jnp.broadcast_to(lam, shape), np.float32)
    return _poisson(data, lam, shape=shape, dtype=dt)
