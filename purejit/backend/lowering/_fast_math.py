"""Sine, cosine and tangent as vectorisable StableHLO for XLA's CPU backend.

XLA's CPU backend lowers `stablehlo.sine`/`cosine`/`tan` to a scalar library call per
element (1M float32 `sin`: ~7 ms on two cores, against 0.4 ms for `tanh`, which it
vectorises). Here the same functions are written as plain elementwise StableHLO (multiply,
add, round, compare, select) that XLA fuses and vectorises, with a maximum error of 1 ulp over
every finite float32 input (`python -m bench.ulp_sweep` checks all 2^32). bfloat16 and float16
go through float32, as XLA's own lowering does; float64 and complex keep XLA's.

The argument reduction is exact for every float32, up to 3.4e38 (Payne–Hanek in spirit,
without a table lookup, which would stop XLA from vectorising the loop):

* `x = y * 2^(24j)`, where the band `j` (0..4) is chosen per element by comparing `|x|` with
  `2^(24j + 23)`; for `j >= 1`, `y` is an integer below `2^47`, and for `j = 0`, `y = x`.
* `x * 2/pi = y * h_j (mod 4)` with `h_j = 2^(24j) * 2/pi (mod 4)`, because `y` is an
  integer (for `j = 0` nothing is reduced). `h_j` is stored as four 29-bit chunks, so every
  product `y * chunk` is exact in float64 (24 + 29 bits).
* The products are reduced mod 4 exactly, summed with a two-sum, and split into the
  quadrant `n` and `t = x * 2/pi - n` in [-1/2, 1/2] with a relative error below 2^-50. The
  hardest float32 (16367173 * 2^72) leaves `|t|` near 2^-29.9, so this is ample.
* `sin` and `cos` of `r = t * pi/2` are odd/even Taylor polynomials in float64, picked and
  signed by the quadrant, rounded once to float32. Their degrees are the lowest whose
  truncation error stays far below float32's rounding on |r| <= pi/4: through r^9 for sin
  (relative error below 2^-28.5) and r^10 for cos (below 2^-32); each term fewer is about
  4% of the time of `complex_activation`.

Special values match XLA's: NaN and +-inf give NaN; `sin` and `tan` return their argument
unchanged when `|x| < 2^-12` (so -0.0 and subnormals come back bit for bit, which matters
because XLA's CPU code flushes subnormal operands of arithmetic to zero); `cos` of those is 1.

An op carrying the attribute `impl="xla"` keeps XLA's own lowering (so `purejit.random`'s
samplers stay bit-identical with `jax.random`), and so does every op when the option
`purejit.config.update("cpu_fast_transcendentals", False)` is set.
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._util import mlir_type
from purejit.config import config
from purejit.ir import Op, TensorType, dtypes

# the ops this module can lower
FAST_OPS = ("sine", "cosine", "tan")
_NARROW = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(dtypes.bfloat16))
_F32, _F64, _I32, _PRED = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.bool_))


# below this many elements XLA's own call is kept: the polynomial's ~150 flops an element
# make XLA's CPU client run a program off the calling thread, which costs more than the
# library calls it saves (16 float32s: 39 us against 7 us for XLA's `sine`, measured on 2
# busy cores; still 2.8x slower at 16384 elements there; XLA's result is as accurate)
MIN_ELEMENTS = 16384


def applies(op: Op, platform: str) -> bool:
    """Whether `op` is lowered here: a sine/cosine/tan of a float32, bfloat16 or float16
    tensor of at least `MIN_ELEMENTS` elements, on CPU, with the option on and no
    `impl="xla"` attribute on the op."""
    t = op.operands[0].type if op.name in FAST_OPS else None
    return (
        t is not None
        and platform == "cpu"
        and op.attrs.get("impl") != "xla"
        and t.dtype in _NARROW
        and int(np.prod(t.shape, dtype=np.int64)) >= MIN_ELEMENTS
        and bool(config.read("cpu_fast_transcendentals"))
    )


# ---- the constants of the reduction --------------------------------------------------------


def _two_over_pi(bits: int) -> int:
    """floor(2/pi * 2^bits), from Machin's formula in integer arithmetic."""
    scale = bits + 64

    def atan_inv(k: int) -> int:  # atan(1/k) * 2^scale
        term = (1 << scale) // k
        total, n, sign = term, 1, -1
        while term:
            term //= k * k
            total += sign * (term // (2 * n + 1))
            sign, n = -sign, n + 1
        return total

    pi = 16 * atan_inv(5) - 4 * atan_inv(239)  # pi * 2^scale
    return (2 << (scale + bits)) // pi


_BITS = 400
_CHUNK = 29  # 24-bit float32 significand x 29-bit chunk: exact in float64's 53 bits
_BANDS = 5  # y * 2^(24j), j = 0..4, covers every float32 (|x| < 2^128)


def _band_chunks() -> np.ndarray:
    """`[j, i]`: chunk i of h_j = 2^(24j) * 2/pi mod 4, chunks of 29 bits from its top bit."""
    two_over_pi = _two_over_pi(_BITS)  # 2/pi = two_over_pi * 2^-_BITS
    out = np.zeros((_BANDS, 4))
    for j in range(_BANDS):
        frac_bits = _BITS - 24 * j  # h_j = h * 2^-frac_bits
        h = two_over_pi % (4 << frac_bits)
        top = min(1, h.bit_length() - 1 - frac_bits)  # h's leading bit is 2^top
        for i in range(4):
            low = top - _CHUNK * (i + 1) + 1  # this chunk holds bits 2^(low+28) .. 2^low
            out[j, i] = float((h >> (low + frac_bits)) & ((1 << _CHUNK) - 1)) * 2.0**low
    return out


_H = _band_chunks()
_HALF_PI = float(np.pi / 2)
_TINY = float(2.0**-12)  # below this, sin x and tan x round to x
# Taylor coefficients of sin r / r and cos r in r^2 (|r| <= pi/4: see the module docstring)
_SIN = [(-1.0) ** k / float(np.prod(np.arange(1, 2 * k + 2, dtype=np.float64))) for k in range(5)]
_COS = [(-1.0) ** k / float(np.prod(np.arange(1, 2 * k + 1, dtype=np.float64))) for k in range(6)]


# ---- emission --------------------------------------------------------------------------------


class _Emitter:
    """Elementwise StableHLO ops over one shape, by MLIR name; remembers each value's dtype."""

    def __init__(self, ctx, shape: tuple):
        self.ctx, self.shape, self.dtype_of, self.consts = ctx, shape, {}, {}

    def _t(self, dt) -> TensorType:
        return TensorType(self.shape, np.dtype(dt))

    def _emit(self, name, args, dt, attrs="") -> str:
        (out,) = self.ctx.op(
            f"stablehlo.{name}",
            args,
            [self._t(self.dtype_of[a]) for a in args],
            [self._t(dt)],
            attrs,
        )
        self.dtype_of[out] = np.dtype(dt)
        return out

    def arg(self, name: str, dt) -> str:
        self.dtype_of[name] = np.dtype(dt)
        return name

    def const(self, value: float, dt=_F64) -> str:
        """A scalar constant broadcast to this shape (each value emitted once). XLA keeps a
        splat `dense` of the full shape as a buffer in memory, so it is never emitted."""
        key = (float(value), np.dtype(dt))
        if key not in self.consts:
            scalar = TensorType((), np.dtype(dt))
            hex_ = np.array(value, dt).tobytes().hex().upper()
            attr = f'value = dense<"0x{hex_}"> : {mlir_type(scalar)}'
            (c,) = self.ctx.op("stablehlo.constant", [], [], [scalar], attr)
            (out,) = self.ctx.op(
                "stablehlo.broadcast_in_dim",
                [c],
                [scalar],
                [self._t(dt)],
                "broadcast_dimensions = array<i64>",
            )
            self.dtype_of[out] = np.dtype(dt)
            self.consts[key] = out
        return self.consts[key]

    def __call__(self, name: str, *args: str) -> str:
        """An op whose result has its first operand's dtype (add, multiply, select's
        second operand, ...)."""
        dt = self.dtype_of[args[1] if name == "select" else args[0]]
        return self._emit(name, list(args), dt)

    def convert(self, x: str, dt) -> str:
        return self._emit("convert", [x], dt)

    def compare(self, x: str, y: str, direction: str) -> str:
        kind = "FLOAT" if dtypes.is_float(self.dtype_of[x]) else "SIGNED"
        attrs = (
            f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
            f"compare_type = #stablehlo<comparison_type {kind}>"
        )
        return self._emit("compare", [x, y], _PRED, attrs)

    def poly(self, z: str, coeffs) -> str:
        """coeffs[0] + coeffs[1] z + ... by Horner's rule."""
        acc = self.const(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self("add", self("multiply", acc, z), self.const(c))
        return acc


def _reduce(e: _Emitter, x32: str):
    """`(t, n)` with x * 2/pi = n + t exactly up to 2^-50 relative, |t| <= ~1/2, n an int32
    whose two low bits are the quadrant."""
    ax = e("abs", x32)
    bands = [e.compare(ax, e.const(2.0 ** (24 * j + 23), _F32), "GE") for j in range(1, _BANDS)]

    def pick(values) -> str:  # values[j] where x lies in band j
        v = e.const(values[0])
        for in_band, value in zip(bands, values[1:]):
            v = e("select", in_band, e.const(value), v)
        return v

    y = e("multiply", e.convert(x32, _F64), pick([2.0 ** (-24 * j) for j in range(_BANDS)]))
    p = [e("multiply", y, pick(_H[:, i])) for i in range(4)]
    quarter, four = e.const(0.25), e.const(4.0)

    def mod4(v):  # v - 4 round(v / 4): exact
        return e(
            "subtract", v, e("multiply", four, e("round_nearest_even", e("multiply", v, quarter)))
        )

    a, b = mod4(p[0]), mod4(p[1])
    # two-sum: s + err == a + b exactly
    s = e("add", a, b)
    bb = e("subtract", s, a)
    err = e("add", e("subtract", a, e("subtract", s, bb)), e("subtract", b, bb))
    n = e("round_nearest_even", e("add", s, p[2]))
    t = e("add", e("add", e("add", e("subtract", s, n), p[2]), err), p[3])
    return t, e.convert(n, _I32)


def _quadrant_bit(e: _Emitter, n: str, bit: int) -> str:
    return e.compare(e("and", n, e.const(bit, _I32)), e.const(0, _I32), "NE")


def _sin_cos(e: _Emitter, r: str):
    z = e("multiply", r, r)
    sin = e("multiply", r, e.poly(z, _SIN))
    cos = e.poly(z, _COS)
    return sin, cos


def lower(ctx, op: Op, args: list[str]) -> list[str]:
    """Emit `op` (see `applies`) as vectorisable StableHLO; returns its result's name."""
    t_in = op.operands[0].type
    e = _Emitter(ctx, tuple(t_in.shape))
    x = e.arg(args[0], t_in.dtype)
    x32 = x if t_in.dtype == _F32 else e.convert(x, _F32)
    t, n = _reduce(e, x32)
    sin_r, cos_r = _sin_cos(e, e("multiply", t, e.const(_HALF_PI)))
    odd = _quadrant_bit(e, n, 1)
    if op.name == "tan":  # tan(r + n pi/2) = sin r / cos r, or -cos r / sin r for odd n
        num = e("select", odd, e("negate", cos_r), sin_r)
        out = e("divide", num, e("select", odd, sin_r, cos_r))
    elif op.name == "sine":  # sin r, cos r, -sin r, -cos r for n = 0, 1, 2, 3 (mod 4)
        out = e("select", odd, cos_r, sin_r)
        out = e("select", _quadrant_bit(e, n, 2), e("negate", out), out)
    else:  # cos r, -sin r, -cos r, sin r
        out = e("select", odd, sin_r, cos_r)
        n1 = e("add", n, e.const(1, _I32))
        out = e("select", _quadrant_bit(e, n1, 2), e("negate", out), out)
    out = e.convert(out, _F32)
    if op.name != "cosine":  # sin x = tan x = x for tiny x, bit for bit (-0.0, subnormals)
        tiny = e.compare(e("abs", x32), e.const(_TINY, _F32), "LT")
        out = e("select", tiny, x32, out)
    return [out if t_in.dtype == _F32 else e.convert(out, t_in.dtype)]
