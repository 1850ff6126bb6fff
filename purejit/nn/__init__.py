"""purejit.nn: activation functions and friends, with jax.nn's names, defaults and numerics.

Everything here is composed from purejit.numpy, so it runs eagerly and under jit alike.
"""

from __future__ import annotations

import functools

import numpy as np

from purejit import dtypes as pdt
from purejit import numpy as jnp
from purejit.tracing import bind1
from purejit.numpy._shape import normalize_axes
from purejit.custom_derivatives import custom_jvp
from purejit.fused_attention import trust_softmax
from purejit.lax import erfc, stop_gradient

__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "mish", "one_hot",
    "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus",
    "squareplus", "standardize", "swish", "tanh",
]  # fmt: skip


def _inexact(x):
    return jnp.convert_inexact(jnp.asarray(x))


def _const(v, like):
    """A weakly typed scalar, so it takes `like`'s dtype."""
    return jnp.convert(np.array(v, like.dtype), like.dtype, weak=True)


def identity(x):
    """Returns x unchanged."""
    return jnp.asarray(x)


@custom_jvp
def _relu(x):
    return jnp.maximum(x, _const(0, x))


# as JAX: the derivative at 0 is 0
_relu.defjvps(lambda g, ans, x: jnp.where(jnp.greater(x, 0), g, jnp.zeros_like(g)))


def relu(x):
    """max(x, 0); its derivative at 0 is 0, as in JAX."""
    return _relu(jnp.asarray(x))


@custom_jvp
def _relu6(x):
    return jnp.minimum(jnp.maximum(x, _const(0, x)), _const(6, x))


_relu6.defjvps(
    lambda g, ans, x: jnp.where(
        jnp.logical_and(jnp.greater(x, 0), jnp.less(x, 6)), g, jnp.zeros_like(g)
    )
)


def relu6(x):
    """min(max(x, 0), 6); its derivative at 0 and 6 is 0, as in JAX."""
    return _relu6(jnp.asarray(x))


def sigmoid(x):
    """1 / (1 + exp(-x)) (XLA's `logistic`)."""
    return bind1("logistic", _inexact(x))


def silu(x):
    """x * sigmoid(x)."""
    x = _inexact(x)
    return jnp.multiply(x, sigmoid(x))


swish = silu


def tanh(x):
    """Hyperbolic tangent."""
    return jnp.tanh(x)


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit: tanh approximation by default, exact (erfc) otherwise;
    written as jax.nn's (x ** 3, erfc), so values and derivatives round as JAX's."""
    x = _inexact(x)
    if approximate:
        cube = jnp.power(x, 3)  # integer_pow: its derivative is 3 x^2, not a product rule
        inner = jnp.multiply(np.sqrt(2 / np.pi).astype(x.dtype),
                             jnp.add(x, jnp.multiply(0.044715, cube)))  # fmt: skip
        cdf = jnp.multiply(0.5, jnp.add(1.0, jnp.tanh(inner)))
        out = jnp.multiply(x, cdf)
    else:
        sqrt_half = np.sqrt(0.5).astype(x.dtype)
        out = jnp.multiply(jnp.multiply(0.5, x), erfc(jnp.multiply(jnp.negative(x), sqrt_half)))
    return jnp.convert(out, out.dtype)  # strongly typed, as in JAX


def softplus(x):
    """log(1 + exp(x)) = logaddexp(x, 0), as jax.nn's: stable, and its derivative is JAX's
    logaddexp rule exp(x - softplus(x)) (sigmoid(x), 1/2 at 0)."""
    return jnp.logaddexp(x, 0)


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x)."""
    return jnp.negative(softplus(jnp.negative(_inexact(x))))


def elu(x, alpha=1.0):
    """x if x > 0 else alpha * (exp(x) - 1)."""
    x = _inexact(x)
    pos = jnp.greater(x, _const(0, x))
    safe = jnp.where(pos, _const(0, x), x)
    return jnp.where(pos, x, jnp.multiply(alpha, jnp.expm1(safe)))


def celu(x, alpha=1.0):
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha)."""
    x = _inexact(x)
    neg = jnp.true_divide(jnp.minimum(x, _const(0, x)), alpha)
    return jnp.add(jnp.maximum(x, _const(0, x)), jnp.multiply(alpha, jnp.expm1(neg)))


def selu(x):
    """Scaled ELU with the self-normalising constants."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return jnp.multiply(scale, elu(x, alpha))


