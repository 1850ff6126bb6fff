"""Samplers built on `uniform`/`normal`/`bits`, each the same arithmetic as `jax.random`'s
(the same ops in the same order, so XLA computes the same bits): truncated_normal,
bernoulli, rademacher, exponential, laplace, logistic, gumbel, categorical, randint,
permutation, choice."""

from __future__ import annotations

import math
import operator

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.backend import versions
from purejit import lax
from purejit import numpy as jnp
from purejit.random._core import (
    user_line,
    bits_impl,
    canonical_shape,
    check_param_shapes,
    finfo,
    float_dtype,
    int_dtype,
    opt_shape,
    param_shape,
    sampler_jit,
    split_n,
    uniform_impl,
)
from purejit.random._keys import check_key
from purejit.tracing import Tracer


# ---- continuous -----------------------------------------------------------------------------


@sampler_jit(static_argnames=("shape", "dtype"))
def _truncated_normal(key, lower, upper, shape, dtype):
    shape = param_shape("truncated_normal", shape, lower, upper)
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    u = uniform_impl(key, shape, dtype, a, b)
    out = lax.mul(sqrt2, lax.erf_inv(u))
    # clamp to the open interval (lower, upper), as jnp.clip: maximum(lo, x), minimum(hi, x)
    lo = lax.nextafter(lower, np.array(np.inf, dtype))
    hi = lax.nextafter(upper, np.array(-np.inf, dtype))
    return jnp.minimum(hi, jnp.maximum(lo, out))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Normal samples truncated to the open interval (lower, upper).

    Args:
        key: a PRNG key.
        lower, upper: bounds, broadcast-compatible with `shape`.
        shape: the result shape (default: the bounds broadcast together).
        dtype: a float dtype (default float32, float64 with x64).
    Returns:
        An array of `shape` and `dtype`.
    """
    data, _ = check_key("truncated_normal", key)
    dt = float_dtype("truncated_normal", dtype)
    return _truncated_normal(
        data, lower, upper, shape=opt_shape("truncated_normal", shape), dtype=dt
    )


@sampler_jit(static_argnames=("shape", "dtype"))
def _exponential(key, shape, dtype):
    u = uniform_impl(key, shape, dtype, 0.0, 1.0)
    return lax.neg(lax.log1p(lax.neg(u)))


def exponential(key, shape=(), dtype=None):
    """Exponential(1) samples: -log1p(-u)."""
    data, _ = check_key("exponential", key)
    dt = float_dtype("exponential", dtype)
    return _exponential(data, shape=canonical_shape("exponential", shape), dtype=dt)


def exponential_impl(key, shape, dtype):
    return _exponential(key, shape=shape, dtype=dtype)


@sampler_jit(static_argnames=("shape", "dtype"))
def _laplace(key, shape, dtype):
    lo = -1.0 + finfo(dtype).epsneg
    u = uniform_impl(key, shape, dtype, lo, 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def laplace(key, shape=(), dtype=None):
    """Laplace(0, 1) samples."""
    data, _ = check_key("laplace", key)
    dt = float_dtype("laplace", dtype)
    return _laplace(data, shape=canonical_shape("laplace", shape), dtype=dt)


@sampler_jit(static_argnames=("shape", "dtype"))
def _logistic(key, shape, dtype):
    x = uniform_impl(key, shape, dtype, finfo(dtype).tiny, 1.0)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def logistic(key, shape=(), dtype=None):
    """Logistic samples: log(u) - log1p(-u)."""
    data, _ = check_key("logistic", key)
    dt = float_dtype("logistic", dtype)
    return _logistic(data, shape=canonical_shape("logistic", shape), dtype=dt)


_U32 = np.dtype(np.uint32)


def _u32(v):
    return np.array(v, _U32)


def _safe_int_to_float(hi, lo):
    """The float32 in (0, 1) whose bits are the 64-bit fixed-point fraction `hi:lo`, rounded
    down to 24 significant bits (JAX's `_safe_int_to_float`: no bits lost near 0)."""
    info = finfo(np.float32)
    hiclz, loclz = lax.clz(hi), lax.clz(lo)
    hi_zero = jnp.equal(hiclz, _u32(32))
    from_lo = jnp.where(
        hi_zero,
        lax.shift_left(lo, loclz),
        lax.shift_right_logical(lo, jnp.subtract(_u32(32), hiclz)),
    )
    mantissa = lax.bitwise_or(lax.shift_left(hi, hiclz), from_lo)
    mantissa = lax.shift_right_logical(mantissa, _u32(info.bits - info.nmant - 1))
    mantissa = lax.bitwise_and(mantissa, _u32((1 << info.nmant) - 1))
    lead = jnp.where(hi_zero, jnp.add(_u32(32), loclz), hiclz)
    exp = lax.shift_left(jnp.subtract(_u32(-info.minexp), lead), _u32(info.nmant))
    exp = lax.bitwise_and(exp, _u32((1 << (info.bits - 2)) - (1 << (info.nmant - 1))))
    return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.float32)


