"""`lax.rng_bit_generator`: XLA's stateless RngBitGenerator, bit for bit, from purejit's ops.

JAX binds `rng_bit_generator_p`, which lowers to `stablehlo.rng_bit_generator` on a
`uint64[2]` state (a `uint32[4]` key bitcast: key = words 0-1, counter = words 2-3, low word
first). XLA expands that op into integer arithmetic (`xla/hlo/builder/lib/prng.cc`); purejit
writes the same arithmetic with its own ops, so the bits match on every backend and the
result has every rule (JVP, batching, lowering) of the ops it is made of:

* THREE_FRY: counters `state + i` over a row-major iota (64-bit, split low/high) hashed by
  Threefry-2x32 under the key's two words. 32-bit (and narrower) outputs split the shape in
  half on its first even dimension (or its largest), hash the half, and interleave the two
  hashed words along a new axis after it; the counter advances by the half's size. 64-bit
  outputs hash the whole shape and join `lo | hi << 32`. 8- and 16-bit outputs are the
  32-bit ones truncated.
* PHILOX (Philox-4x32, 10 rounds): 128-bit counters for `ceil(n / 4)` blocks, the state's
  counter `+ i` as the low half and the key (plus the low half's carry) as the high half,
  each block giving 4 consecutive words; the counter advances by the number of blocks and
  wraps without touching the key.
* DEFAULT is XLA's per-backend choice: PHILOX on CPU (checked against JAX). On other
  platforms purejit has not checked XLA's choice, so DEFAULT raises there, naming the
  algorithms to pass instead.

Unlike JAX's batching rule (which draws every lane's bits from the first key), a vmapped
call draws each lane from its own key, as the unbatched call would.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from purejit.backend import pjrt
from purejit.config import config
from purejit.lax import elementwise as el
from purejit.lax import ops
from purejit.lax._lift import lift
from purejit.tracing import bind

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_OUT_DTYPES = tuple(np.dtype(f"uint{b}") for b in (8, 16, 32, 64))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)


class RandomAlgorithm(enum.IntEnum):
    """The algorithm of `rng_bit_generator` (JAX's `lax.RandomAlgorithm`)."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self) -> str:
        return self.name


def _u32(v):
    return np.uint32(v & 0xFFFFFFFF)


def _add64(lo, hi, add_lo, add_hi):
    """(lo, hi) + (add_lo, add_hi) in 64-bit wrapping arithmetic on uint32 words."""
    s = el.add(lo, add_lo)
    carry = ops.convert_element_type(el.lt(s, lo), _U32)
    return s, el.add(el.add(hi, add_hi), carry)


def _counters(c_lo, c_hi, n: int):
    """The 64-bit counters `c + i`, i = 0 .. n-1, as (lo, hi) uint32 vectors."""
    if n > 2**32:
        raise NotImplementedError(
            f"rng_bit_generator: {n} counters in one call exceed the 2**32 purejit generates; "
            "draw in several calls"
        )
    i = ops.iota(_U32, n)
    return _add64(
        ops.broadcast_in_dim(c_lo, (n,), ()),
        ops.broadcast_in_dim(c_hi, (n,), ()),
        i,
        ops.full((n,), 0, _U32),
    )


def _threefry(k0, k1, x0, x1):
    n = x0.shape
    b = [ops.broadcast_in_dim(k, n, ()) for k in (k0, k1)]
    return tuple(bind("threefry2x32", b[0], b[1], x0, x1))


def _split_dim(shape: tuple[int, ...]) -> int:
    """XLA's halving axis: the first even dimension, else the largest (first of equals)."""
    for i, d in enumerate(shape):
        if d % 2 == 0:
            return i
    return max(range(len(shape)), key=lambda i: (shape[i], -i))


def _threefry_bits(words, shape, bits: int):
    k0, k1, c_lo, c_hi = words
    if bits == 64:
        n = math.prod(shape)
        lo, hi = _threefry(k0, k1, *_counters(c_lo, c_hi, n))
        wide = el.shift_left(ops.convert_element_type(hi, _U64), np.uint64(32))
        out = ops.reshape(el.bitwise_or(wide, ops.convert_element_type(lo, _U64)), shape)
        return out, _add64(c_lo, c_hi, _u32(n), _u32(n >> 32))
    if not shape:
        y0, _ = _threefry(k0, k1, *_counters(c_lo, c_hi, 1))
        out = ops.reshape(y0, ())
        if bits < 32:
            out = ops.convert_element_type(out, np.dtype(f"uint{bits}"))
        return out, _add64(c_lo, c_hi, np.uint32(1), np.uint32(0))
    d = _split_dim(shape)
    half = (*shape[:d], -(-shape[d] // 2), *shape[d + 1 :])
    n = math.prod(half)
    y0, y1 = _threefry(k0, k1, *_counters(c_lo, c_hi, n))
    # [..., ceil(d/2), 2, ...]: the two words side by side, then the pairs flattened back
    pair = (*half[: d + 1], 1, *half[d + 1 :])
    both = ops.concatenate([ops.reshape(y0, pair), ops.reshape(y1, pair)], d + 1)
    even = (*shape[:d], 2 * half[d], *shape[d + 1 :])
    out = ops.reshape(both, even)
    if even != shape:
        out = ops.slice(out, (0,) * len(shape), shape)
    if bits < 32:
        out = ops.convert_element_type(out, np.dtype(f"uint{bits}"))
    return out, _add64(c_lo, c_hi, _u32(n), _u32(n >> 32))


def _mul_hi_lo(x, m: int):
    """The high and low words of the 64-bit product of uint32 `x` and the constant `m`,
    from 16-bit limbs (so no 64-bit type is needed)."""
    m_lo, m_hi = np.uint32(m & 0xFFFF), np.uint32(m >> 16)
    mask = np.uint32(0xFFFF)
    x_lo, x_hi = el.bitwise_and(x, mask), el.shift_right_logical(x, np.uint32(16))
    ll, lh = el.mul(x_lo, m_lo), el.mul(x_lo, m_hi)
    hl, hh = el.mul(x_hi, m_lo), el.mul(x_hi, m_hi)
    mid = el.add(
        el.add(el.shift_right_logical(ll, np.uint32(16)), el.bitwise_and(lh, mask)),
        el.bitwise_and(hl, mask),
    )
    lo = el.bitwise_or(el.bitwise_and(ll, mask), el.shift_left(mid, np.uint32(16)))
    hi = el.add(
        el.add(hh, el.shift_right_logical(lh, np.uint32(16))),
        el.add(
            el.shift_right_logical(hl, np.uint32(16)), el.shift_right_logical(mid, np.uint32(16))
        ),
    )
    return hi, lo


def _philox(x, key):
    x = list(x)
    k0, k1 = key
    for _ in range(10):
        hi0, lo0 = _mul_hi_lo(x[0], _PHILOX_M[0])
        hi1, lo1 = _mul_hi_lo(x[2], _PHILOX_M[1])
        x = [
            el.bitwise_xor(el.bitwise_xor(hi1, x[1]), k0),
            lo1,
            el.bitwise_xor(el.bitwise_xor(hi0, x[3]), k1),
            lo0,
        ]
        k0, k1 = el.add(k0, np.uint32(_PHILOX_W[0])), el.add(k1, np.uint32(_PHILOX_W[1]))
    return x


def _philox_bits(words, shape, bits: int):
    k0, k1, c_lo, c_hi = words
    n = math.prod(shape)
    words_needed = 2 * n if bits == 64 else n
    blocks = -(-words_needed // 4)
    lo, hi = _counters(c_lo, c_hi, blocks)
    # the 128-bit counter's high half is the key itself, plus the carry out of the low half
    carry = ops.convert_element_type(el.lt(hi, ops.broadcast_in_dim(c_hi, (blocks,), ())), _U32)
    zero = ops.full((blocks,), 0, _U32)
    kb = [ops.broadcast_in_dim(k, (blocks,), ()) for k in (k0, k1)]
    top = _add64(kb[0], kb[1], carry, zero)
    out = _philox([lo, hi, *top], kb)
    # block j gives words 4j .. 4j+3
    flat = ops.reshape(
        ops.concatenate([ops.reshape(w, (blocks, 1)) for w in out], 1), (4 * blocks,)
    )
    if bits == 64:
        pairs = ops.reshape(ops.slice(flat, (0,), (2 * n,)), (n, 2))
        lo64 = ops.convert_element_type(ops.reshape(ops.slice(pairs, (0, 0), (n, 1)), (n,)), _U64)
        hi64 = ops.convert_element_type(ops.reshape(ops.slice(pairs, (0, 1), (n, 2)), (n,)), _U64)
        vals = el.bitwise_or(lo64, el.shift_left(hi64, np.uint64(32)))
    else:
        vals = ops.slice(flat, (0,), (n,))
        if bits < 32:
            vals = ops.convert_element_type(vals, np.dtype(f"uint{bits}"))
    return ops.reshape(vals, shape), _add64(c_lo, c_hi, _u32(blocks), np.uint32(0))


def _key_words(key):
    """The key as four uint32 scalars (key lo, key hi, counter lo, counter hi)."""
    if key.dtype == _U32 and key.shape == (4,):
        words = key
    elif key.dtype == _U64 and key.shape == (2,):
        lo = ops.convert_element_type(key, _U32)
        hi = ops.convert_element_type(el.shift_right_logical(key, np.uint64(32)), _U32)
        words = ops.reshape(
            ops.concatenate([ops.reshape(lo, (2, 1)), ops.reshape(hi, (2, 1))], 1), (4,)
        )
    else:
        raise TypeError(
            f"rng_bit_generator: the key must be uint32[4] (or uint64[2]), got "
            f"{key.dtype}{list(key.shape)}"
        )
    return [ops.reshape(ops.slice(words, (i,), (i + 1,)), ()) for i in range(4)]


def _join_key(key, k0, k1, c_lo, c_hi):
    words = ops.concatenate([ops.reshape(w, (1,)) for w in (k0, k1, c_lo, c_hi)], 0)
    if key.dtype == _U32:
        return words
    pairs = ops.reshape(words, (2, 2))
    lo = ops.convert_element_type(ops.reshape(ops.slice(pairs, (0, 0), (2, 1)), (2,)), _U64)
    hi = ops.convert_element_type(ops.reshape(ops.slice(pairs, (0, 1), (2, 2)), (2,)), _U64)
    return el.bitwise_or(lo, el.shift_left(hi, np.uint64(32)))


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):  # fmt: skip
    """Stateless random bits, as `jax.lax.rng_bit_generator` (XLA's RngBitGenerator).

    Args:
        key: the generator state, `uint32[4]` (or `uint64[2]` with x64): the algorithm's key
            and a counter.
        shape: the shape of the bits.
        dtype: uint8, uint16, uint32 or uint64.
        algorithm: a `RandomAlgorithm`; DEFAULT is PHILOX on CPU (elsewhere it raises).
        out_sharding: None (replicated bits; a sharding raises NotImplementedError).

    Returns:
        `(new_key, bits)`: the state with its counter advanced, and the bits.
    """
    if out_sharding is not None:
        raise NotImplementedError(
            "rng_bit_generator: out_sharding= is not supported by purejit; shard the bits "
            "afterwards with lax.with_sharding_constraint"
        )
    shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    dtype = np.dtype(dtype)
    if dtype not in _OUT_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}; use uint8/16/32/64")
    if dtype == _U64 and not config.enable_x64:
        raise TypeError(
            "rng_bit_generator: dtype uint64 needs 64-bit types; enable them with "
            "purejit.config.update('enable_x64', True) or draw uint32"
        )
    algorithm = RandomAlgorithm(algorithm)
    if algorithm == RandomAlgorithm.RNG_DEFAULT:
        platform = pjrt.platform()
        if platform != "cpu":
            raise NotImplementedError(
                f"rng_bit_generator: RNG_DEFAULT is XLA's choice for {platform!r}, which "
                "purejit has not matched; pass RandomAlgorithm.RNG_THREE_FRY or RNG_PHILOX "
                "(bit-identical to JAX's on every backend)"
            )
        algorithm = RandomAlgorithm.RNG_PHILOX
    key = lift(key)
    words = _key_words(key)
    make = _threefry_bits if algorithm == RandomAlgorithm.RNG_THREE_FRY else _philox_bits
    bits, (c_lo, c_hi) = make(words, shape, dtype.itemsize * 8)
    return _join_key(key, words[0], words[1], c_lo, c_hi), bits
