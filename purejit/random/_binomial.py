"""binomial: JAX's algorithm (TensorFlow's): inversion by summed geometric draws where
`n * q <= 10`, otherwise Hormann's transformed rejection with squeeze (BTRS), `q` being the
smaller of p and 1 - p.

Both loops run on the whole array with one key each (the same key for both, as in JAX) and
the result picks per element; each loop draws, per iteration, exactly what JAX's does:

* inversion: `subkey, key = split(key)` (the subkey is the *first* of the pair), one uniform
  of the full shape, `geom = ceil(log(u) / log1p(-q))`, counting geometric draws until their
  sum exceeds n;
* BTRS: `key, k0, k1 = split(key, 3)`, two uniforms of the full shape, the TFP acceptance
  test with the Stirling tail `_stirling_tail`.

The arithmetic is written in the same order as JAX's so XLA rounds it the same way.
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit import lax
from purejit import numpy as jnp
from purejit.random._core import (
    user_line,
    canonical_shape,
    finfo,
    float_dtype,
    param_shape,
    sampler_jit,
    split_n,
    uniform_impl,
)
from purejit.random._keys import check_key
from purejit.tracing import Tracer

_STIRLING_TAIL = (
    0.0810614667953272,
    0.0413406959554092,
    0.0276779256849983,
    0.02079067210376509,
    0.0166446911898211,
    0.0138761288230707,
    0.0118967099458917,
    0.0104112652619720,
    0.00925546218271273,
    0.00833056343336287,
)


def _isnan(x):
    return lax.ne(x, x)


def _stirling_tail(k):
    """log(k!) minus its Stirling approximation: a table for k <= 9, a series above."""
    dtype = k.dtype
    table = jnp.asarray(np.array(_STIRLING_TAIL, dtype))
    use_table = jnp.less_equal(k, 9)
    k = lax.clamp(np.array(0.0, dtype), k, np.array(9.0, dtype))
    kp1 = jnp.add(k, 1)
    kp1sq = jnp.multiply(kp1, kp1)
    # (1/12 - (1/360 - 1/1260 / kp1sq) / kp1sq) / (k + 1), the Python constants folded first
    inner = jnp.subtract(1.0 / 360, jnp.divide(1.0 / 1260, kp1sq))
    approx = jnp.divide(jnp.subtract(1.0 / 12, jnp.divide(inner, kp1sq)), jnp.add(k, 1))
    idx = lax.convert_element_type(jnp.floor(k), np.int32)
    return lax.select(use_table, jnp.take(table, idx), approx)


def _below_max_iters(i, max_iters):
    """JAX's `i < max_iters`: the weak int32 counter against a scalar of the result dtype."""
    return lax.lt(lax.convert_element_type(i, max_iters.dtype), max_iters)


def _inversion(key, count, prob, shape, max_iters):
    """The number of geometric(q) draws whose sum stays <= count, minus one."""
    dtype = prob.dtype
    log1minusprob = jnp.log1p(jnp.negative(prob))

    def body(carry):
        i, num_geom, geom_sum, key = carry
        subkey, key = split_n(key, 2)
        num_geom_out = lax.select(jnp.less_equal(geom_sum, count), jnp.add(num_geom, 1), num_geom)
        u = uniform_impl(subkey, shape, dtype, 0.0, 1.0)
        geom = jnp.ceil(jnp.divide(jnp.log(u), log1minusprob))
        return lax.add(i, np.int32(1)), num_geom_out, jnp.add(geom_sum, geom), key

    def cond(carry):
        i, geom_sum = carry[0], carry[2]
        more = jnp.any(jnp.less_equal(geom_sum, count))
        return jnp.logical_and(more, _below_max_iters(i, max_iters))

    zeros = lax.full(shape, 0, dtype)
    k = lax.while_loop(cond, body, (np.int32(0), zeros, zeros, key))[1]
    return lax.convert_element_type(jnp.subtract(k, 1), max_iters.dtype)


def _btrs(key, count, prob, shape, max_iters):
    """Transformed rejection with squeeze (Hormann 1993), TFP's constants."""
    dtype = prob.dtype
    stddev = jnp.sqrt(jnp.multiply(jnp.multiply(count, prob), jnp.subtract(1, prob)))
    b = jnp.add(1.15, jnp.multiply(2.53, stddev))
    a = jnp.add(jnp.add(-0.0873, jnp.multiply(0.0248, b)), jnp.multiply(0.01, prob))
    c = jnp.add(jnp.multiply(count, prob), 0.5)
    v_r = jnp.subtract(0.92, jnp.divide(4.2, b))
    r = jnp.divide(prob, jnp.subtract(1, prob))
    alpha = jnp.multiply(jnp.add(2.83, jnp.divide(5.1, b)), stddev)
    m = jnp.floor(jnp.multiply(jnp.add(count, 1), prob))

    def body(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = split_n(key, 3)
        u = uniform_impl(sub0, shape, dtype, 0.0, 1.0)
        v = uniform_impl(sub1, shape, dtype, 0.0, 1.0)
        u = jnp.subtract(u, 0.5)
        us = jnp.subtract(0.5, jnp.abs(u))
        accept1 = jnp.logical_and(jnp.greater_equal(us, 0.07), jnp.less_equal(v, v_r))
        k = jnp.floor(jnp.add(jnp.multiply(jnp.add(jnp.divide(jnp.multiply(2, a), us), b), u), c))
        reject = jnp.logical_or(jnp.less(k, 0), jnp.greater(k, count))
        v = jnp.log(
            jnp.divide(jnp.multiply(v, alpha), jnp.add(jnp.divide(a, jnp.multiply(us, us)), b))
        )
        n_m1 = jnp.add(jnp.subtract(count, m), 1)  # count - m + 1
        n_k1 = jnp.add(jnp.subtract(count, k), 1)  # count - k + 1
        ub = jnp.multiply(
            jnp.add(m, 0.5), jnp.log(jnp.divide(jnp.add(m, 1), jnp.multiply(r, n_m1)))
        )
        ub = jnp.add(ub, jnp.multiply(jnp.add(count, 1), jnp.log(jnp.divide(n_m1, n_k1))))
        ub = jnp.add(
            ub,
            jnp.multiply(
                jnp.add(k, 0.5), jnp.log(jnp.divide(jnp.multiply(r, n_k1), jnp.add(k, 1)))
            ),
        )
        ub = jnp.add(ub, _stirling_tail(m))
        ub = jnp.add(ub, _stirling_tail(jnp.subtract(count, m)))
        ub = jnp.subtract(ub, _stirling_tail(k))
        ub = jnp.subtract(ub, _stirling_tail(jnp.subtract(count, k)))
        accept2 = jnp.less_equal(v, ub)
        accept = jnp.logical_or(accept1, jnp.logical_and(jnp.logical_not(reject), accept2))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, np.int32(1)), k_out, jnp.logical_or(accepted, accept), key

    def cond(carry):
        i, accepted = carry[0], carry[2]
        more = jnp.any(jnp.logical_not(accepted))
        return jnp.logical_and(more, _below_max_iters(i, max_iters))

    init = (np.int32(0), lax.full(shape, -1, dtype), lax.full(shape, False, np.bool_), key)
    k = lax.while_loop(cond, body, init)[1]
    return lax.convert_element_type(k, max_iters.dtype)