def leaky_relu(x, negative_slope=0.01):
    """x if x >= 0 else negative_slope * x."""
    x = _inexact(x)
    return jnp.where(jnp.greater_equal(x, _const(0, x)), x, jnp.multiply(negative_slope, x))


def hard_tanh(x):
    """x clipped to [-1, 1]."""
    x = jnp.asarray(x)
    return jnp.where(jnp.greater(x, 1), _const(1, x),
                     jnp.where(jnp.less(x, -1), _const(-1, x), x))  # fmt: skip


def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    x = _inexact(x)
    return jnp.true_divide(relu6(jnp.add(x, _const(3, x))), _const(6, x))


def hard_silu(x):
    """x * hard_sigmoid(x)."""
    x = _inexact(x)
    return jnp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


def mish(x):
    """x * tanh(softplus(x))."""
    x = _inexact(x)
    return jnp.multiply(x, jnp.tanh(softplus(x)))


def soft_sign(x):
    """x / (|x| + 1)."""
    x = _inexact(x)
    return jnp.true_divide(x, jnp.add(jnp.abs(x), _const(1, x)))


def squareplus(x, b=4):
    """(x + sqrt(x^2 + b)) / 2, with x^2 a `square` as in jax.nn (x * x would add its two
    cotangents to x's separately, rounding derivatives differently)."""
    x, b = jnp.asarray(x), jnp.asarray(b)
    return jnp.true_divide(jnp.add(x, jnp.sqrt(jnp.add(jnp.square(x), b))), 2)


def glu(x, axis: int = -1):
    """Gated linear unit: a * sigmoid(b) for the two halves a, b of `axis`."""
    a, b = jnp.split(jnp.asarray(x), 2, axis=axis)
    return jnp.multiply(a, sigmoid(b))


# ---- normalisations along an axis -----------------------------------------------------------


def _masked(x, where, fill):
    return x if where is None else jnp.where(where, x, _const(fill, x))


def _max_keep(x, axis, where):
    """max over `axis` (keepdims) that ignores masked elements; -inf for an empty reduction."""
    m = jnp.max(_masked(x, where, -np.inf), axis=axis, keepdims=True)
    return m


def softmax(x, axis=-1, where=None):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the max for stability; its JVP is
    y * (t - sum(y * t)), as JAX's."""
    x = _inexact(x)
    if where is None:
        return _softmax(x, axis)
    return _softmax_where(x, axis, where)


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x, axis):
    return _softmax_where(x, axis, None)


trust_softmax(_softmax)  # the attention rewrite may fuse it (purejit/fused_attention.py)


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
    (x,), (t,) = primals, tangents
    y = _softmax(x, axis)
    return y, jnp.multiply(
        y, jnp.subtract(t, jnp.sum(jnp.multiply(y, t), axis=axis, keepdims=True))
    )


def _softmax_where(x, axis, where):
    # masked lanes enter as -inf, so exp gives 0 and their gradient stops at the select
    x_safe = _masked(x, where, -np.inf)
    unnormalized = jnp.exp(jnp.subtract(x_safe, stop_gradient(_max_keep(x, axis, where))))
    unnormalized = _masked(unnormalized, where, 0)
    out = jnp.true_divide(unnormalized, jnp.sum(unnormalized, axis=axis, keepdims=True))
    return _masked(out, where, 0)


