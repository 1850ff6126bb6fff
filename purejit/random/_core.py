"""Keys (`key`, `PRNGKey`, `split`, `fold_in`, ...), `bits`, `uniform` and `normal`, and the
argument checks every sampler shares.

Each public function checks its arguments on the host (static shapes and dtypes, the key),
then calls one `jit`-compiled implementation with the shape and dtype static, as JAX does:
eagerly that is one program per (shape, dtype), and under an outer `jit` it is inlined. The
implementations (`*_impl`) take raw key data `uint32[2]` and are traceable building blocks
for the other samplers.
"""

from __future__ import annotations

import functools
import operator

import ml_dtypes
import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit import lax
from purejit.api import jit
from purejit.ir.ops._xla_refs import _next_after as _host_next_after
from purejit.random import _threefry
from purejit.random._keys import (
    IMPL,
    KEY_DTYPE,
    KeyDType,
    PRNGKeyArray,
    check_key,
    check_key_data,
    resolve_impl,
    seed_array,
)
from purejit.tracing import Tracer

_U32 = np.dtype(np.uint32)


def user_line() -> str:
    """` (at file:line)` naming the user's line, for error messages."""
    return errors.at(errors.user_location())


def shape_of(x) -> tuple[int, ...]:
    """The shape of an array or of a Python scalar/sequence argument."""
    return tuple(x.shape) if hasattr(x, "shape") else tuple(np.shape(x))


# ---- argument checks -----------------------------------------------------------------------


def canonical_shape(name: str, shape, arg: str = "shape") -> tuple[int, ...]:
    """`shape` as a tuple of static ints, or an error naming `name`, `arg` and the line."""
    if isinstance(shape, (Tracer,)) or any(isinstance(d, Tracer) for d in _iter(shape)):
        raise TypeError(
            f"{name}: argument '{arg}' must be a tuple of static Python ints, got a traced "
            f"value{user_line()}; shapes are static: pass it as a static argument "
            "(jit(..., static_argnums=...)) or compute it from x.shape"
        )
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(
            f"{name}: argument '{arg}' must be a sequence of integers, got {shape!r}{user_line()}"
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: argument '{arg}' has a negative dimension: {dims}{user_line()}")
    return dims


def _iter(shape):
    try:
        return list(shape)
    except TypeError:
        return []


def float_dtype(name: str, dtype, *, allow_complex: bool = False) -> np.dtype:
    """The canonical float dtype for `dtype` (None: the default float)."""
    dt = pdt.canonicalize(np.dtype(float if dtype is None else dtype))
    if not (dt.kind == "f" or dt == ml_dtypes.bfloat16 or (allow_complex and dt.kind == "c")):
        kind = "a float or complex" if allow_complex else "a float"
        raise ValueError(f"dtype argument to `{name}` must be {kind} dtype, got {dt}{user_line()}")
    return dt


def int_dtype(name: str, dtype) -> np.dtype:
    dt = pdt.canonicalize(np.dtype(int if dtype is None else dtype))
    if dt.kind not in "iu":
        raise TypeError(f"{name} only accepts integer dtypes, got {dt}{user_line()}")
    return dt


def check_param_shapes(name: str, shape, *param_shapes):
    """JAX's rule: parameters broadcast to exactly `shape`."""
    if param_shapes:
        out = tuple(np.broadcast_shapes(shape, *param_shapes))
        if out != tuple(shape):
            raise ValueError(
                f"{name} parameter shapes must be broadcast-compatible with shape argument, "
                "and the result of broadcasting the shapes must equal the shape argument, "
                f"but got result {out} for shape argument {tuple(shape)}{user_line()}."
            )


def opt_shape(name: str, shape) -> tuple[int, ...] | None:
    """A sampler's `shape=None` kept (the parameters decide), or the shape canonicalised."""
    return None if shape is None else canonical_shape(name, shape)


def param_shape(name: str, shape, *params) -> tuple[int, ...]:
    """JAX's `_check_broadcast_shapes`: the parameters' broadcast shape when `shape` is None,
    else `shape`, checked against them."""
    shapes = [shape_of(p) for p in params]
    if shape is None:
        return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    shape = canonical_shape(name, shape)
    check_param_shapes(name, shape, *shapes)
    return shape


def finfo(dtype):
    return ml_dtypes.finfo(dtype)


def returned_keys(data, typed: bool):
    return PRNGKeyArray(data) if typed else data


# ---- traceable building blocks on raw key data ----------------------------------------------


def split_n(key, n: int) -> list:
    """`n` keys from `key`, as a list (JAX's `k1, k2 = split(key)`); a batch of keys
    `[*batch, 2]` gives `n` batches (JAX's vmap of split)."""
    keys = _threefry.split(key, (n,))
    batch = tuple(key.shape[:-1])
    lo = (0,) * len(batch)
    return [
        lax.reshape(lax.slice(keys, (*lo, i, 0), (*batch, i + 1, 2)), (*batch, 2)) for i in range(n)
    ]


def bits_impl(key, bit_width: int, shape):
    return _threefry.random_bits(key, bit_width, tuple(shape))


def _broadcast_to_rank(x, rank: int):
    return x if x.ndim >= rank else lax.reshape(x, (1,) * (rank - x.ndim) + tuple(x.shape))


def uniform_impl(key, shape, dtype, minval, maxval):
    """JAX's `_uniform`, op for op: the top mantissa bits ORed with 1.0's exponent, bitcast,
    minus 1.0, scaled to [minval, maxval) and clamped below by minval. The same op sequence
    matters, not only the same values: XLA reassociates constant additions (`(x - 1) + c`),
    so another formula with equal intermediate values can still round differently."""
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    minval = _broadcast_to_rank(lax.convert_element_type(minval, dtype), len(shape))
    maxval = _broadcast_to_rank(lax.convert_element_type(maxval, dtype), len(shape))
    info = finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    if nbits not in (16, 32, 64):
        raise TypeError(f"uniform only accepts 16-, 32- or 64-bit float dtypes, got {dtype}")
    rng_bits = 8 if nmant < 8 else nbits
    bits = bits_impl(key, rng_bits, shape)
    uint = np.dtype(f"uint{nbits}")
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, uint)
    float_bits = lax.shift_right_logical(bits, np.array(rng_bits - nmant, uint))
    float_bits = lax.bitwise_or(float_bits, np.array(1.0, dtype).view(uint))
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), np.array(1.0, dtype))
    span = lax.sub(maxval, minval)
    return lax.max(minval, lax.add(lax.mul(floats, span), minval))