def _gumbel_highest_f32(key, shape):
    """JAX's float32 mode="highest": 64 random bits per value; values below 1/2 go through
    log1p of the exact complement `1 - u` (two's complement of the 64-bit fraction)."""
    both = bits_impl(key, 32, (2, *shape))
    hi, lo = both[0], both[1]
    neg_hi, neg_lo = lax.bitwise_not(hi), lax.bitwise_not(lo)
    carry = lax.convert_element_type(jnp.equal(neg_lo, _u32(0xFFFFFFFF)), _U32)
    neg_hi = lax.add(neg_hi, carry)
    neg_lo = lax.add(neg_lo, lax.full(tuple(neg_lo.shape), 1, _U32))
    flip = jnp.less(hi, _u32(1 << 31))
    x = _safe_int_to_float(jnp.where(flip, hi, neg_hi), jnp.where(flip, lo, neg_lo))
    low_half = jnp.negative(jnp.log(jnp.negative(jnp.log1p(jnp.negative(x)))))
    high_half = jnp.negative(jnp.log(jnp.negative(jnp.log(x))))
    return jnp.where(flip, low_half, high_half)


def _high_bias(info) -> float:
    """What mode="high" adds to `high + 2**-nmant * low` below 1/2: jax.random added
    `finfo.tiny` up to jax 0.11.0 and `max(2**-(2 * nmant + 1), tiny)` from 0.11.1 on (it
    truncates the distribution instead of leaving a jump at u = 0); purejit follows the jax
    it is installed with, so the bits match it."""
    if versions.jax_release() >= (0, 11, 1):
        return max(2.0 ** -(2 * info.nmant + 1), float(info.tiny))
    return float(info.tiny)


def gumbel_impl(key, shape, dtype, mode):
    info = finfo(dtype)
    if mode == "highest" and np.dtype(dtype) == np.float32:
        return _gumbel_highest_f32(key, shape)
    if mode in ("high", "highest"):
        both = uniform_impl(key, (2, *shape), dtype, 0.0, 1.0)
        high, low = both[0], both[1]
        tail = jnp.add(jnp.add(high, jnp.multiply(2.0**-(info.nmant), low)), _high_bias(info))
        x = jnp.where(high >= 0.5, high, tail)
        return jnp.negative(jnp.log(jnp.negative(jnp.log1p(jnp.negative(x)))))
    u = uniform_impl(key, shape, dtype, info.tiny, 1.0)
    return jnp.negative(jnp.log(jnp.negative(jnp.log(u))))


@sampler_jit(static_argnames=("shape", "dtype", "mode"))
def _gumbel(key, shape, dtype, mode):
    return gumbel_impl(key, shape, dtype, mode)


def _gumbel_mode(mode):
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return mode


def gumbel(key, shape=(), dtype=None, mode=None):
    """Gumbel samples: -log(-log(u)) (mode "low"), or with more bits near 1 ("high")."""
    data, _ = check_key("gumbel", key)
    dt = float_dtype("gumbel", dtype)
    shape = canonical_shape("gumbel", shape)
    return _gumbel(data, shape=shape, dtype=dt, mode=_gumbel_mode(mode))


# ---- discrete ---------------------------------------------------------------------------------


def _p_dtype(p) -> np.dtype:
    if isinstance(p, (bool, int, float)):
        return pdt.default_float() if isinstance(p, float) else np.dtype(type(p))
    return np.dtype(p.dtype) if hasattr(p, "dtype") else np.asarray(p).dtype