@sampler_jit(static_argnames=("shape", "dtype", "prob_dtype"))
def _binomial(key, count, prob, shape, dtype, prob_dtype):
    shape = param_shape("binomial", shape, count, prob)
    prob = lax.convert_element_type(prob, prob_dtype)
    count = lax.convert_element_type(count, prob_dtype)
    count = jnp.broadcast_to(count, shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = jnp.less(prob, 0.5)
    q = lax.select(p_lt_half, prob, jnp.subtract(1.0, prob))
    count_nan_or_neg = jnp.logical_or(_isnan(count), jnp.less(count, 0.0))
    count_inf = jnp.isinf(count)
    q_is_nan = _isnan(q)
    q_l_0 = jnp.less(q, 0.0)
    q = lax.select(jnp.logical_or(q_is_nan, q_l_0), lax.full(shape, 0.01, prob_dtype), q)
    use_inversion = jnp.logical_or(count_nan_or_neg, jnp.less_equal(jnp.multiply(count, q), 10.0))
    count = jnp.floor(count)  # a float count is floored, as np.random.binomial does
    count_inv = lax.select(use_inversion, count, lax.full(shape, 0.0, prob_dtype))
    count_btrs = lax.select(use_inversion, lax.full(shape, 1e4, prob_dtype), count)
    q_btrs = lax.select(use_inversion, lax.full(shape, 0.5, prob_dtype), q)
    max_iters = np.array(finfo(dtype).max, dtype)
    samples = lax.select(
        use_inversion,
        _inversion(key, count_inv, q, shape, max_iters),
        _btrs(key, count_btrs, q_btrs, shape, max_iters),
    )
    # a NaN or negative q or count gives NaN; an infinite count gives inf
    invalid = jnp.logical_or(jnp.logical_or(q_l_0, q_is_nan), count_nan_or_neg)
    samples = lax.select(invalid, lax.full(shape, np.nan, dtype), samples)
    inf_ok = jnp.logical_and(count_inf, jnp.logical_not(invalid))
    samples = lax.select(inf_ok, lax.full(shape, np.inf, dtype), samples)
    keep = jnp.logical_or(
        jnp.logical_or(jnp.logical_or(p_lt_half, count_nan_or_neg), q_is_nan), count_inf
    )
    flipped = jnp.subtract(lax.convert_element_type(count, dtype), samples)
    return lax.select(keep, samples, flipped)


def _inexact_dtype(x) -> np.dtype:
    """JAX's promote_dtypes_inexact for one value: floats keep their dtype, the rest become
    the default float."""
    if isinstance(x, (bool, int, float)):
        return pdt.default_float()
    dt = np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
    dt = pdt.canonicalize(dt)
    return dt if (dt.kind == "f" or dt == pdt.bfloat16) else pdt.default_float()


def _check_arraylike(name: str, *args):
    for i, x in enumerate(args):
        ok = isinstance(x, (bool, int, float, np.ndarray, np.generic, Tracer))
        if not (ok or hasattr(x, "__array__") or hasattr(x, "aval")):
            raise TypeError(
                f"{name} requires ndarray or scalar arguments, got {type(x).__name__} at "
                f"position {i}{user_line()}"
            )


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) samples, as floats (JAX's algorithm: inversion for n * q <= 10, BTRS
    above, q = min(p, 1 - p)).

    Args:
        key: a PRNG key.
        n: the number of trials (float; floored), broadcast-compatible with `shape`.
        p: the probability of success, broadcast-compatible with `shape`.
        shape: the result shape (default: n and p broadcast together).
        dtype: a float dtype (default float32, float64 with x64).
    Returns:
        An array of `shape` and `dtype`; NaN where n is NaN or negative or p is NaN or
        negative, inf where n is inf.
    """
    data, _ = check_key("binomial", key)
    _check_arraylike("binomial", n, p)
    dt = float_dtype("binomial", dtype)
    shape = None if shape is None else canonical_shape("binomial", shape)
    return _binomial(data, n, p, shape=shape, dtype=dt, prob_dtype=_inexact_dtype(p))