def log_softmax(x, axis=-1, where=None):
    """x - logsumexp(x) along `axis`, computed stably.

    With `where`, masked lanes are -inf before the shift (as in jax.nn), so a row with every
    lane masked has gradient 0: the cotangent 0 / 0 of its empty log-sum stops at that select
    instead of meeting exp(+inf)."""
    x = _inexact(x)
    x_safe = _masked(x, where, -np.inf)
    shifted = jnp.subtract(x_safe, stop_gradient(_max_keep(x, axis, where)))
    e = _masked(jnp.exp(shifted), where, 0)
    out = jnp.subtract(shifted, jnp.log(jnp.sum(e, axis=axis, keepdims=True)))
    return _masked(out, where, -np.inf)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):  # fmt: skip
    """log(sum(b * exp(a))) along `axis`, computed stably (as jax.nn.logsumexp).

    Args:
        a: the input.
        axis: the reduced axes (all by default).
        b: optional scale factors, broadcast against `a`.
        keepdims: keep the reduced axes with size 1.
        return_sign: also return the sign of the sum (then the result is log|sum|).
        where: optional mask of the elements to include.
    Returns:
        The result, or (result, sign) when return_sign.
    """
    if b is not None:
        a, b = jnp.promote_args("logsumexp", a, b, to_inexact=True)
        a = jnp.where(jnp.not_equal(b, 0), a, _const(-np.inf, a))
    else:
        a = _inexact(a)
    dims = normalize_axes(axis, a.ndim, "logsumexp")
    amax = jnp.max(_masked(a, where, -np.inf), axis=dims, keepdims=True)
    amax = stop_gradient(jnp.where(jnp.isfinite(amax), amax, _const(0, amax)))
    e = jnp.exp(jnp.subtract(a, amax))
    if b is not None:
        e = jnp.multiply(e, b)
    s = jnp.sum(_masked(e, where, 0), axis=dims, keepdims=True)
    sign = jnp.sign(s)
    out = jnp.add(jnp.log(jnp.abs(s)), amax)
    if not keepdims:
        out, sign = jnp.squeeze(out, dims), jnp.squeeze(sign, dims)
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(jnp.less(sign, 0), _const(np.nan, out), out)
    return out


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """log(mean(exp(x))) along `axis`: logsumexp(x) - log(n), n counting only `where`.

    Args:
        x: the input.
        axis: the reduced axes (all by default).
        where: optional mask of the elements to include (and count).
        keepdims: keep the reduced axes with size 1.
    Returns:
        The result, in x's inexact dtype.
    """
    x = jnp.asarray(x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    if where is None:
        dims = normalize_axes(axis, x.ndim, "logmeanexp")
        count = jnp.asarray(int(np.prod([x.shape[d] for d in dims], dtype=np.int64)))
        count = jnp.convert(count, lse.dtype)
    else:
        mask = jnp.broadcast_to(jnp.asarray(where), x.shape)
        count = jnp.sum(mask, axis=axis, dtype=lse.dtype, keepdims=keepdims)
    return jnp.subtract(lse, jnp.log(count))


@custom_jvp
def _log1mexp(x):
    # log(-expm1(-x)) is exact near 0, log1p(-exp(-x)) for large x (Maechler's split at log 2)
    small = jnp.less(x, _const(np.log(2.0), x))
    return jnp.where(small, jnp.log(jnp.negative(jnp.expm1(jnp.negative(x)))),
                     jnp.log1p(jnp.negative(jnp.exp(jnp.negative(x)))))  # fmt: skip


_log1mexp.defjvps(lambda g, ans, x: jnp.divide(g, jnp.expm1(x)))


def log1mexp(x):
    """log(1 - exp(-x)), accurate for small and large x (undefined for x < 0)."""
    return _log1mexp(_inexact(x))


__all__ += ["log1mexp", "logmeanexp"]


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):  # fmt: skip
    """(x - mean) * rsqrt(variance + epsilon) along `axis`, as jax.nn.standardize.

    Args:
        x: the input.
        axis: the axes the statistics run over.
        mean, variance: the statistics, computed (with keepdims) when not given.
        epsilon: added to the variance.
        where: optional mask of the elements the statistics count.
        algorithm: "fast", E[x^2] - E[x]^2 clipped at 0 (it can round below 0), or "stable",
            E[(x - E[x])^2].
    Returns:
        The standardized array.
    """
    x = jnp.asarray(x)
    if mean is None:
        mean = jnp.mean(x, axis=axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            sq = jnp.square(jnp.subtract(x, mean))
            variance = jnp.mean(sq, axis=axis, keepdims=True, where=where)
        elif algorithm == "fast":
            sq = jnp.mean(jnp.square(x), axis=axis, keepdims=True, where=where)
            variance = jnp.clip(jnp.subtract(sq, jnp.square(mean)), 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return jnp.multiply(jnp.subtract(x, mean), jnp.rsqrt(jnp.add(variance, epsilon)))


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
    """A one-hot encoding of integer `x`: a new axis of size num_classes (float32 default)."""
    x = jnp.asarray(x)
    out_ndim = x.ndim + 1
    ax = axis % out_ndim if -out_ndim <= axis < out_ndim else None
    if ax is None:
        raise ValueError(f"one_hot: axis {axis} out of range for a result of rank {out_ndim}")
    lhs = jnp.expand_dims(x, ax)
    shape = list(lhs.shape)
    shape[ax] = int(num_classes)
    classes = bind1("iota", shape=tuple(shape), dtype=x.dtype, dimension=ax)
    hot = jnp.equal(jnp.broadcast_to(lhs, shape), classes)
    dt = pdt.default_float() if dtype is None else pdt.canonicalize(dtype)
    return jnp.convert(hot, dt)


# ---- pooling (flax.linen's signatures: inputs are (batch..., spatial..., features)) --------

from purejit.lax.windowed import reduce_window as _reduce_window  # noqa: E402


def _pool(name, inputs, init, reduce_fn, window_shape, strides, padding):
    x = jnp.asarray(inputs)
    window_shape = tuple(int(w) for w in window_shape)
    nbatch = x.ndim - (len(window_shape) + 1)
    strides = tuple(int(s) for s in strides) if strides is not None else (1,) * len(window_shape)
    if len(strides) != len(window_shape):
        raise ValueError(
            f"{name}: strides {strides} and window_shape {window_shape} differ in length"
        )
    single = nbatch == 0
    if single:
        x, nbatch = jnp.expand_dims(x, 0), 1
    if nbatch < 0:
        raise ValueError(
            f"{name}: inputs {x.shape} need a features axis after the {len(window_shape)} "
            "spatial axes of window_shape"
        )
    dims = (1,) * nbatch + window_shape + (1,)
    strides = (1,) * nbatch + strides + (1,)
    if not isinstance(padding, str):
        padding = tuple(tuple(int(p) for p in pair) for pair in padding)
        if len(padding) != len(window_shape):
            raise ValueError(f"{name}: padding {padding} needs a pair per window dimension")
        padding = ((0, 0),) * nbatch + padding + ((0, 0),)
    y = _reduce_window(x, init(x.dtype), reduce_fn, dims, strides, padding)
    return jnp.squeeze(y, 0) if single else y


def _lowest(dt):
    return np.array(-np.inf if pdt.is_inexact(dt) else np.iinfo(dt).min, dt)


def _highest(dt):
    return np.array(np.inf if pdt.is_inexact(dt) else np.iinfo(dt).max, dt)


def max_pool(inputs, window_shape, strides=None, padding="VALID"):
    """Max pooling, as `flax.linen.max_pool`.

    Args:
        inputs: (batch..., spatial..., features); without batch axes one is added and removed.
        window_shape: the window's size per spatial axis.
        strides: the step per spatial axis (default 1).
        padding: "SAME", "VALID" or a (low, high) pair per spatial axis (padded with -inf).
    """
    return _pool("max_pool", inputs, _lowest, jnp.maximum, window_shape, strides, padding)


def min_pool(inputs, window_shape, strides=None, padding="VALID"):
    """Min pooling, as `flax.linen.min_pool` (arguments as `max_pool`)."""
    return _pool("min_pool", inputs, _highest, jnp.minimum, window_shape, strides, padding)


def avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
    """Average pooling, as `flax.linen.avg_pool`.

    Args:
        inputs, window_shape, strides, padding: as `max_pool` (padding adds zeros).
        count_include_pad: divide by the full window size; False divides by the number of
            elements of the unpadded input in each window.
    """
    x = jnp.asarray(inputs)
    zero = lambda dt: np.array(0, dt)  # noqa: E731
    y = _pool("avg_pool", x, zero, jnp.add, window_shape, strides, padding)
    if count_include_pad:
        return jnp.divide(y, float(np.prod(window_shape)))
    div_shape = x.shape[:-1] + (1,)
    if len(div_shape) - 2 == len(window_shape):
        div_shape = (1,) + div_shape[1:]
    ones = jnp.ones(div_shape, y.dtype)
    return jnp.divide(y, _pool("avg_pool", ones, zero, jnp.add, window_shape, strides, padding))


__all__ += ["avg_pool", "max_pool", "min_pool"]
from purejit.nn import initializers  # noqa: E402, F401  (jax.nn.initializers)


def sparse_plus(x):
    """0 below -1, x above 1, (x + 1)**2 / 4 between (a smooth, sparse softplus)."""
    x = jnp.asarray(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x):
    """The derivative of `sparse_plus`: 0.5 * clip(x + 1, 0, 2)."""
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


__all__ += ["sparse_plus", "sparse_sigmoid"]


from purejit.nn.attention import dot_product_attention  # noqa: E402  (jax.nn's)

__all__ += ["dot_product_attention"]

from purejit.nn.scaled import (  # noqa: E402  (jax.nn's block-scaled matmuls)
    get_scaled_dot_general_config,
    scaled_dot_general,
    scaled_matmul,
)

__all__ += ["get_scaled_dot_general_config", "scaled_dot_general", "scaled_matmul"]