@sampler_jit(static_argnames=("shape", "mode"))
def _bernoulli(key, p, shape, mode):
    if shape is None:
        shape = tuple(p.shape)
    else:
        check_param_shapes("bernoulli", shape, tuple(p.shape))
    dtype = p.dtype
    if mode == "high":
        both = uniform_impl(key, (2, *shape), dtype, 0.0, 1.0)
        u1, u2 = both[0], both[1]
        u2 = jnp.multiply(u2, 2.0 ** -finfo(dtype).nmant)
        return jnp.less(u2, jnp.subtract(p, u1))
    return jnp.less(uniform_impl(key, shape, dtype, 0.0, 1.0), p)


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability `p` (a float, broadcast to `shape`)."""
    data, _ = check_key("bernoulli", key)
    dt = pdt.canonicalize(_p_dtype(p))
    if not (dt.kind == "f" or dt == pdt.bfloat16):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    p = lax.convert_element_type(p, dt)
    return _bernoulli(data, p, shape=opt_shape("bernoulli", shape), mode=mode)


@sampler_jit(static_argnames=("shape", "dtype"))
def _rademacher(key, shape, dtype):
    p = lax.convert_element_type(0.5, pdt.default_float())
    b = lax.convert_element_type(_bernoulli(key, p, shape=shape, mode="low"), dtype)
    return lax.convert_element_type(jnp.subtract(jnp.multiply(2, b), 1), dtype)


def rademacher(key, shape=(), dtype=None):
    """-1 or +1 with equal probability."""
    data, _ = check_key("rademacher", key)
    dt = pdt.canonicalize(np.dtype(int if dtype is None else dtype))
    return _rademacher(data, shape=canonical_shape("rademacher", shape), dtype=dt)


@sampler_jit(static_argnames=("shape", "batch_shape", "axis", "replace", "mode"))
def _categorical(key, logits, shape, batch_shape, axis, replace, mode):
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= logits.ndim
        logits_shape = list(shape[len(shape) - len(batch_shape) :])
        logits_shape.insert(axis % logits.ndim, logits.shape[axis])
        g = gumbel_impl(key, (*prefix, *logits_shape), logits.dtype, mode)
        x = jnp.add(g, lax.expand_dims(logits, tuple(range(len(prefix)))))
        return jnp.argmax(x, axis=axis)
    logits = jnp.add(logits, gumbel_impl(key, tuple(logits.shape), logits.dtype, mode))
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(
            f"Number of samples without replacement ({k}) cannot exceed number of "
            f"categories ({logits.shape[axis]})."
        )
    _, indices = lax.top_k(jnp.moveaxis(logits, axis, -1), k)
    dims = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax.reshape(indices, shape, dims)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Indices drawn with probabilities softmax(logits) along `axis` (the Gumbel-max trick).

    Args:
        key: a PRNG key.
        logits: unnormalised log-probabilities.
        axis: the categories' axis.
        shape: the result shape; must end with the logits' batch shape.
        replace: draw with replacement (default) or without (Gumbel top-k).
        mode: the gumbel mode, "low" (default) or "high".
    Returns:
        int32 indices of `shape`.
    """
    data, _ = check_key("categorical", key)
    logits = jnp.asarray(logits)
    axis = operator.index(axis)
    batch_shape = tuple(np.delete(np.array(logits.shape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = canonical_shape("categorical", shape)
        check_param_shapes("categorical", shape, batch_shape)
    return _categorical(
        data,
        logits,
        shape=shape,
        batch_shape=batch_shape,
        axis=axis,
        replace=bool(replace),
        mode=_gumbel_mode(mode),
    )


def _convert_and_clip_integer(val, dtype):
    """`val` converted to the integer `dtype`, clipped to its range instead of wrapping."""
    dtype = np.dtype(dtype)
    vi, di = np.iinfo(val.dtype), np.iinfo(dtype)
    lo = np.array(max(di.min, vi.min), val.dtype)
    hi = np.array(min(di.max, vi.max), val.dtype)
    return lax.convert_element_type(jnp.clip(val, lo, hi), dtype)


def _as_int(x):
    x = jnp.asarray(x)
    return x if x.dtype.kind in "iu" else x.astype(pdt.default_int())


@sampler_jit(static_argnames=("shape", "dtype"))
def _randint(key, minval, maxval, shape, dtype):
    check_param_shapes("randint", shape, tuple(minval.shape), tuple(maxval.shape))
    minval, maxval = _as_int(minval), _as_int(maxval)
    top = _convert_and_clip_integer(jnp.asarray(np.array(np.iinfo(dtype).max, dtype)), maxval.dtype)
    maxval_out_of_range = lax.gt(maxval, top)
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    minval = jnp.reshape(minval, (1,) * (len(shape) - minval.ndim) + tuple(minval.shape))
    maxval = jnp.reshape(maxval, (1,) * (len(shape) - maxval.ndim) + tuple(maxval.shape))
    nbits = np.iinfo(dtype).bits
    k1, k2 = split_n(key, 2)
    higher = bits_impl(k1, nbits, shape)
    lower = bits_impl(k2, nbits, shape)
    udt = np.dtype(f"uint{nbits}")
    span = lax.convert_element_type(jnp.subtract(maxval, minval), udt)
    span = jnp.where(jnp.less_equal(maxval, minval), np.array(1, udt), span)
    span = jnp.where(
        jnp.logical_and(maxval_out_of_range, jnp.greater(maxval, minval)),
        lax.add(span, np.array(1, udt)),
        span,
    )
    multiplier = lax.rem(np.array(2 ** (nbits // 2), udt), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = jnp.add(jnp.multiply(lax_rem(higher, span), multiplier), lax_rem(lower, span))
    offset = lax_rem(offset, span)
    return jnp.add(minval, lax.convert_element_type(offset, dtype))


def lax_rem(a, b):
    """lax.rem with NumPy broadcasting (unsigned operands: no sign cases)."""
    a, b = jnp.broadcast_arrays(a, b)
    return lax.rem(a, b)


def randint(key, shape, minval, maxval, dtype=None):
    """Integers uniform in [minval, maxval), JAX's algorithm: bounds are clipped to the
    dtype's range, `maxval <= minval` gives `minval`, and bounds may be traced.

    Args:
        key: a PRNG key.
        shape: the result shape.
        minval, maxval: integer bounds (arrays broadcast-compatible with `shape`).
        dtype: an integer dtype (default int32, int64 with x64).
    Returns:
        An array of `shape` and `dtype`.
    """
    data, _ = check_key("randint", key)
    dt = int_dtype("randint", dtype)
    shape = canonical_shape("randint", shape)
    info = np.iinfo(dt)
    sampling = dt
    if info.bits < 32:
        sampling = np.dtype(np.int32)
        i32 = np.dtype(np.int32)
        minval = jnp.clip(jnp.asarray(minval).astype(i32), int(info.min), int(info.max))
        maxval = jnp.clip(jnp.asarray(maxval).astype(i32), int(info.min), int(info.max) + 1)
    out = _randint(data, jnp.asarray(minval), jnp.asarray(maxval), shape=shape, dtype=sampling)
    return out.astype(dt)


# ---- permutations and choice ------------------------------------------------------------------


def shuffle_impl(key, x, axis: int):
    """JAX's shuffle: sort by fresh 32-bit keys, for as many rounds as collisions need."""
    exponent = 3
    uint32max = np.iinfo(np.uint32).max
    num_rounds = int(np.ceil(exponent * np.log(max(1, x.size)) / np.log(uint32max)))
    for _ in range(num_rounds):
        key, subkey = split_n(key, 2)
        sort_keys = bits_impl(subkey, 32, tuple(x.shape))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


@sampler_jit(static_argnames=("axis",))
def _shuffle(key, x, axis):
    return shuffle_impl(key, x, axis)


@sampler_jit(static_argnames=("n",))
def _shuffle_range(key, n):
    return shuffle_impl(key, jnp.arange(n), 0)


@sampler_jit(static_argnames=("axis",))
def _permute_rows(key, x, axis):
    ind = shuffle_impl(key, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, ind, axis=axis)


def _concrete_int(name: str, x, what: str) -> int:
    if isinstance(x, Tracer):
        raise errors.ConcretizationTypeError(
            f"{name}: argument '{what}' must be a concrete integer, got a traced value"
            f"{user_line()}; make it static (static_argnums) or pass an array instead"
        )
    return operator.index(np.asarray(x).item())


def permutation(key, x, axis=0, independent=False):
    """A random permutation of `arange(x)` (int x), or of `x` along `axis`.

    Args:
        key: a PRNG key.
        x: an int, or an array to shuffle.
        axis: the axis to shuffle along.
        independent: shuffle every slice along `axis` independently.
    Returns:
        The shuffled array.
    """
    data, _ = check_key("permutation", key)
    if not np.ndim(x) and not (hasattr(x, "ndim") and x.ndim):
        dt = np.asarray(x).dtype if not hasattr(x, "dtype") else np.dtype(x.dtype)
        if dt.kind not in "iu":
            raise TypeError("x must be an integer or at least 1-dimensional")
        return _shuffle_range(data, n=_concrete_int("permutation", x, "x"))
    x = jnp.asarray(x)
    axis = operator.index(axis)
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis < x.ndim:
        raise ValueError(f"permutation: axis {axis} is out of bounds for {x.ndim}-d x{user_line()}")
    if independent or x.ndim == 1:
        return _shuffle(data, x, axis=axis)
    return _permute_rows(data, x, axis=axis)


def _searchsorted_left(sorted_1d, v):
    """The number of entries of the nondecreasing `sorted_1d` below each `v`."""
    below = jnp.less(jnp.expand_dims(sorted_1d, tuple(range(v.ndim))), jnp.expand_dims(v, -1))
    return jnp.sum(below.astype(np.int32), axis=-1)


@sampler_jit(static_argnames=("shape", "n_inputs", "axis", "scalar"))
def _choice_uniform(key, arr, shape, n_inputs, axis, scalar):
    ind = _randint(key, jnp.asarray(0), jnp.asarray(n_inputs), shape=shape, dtype=pdt.default_int())
    return ind if scalar else jnp.take(arr, ind, axis=axis)


@sampler_jit(static_argnames=("n_draws", "n_inputs", "axis", "scalar"))
def _choice_no_replace(key, arr, n_draws, n_inputs, axis, scalar):
    if scalar:
        perm = shuffle_impl(key, jnp.arange(n_inputs), 0)
        return perm[:n_draws]
    if arr.ndim == 1:
        perm = shuffle_impl(key, arr, axis)
    else:
        perm = jnp.take(arr, shuffle_impl(key, jnp.arange(arr.shape[axis]), 0), axis=axis)
    idx = (slice(None),) * axis + (slice(n_draws),)
    return perm[idx]


@sampler_jit(static_argnames=("shape", "axis", "scalar", "replace", "mode"))
def _choice_p(key, arr, p, shape, axis, scalar, replace, mode):
    if replace:
        p_cuml = jnp.cumsum(p)
        r = jnp.multiply(p_cuml[-1], jnp.subtract(1, uniform_impl(key, shape, p.dtype, 0.0, 1.0)))
        ind = _searchsorted_left(p_cuml, r).astype(pdt.default_int())
    else:
        g = jnp.add(gumbel_impl(key, tuple(p.shape), p.dtype, mode), jnp.log(p))
        n_draws = math.prod(shape)
        ind = lax.top_k(g, n_draws)[1].astype(pdt.default_int())
    return ind if scalar else jnp.take(arr, ind, axis=axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """A random sample of `a` (an array, or `arange(a)` for an int) of `shape`.

    Args:
        key: a PRNG key.
        a: an int or an array to sample from (along `axis`).
        shape: the sample shape (a tuple).
        replace: sample with replacement.
        p: optional probabilities of the entries of `a`.
        axis: the axis of `a` to sample along.
        mode: the gumbel mode for `p` without replacement.
    Returns:
        The samples.
    """
    data, _ = check_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape argument of random.choice must be a sequence, got {shape}")
    shape = canonical_shape("choice", shape)
    arr = jnp.asarray(a)
    scalar = arr.ndim == 0
    if scalar:
        n_inputs = _concrete_int("choice", a, "a")
    else:
        axis = operator.index(axis)
        axis = axis + arr.ndim if axis < 0 else axis
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) "
            "when 'replace=False'"
        )
    if p is None:
        if replace:
            result = _choice_uniform(
                data, arr, shape=shape, n_inputs=n_inputs, axis=axis, scalar=scalar
            )
        else:
            result = _choice_no_replace(
                data, arr, n_draws=n_draws, n_inputs=n_inputs, axis=axis, scalar=scalar
            )
    else:
        p_arr = jnp.asarray(p)
        if p_arr.dtype.kind not in "fc" and p_arr.dtype != pdt.bfloat16:
            p_arr = p_arr.astype(pdt.default_float())
        if tuple(p_arr.shape) != (n_inputs,):
            raise ValueError(
                "p must be None or a 1D vector with the same size as a.shape[axis]. "
                f"p has shape {tuple(p_arr.shape)} and a.shape[axis] is {n_inputs}."
            )
        result = _choice_p(
            data,
            arr,
            p_arr,
            shape=shape,
            axis=axis,
            scalar=scalar,
            replace=bool(replace),
            mode=_gumbel_mode(mode),
        )
    out_shape = shape if scalar else arr.shape[:axis] + shape + arr.shape[axis + 1 :]
    return result.reshape(out_shape)
