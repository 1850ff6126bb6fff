"""Threefry2x32 (Salmon et al., SC'11) from purejit's uint32 ops, in JAX's default layout.

Everything here works on raw key data, `uint32[..., 2]`, and binds only existing IR ops
(add, xor, or, shifts, iota, convert), so XLA sees the same integer arithmetic JAX emits and
the bits are JAX's by construction:

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
from purejit.backend import pjrt
from purejit.tracing import ShapedArray, bind, trace_to_function

_U32 = np.dtype(np.uint32)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)
# on CPU, hashes of at most this many counters run as a rolled loop (JAX's CPU lowering: small
# to compile, as fast as JAX); larger ones are unrolled, which XLA fuses into one pass over
# the output (several times faster than JAX's loop, at a one-off compile cost)
ROLLED_MAX_SIZE = 1 << 16
ROLLED_MIN_SIZE = 0


def _u32(v) -> np.uint32:
    return np.uint32(v & 0xFFFFFFFF)


def _rotl(x, d: int):
    return lax.bitwise_or(lax.shift_left(x, _u32(d)), lax.shift_right_logical(x, _u32(32 - d)))


def _bcast(x, shape):
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


def hash(k1, k2, x1, x2, *, rolled: bool | None = None):
    """Threefry2x32 of the counter pairs `(x1, x2)` under the keys `(k1, k2)`.

    All four are uint32 arrays whose shapes broadcast (keys are usually scalars); returns the
    two hashed words, of the broadcast shape.

    `rolled` (default: on CPU) runs the five 4-round blocks as a 5-trip `while` loop, as JAX
    lowers threefry on CPU; otherwise the 20 rounds are unrolled, as JAX lowers it on GPU.
    The bits are the same either way; the program shape is JAX's, so XLA fuses (and rounds
    the float arithmetic downstream, e.g. a reduction) as it does for JAX, and compiles it
    about as fast."""
    shape = tuple(np.broadcast_shapes(k1.shape, k2.shape, x1.shape, x2.shape))
    if rolled is None:
        n = math.prod(shape)
        rolled = pjrt.platform() == "cpu" and ROLLED_MIN_SIZE < n <= ROLLED_MAX_SIZE
    if rolled:
        # the keys stay in their own (usually scalar) shape in the loop carry
        ks = (k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _PARITY))
        a = lax.add(_bcast(x1, shape), _bcast(ks[0], shape))
        b = lax.add(_bcast(x2, shape), _bcast(ks[1], shape))
        return _rounds_rolled(a, b, ks)
    k1, k2 = _bcast(k1, shape), _bcast(k2, shape)
    ks = (k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _PARITY))
    a = lax.add(_bcast(x1, shape), ks[0])
    b = lax.add(_bcast(x2, shape), ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            a = lax.add(a, b)
            b = lax.bitwise_xor(a, _rotl(b, r))
        a = lax.add(a, ks[(i + 1) % 3])
        b = lax.add(lax.add(b, ks[(i + 2) % 3]), _u32(i + 1))
    return a, b


def _rotl_by(x, d):
    """`x` rotated left by the traced uint32 scalar `d` (0 < d < 32)."""
    left = lax.shift_left(x, lax.broadcast_in_dim(d, tuple(x.shape), ()))
    right_by = lax.sub(np.uint32(32), d)
    right = lax.shift_right_logical(x, lax.broadcast_in_dim(right_by, tuple(x.shape), ()))
    return lax.bitwise_or(left, right)


def _loop_regions(carry_avals):
    """The cond and body regions of the rolled loop for these carry types, traced once per
    process and shared by every hash of the same shapes (a program with many samplers would
    otherwise trace the same 20 rounds again for each)."""
    key = tuple((a.shape, a.dtype.str) for a in carry_avals)
    regions = _LOOP_CACHE.get(key)
    if regions is None:
        cond = trace_to_function(lambda *c: [_cond(c)], carry_avals, name="threefry_cond")
        body = trace_to_function(lambda *c: list(_body(c)), carry_avals, name="threefry_body")
        if cond.captures or body.captures:  # cannot happen: both close over constants only
            raise AssertionError("threefry loop regions captured outer values")
        regions = _LOOP_CACHE[key] = (cond.fn, body.fn)
    return regions


_LOOP_CACHE: dict = {}


def _cond(carry):
    return lax.lt(carry[0], np.int32(5))


def _body(carry):
    """Four rounds, then the key injection; the key words and the rotation lists rotate by
    one for the next trip (JAX's `rolled_loop_step`)."""
    i, a, b, k0, k1, k2, rot, rot_next = carry
    for j in range(4):
        r = lax.reshape(lax.slice(rot, (j,), (j + 1,)), ())
        a = lax.add(a, b)
        b = lax.bitwise_xor(a, _rotl_by(b, r))
    shape = tuple(a.shape)
    a = lax.add(a, _bcast(k0, shape))
    step = lax.convert_element_type(lax.add(i, np.int32(1)), _U32)
    b = lax.add(lax.add(b, _bcast(k1, shape)), lax.broadcast_in_dim(step, shape, ()))
    return lax.add(i, np.int32(1)), a, b, k1, k2, k0, rot_next, rot


def _rounds_rolled(a, b, ks):
    """The 20 rounds as JAX's CPU lowering runs them: `fori_loop(0, 5)` over blocks of four,
    the key schedule and the two rotation lists rotating by one each trip."""
    rots = [lax.convert_element_type(np.array(r, _U32), _U32) for r in _ROTATIONS]
    init = [lax.convert_element_type(np.int32(0), np.int32), a, b, ks[1], ks[2], ks[0], *rots]
    avals = [ShapedArray(tuple(x.shape), np.dtype(x.dtype)) for x in init]
    out = bind("while", *init, regions=list(_loop_regions(avals)))
    return out[1], out[2]


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