def normal_real_impl(key, shape, dtype):
    lo = _host_next_after(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform_impl(key, shape, dtype, lo, np.array(1.0, dtype))
    return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def normal_impl(key, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind != "c":
        return normal_real_impl(key, shape, dtype)
    real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    k_re, k_im = split_n(key, 2)
    re = lax.convert_element_type(normal_real_impl(k_re, shape, real), dtype)
    im = lax.convert_element_type(normal_real_impl(k_im, shape, real), dtype)
    z = lax.add(re, lax.mul(np.array(1j, dtype), im))
    return lax.div(z, np.array(np.sqrt(2), dtype))


# ---- compiled entry points -------------------------------------------------------------------


def sampler_jit(fun=None, *, static_argnames=()):
    """`jit` for the samplers' implementations: shape and dtype are static and change by
    design, so no recompilation warning."""
    if fun is None:
        return functools.partial(sampler_jit, static_argnames=static_argnames)
    return jit(fun, static_argnames=static_argnames, recompile_warn_after=0)


@sampler_jit
def _seed(s):
    return _threefry.seed(s)


@sampler_jit(static_argnames=("shape",))
def _split(key, shape):
    return _threefry.split(key, shape)


@sampler_jit
def _fold_in(key, data):
    return _threefry.fold_in(key, data)


@sampler_jit(static_argnames=("bit_width", "shape"))
def _bits(key, bit_width, shape):
    return bits_impl(key, bit_width, shape)


@sampler_jit(static_argnames=("shape", "dtype"))
def _uniform(key, minval, maxval, shape, dtype):
    return uniform_impl(key, shape, dtype, minval, maxval)


@sampler_jit(static_argnames=("shape", "dtype"))
def _normal(key, shape, dtype):
    return normal_impl(key, shape, dtype)


# ---- public API -----------------------------------------------------------------------------


def key(seed, *, impl=None, dtype=None):
    """A typed PRNG key (dtype `key<fry>`) from an integer seed.

    Args:
        seed: a 64- or 32-bit integer (Python int, NumPy or traced scalar).
        impl: optional implementation name; only "threefry2x32".
        dtype: optional key dtype or its name (the same choice as `impl`).
    Returns:
        A scalar key array for the samplers, `split` and `fold_in`.
    """
    if dtype is not None and impl is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to random.key")
    resolve_impl("key", impl if dtype is None else dtype)
    return PRNGKeyArray(_seed(seed_array("key", seed)))


def PRNGKey(seed, *, impl=None):
    """A raw key, uint32[2] = [seed >> 32, seed & 0xFFFFFFFF], from an integer seed."""
    resolve_impl("PRNGKey", impl)
    return _seed(seed_array("PRNGKey", seed))


def split(key, num: int | tuple[int, ...] = 2):
    """`num` new keys (an int or a shape) from one key, along new leading axes.

    Args:
        key: a typed or raw key.
        num: the number of keys, or their shape.
    Returns:
        Keys of shape `num` (typed if `key` is typed; raw uint32 data otherwise).
    """
    data, typed = check_key("split", key)
    shape = canonical_shape("split", num if isinstance(num, (tuple, list)) else (num,), "num")
    return returned_keys(_split(data, shape=shape), typed)


def fold_in(key, data):
    """A new key from `key` and the 32-bit integer `data`."""
    kd, typed = check_key("fold_in", key)
    if np.ndim(data) if not isinstance(data, Tracer) else data.ndim:
        raise TypeError(
            "fold_in accepts a scalar, but was given an array of shape "
            f"{tuple(np.shape(data))} != (){user_line()}. Use vmap or a loop for batching."
        )
    if isinstance(data, Tracer) or hasattr(data, "aval"):
        d = lax.convert_element_type(data, _U32)
    else:
        d = np.asarray(np.asarray(data).astype(np.int64) & 0xFFFFFFFF, _U32)
    return returned_keys(_fold_in(kd, d), typed)


def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers (default uint32; uint64 with x64)."""
    data, _ = check_key("bits", key)
    dt = pdt.canonicalize(np.dtype(np.uint64 if dtype is None else dtype))
    if dt.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    shape = canonical_shape("bits", shape)
    return _bits(data, bit_width=dt.itemsize * 8, shape=shape)


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval) of `shape` and float `dtype`."""
    data, _ = check_key("uniform", key)
    dt = float_dtype("uniform", dtype)
    shape = canonical_shape("uniform", shape)
    return _uniform(data, minval, maxval, shape=shape, dtype=dt)


def normal(key, shape=(), dtype=None):
    """Standard normal floats (or complex: independent real and imaginary halves)."""
    data, _ = check_key("normal", key)
    dt = float_dtype("normal", dtype, allow_complex=True)
    shape = canonical_shape("normal", shape)
    return _normal(data, shape=shape, dtype=dt)


def key_data(keys):
    """The uint32 data `(*keys.shape, 2)` under a typed key array (raw keys unchanged)."""
    data, _ = check_key("key_data", keys, allow_batched=True, arg="keys")
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """A typed key array over uint32 key data of shape `(..., 2)`."""
    if dtype is not None and impl is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to wrap_key_data")
    resolve_impl("wrap_key_data", impl if dtype is None else dtype)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError(f"wrap_key_data: the argument is already a typed key array{user_line()}")
    return PRNGKeyArray(check_key_data("wrap_key_data", key_bits_array, "key_bits_array"))


def key_impl(keys) -> str:
    """The name of the PRNG implementation behind `keys`: "threefry2x32"."""
    check_key("key_impl", keys, allow_batched=True, arg="keys")
    return IMPL


def key_dtype(impl=None) -> KeyDType:
    """The dtype of typed keys of `impl` (threefry2x32): `key<fry>`."""
    resolve_impl("key_dtype", impl)
    return KEY_DTYPE
