"""Threefry2x32 (Salmon et al., SC'11) from purejit's uint32 ops, in JAX's default layout.

Everything here works on raw key data, `uint32[..., 2]`; the hash is the `threefry2x32` IR op
(`ir/ops/random.py`), expanded into the same integer arithmetic JAX emits, so the bits are
JAX's by construction:

* `seed(s)`: `[s >> 32, s & 0xFFFFFFFF]` (the high word is 0 for 32-bit seeds);
* `hash(k1, k2, x1, x2)`: 20 rounds with rotations [13, 15, 26, 6] / [17, 29, 16, 24] and
  the key schedule `[k0, k1, k0 ^ k1 ^ 0x1BD11BDA]` injected every 4 rounds;
* the partitionable layout (JAX's default since 0.5): counters are a row-major 64-bit iota
  over the output shape, split into high and low words and hashed together; 32-bit random
  bits are `b1 ^ b2`; `split` keeps `(b1, b2)` as the new keys;
* `fold_in(key, d)` hashes the 64-bit counter pair `(0, d)` with the key.
"""

from __future__ import annotations

import math

import numpy as np

from purejit import lax
from purejit.tracing import bind

_U32 = np.dtype(np.uint32)


def hash(k1, k2, x1, x2):
    """Threefry2x32 of the counter pairs `(x1, x2)` under the keys `(k1, k2)`.

    All four are uint32 arrays whose shapes broadcast (keys are usually of a smaller shape);
    returns the two hashed words, of the broadcast shape. One `threefry2x32` op: the passes
    merge independent hashes (`merge_threefry`) and expand each into JAX's form
    (`expand_threefry`: the rolled loop on CPU for small hashes, the unrolled rounds
    otherwise), so XLA sees the integer arithmetic JAX emits."""
    return tuple(bind("threefry2x32", k1, k2, x1, x2))


def iota_2x32(shape: tuple[int, ...]):
    """The row-major 64-bit iota over `shape` as (high, low) uint32 words.

    Made from `iota` even for a scalar, so constant folding never sees constant counters
    (a constant draw would otherwise be folded with NumPy's transcendental functions)."""
    n = math.prod(shape)
    if n > 2**32:
        raise NotImplementedError(
            f"purejit.random: {n} values in one call (shape {shape}) exceed the 2**32 counters "
            "purejit generates; draw in several calls"
        )
    lo = lax.reshape(lax.iota(_U32, n), shape)
    hi = lax.full(shape, 0, _U32)
    return hi, lo


def _words(key, out_rank: int = 0):
    """The two key words, each of the key array's batch shape followed by `out_rank` ones
    (so a batch of keys hashes against a block of counters: JAX's vmap over keys)."""
    nd, batch = key.ndim, tuple(key.shape[:-1])
    shape = batch + (1,) * out_rank
    k1 = lax.reshape(lax.slice(key, (0,) * nd, (*batch, 1)), shape)
    k2 = lax.reshape(lax.slice(key, (0,) * (nd - 1) + (1,), (*batch, 2)), shape)
    return k1, k2


def _stack(a, b):
    return lax.concatenate([lax.expand_dims(a, (a.ndim,)), lax.expand_dims(b, (b.ndim,))], a.ndim)


def seed(s):
    """Key data `uint32[2]` from an integer scalar (a purejit array or tracer)."""
    hi = lax.convert_element_type(lax.shift_right_logical(s, np.array(32, s.dtype)), _U32)
    if s.dtype.itemsize > 4:
        lo = lax.convert_element_type(lax.bitwise_and(s, np.array(0xFFFFFFFF, s.dtype)), _U32)
    else:
        lo = lax.convert_element_type(s, _U32)
    return _stack(hi, lo)


def split(key, shape: tuple[int, ...]):
    """`shape` new keys from each key of `key` (`uint32[*batch, 2]`): `[*batch, *shape, 2]`."""
    k1, k2 = _words(key, len(shape))
    hi, lo = iota_2x32(shape)
    b1, b2 = hash(k1, k2, hi, lo)
    return _stack(b1, b2)


def fold_in(key, data):
    """The key(s) with the uint32 scalar `data` hashed in."""
    k1, k2 = _words(key)
    b1, b2 = hash(k1, k2, lax.full((), 0, _U32), data)
    return _stack(b1, b2)


def random_bits(key, bit_width: int, shape: tuple[int, ...]):
    """Uniform random unsigned integers of `bit_width` (8, 16, 32 or 64 bits) and `shape`
    for each key of `key` (`uint32[*batch, 2]`): `[*batch, *shape]`."""
    k1, k2 = _words(key, len(shape))
    hi, lo = iota_2x32(shape)
    b1, b2 = hash(k1, k2, hi, lo)
    if bit_width == 64:
        u64 = np.dtype(np.uint64)
        wide = lax.shift_left(lax.convert_element_type(b1, u64), np.uint64(32))
        return lax.bitwise_or(wide, lax.convert_element_type(b2, u64))
    bits = lax.bitwise_xor(b1, b2)
    if bit_width == 32:
        return bits
    return lax.convert_element_type(bits, np.dtype(f"uint{bit_width}"))
