"""Test cases for the elementwise ops: inputs per dtype and the expected result, computed
independently of the IR's reference rules (NumPy in float64/complex128 rounded to the
result type, or plain Python integers for the XLA-specific integer semantics).

Inputs avoid subnormal numbers: XLA's CPU backend flushes them to zero (a property of the
machine's float mode, not of the ops), while the reference interpreter keeps IEEE semantics.
Complex inputs are finite: XLA and NumPy disagree on several complex infinities and NaNs.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Callable

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
S8, S32, S64 = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.int64)
U8, U32 = np.dtype(np.uint8), np.dtype(np.uint32)
PRED, C64, C128 = np.dtype(np.bool_), np.dtype(np.complex64), np.dtype(np.complex128)

FLOATS = (F32, BF16, F16, F64)
SINTS = (S32, S8, S64)
UINTS = (U8, U32)
INTS = SINTS + UINTS
COMPLEX = (C64,)

# relative tolerance per dtype for transcendental results (XLA's are a few ulps off)
RTOL = {F32: 2e-6, F64: 1e-12, F16: 2e-3, BF16: 1.6e-2, C64: 2e-6, C128: 1e-12}


@dataclass
class Case:
    """One op applied to concrete inputs, with the result NumPy says it must give."""

    op: str
    args: list
    expected: Callable[..., list] | None
    attrs: dict = field(default_factory=dict)
    regions: tuple = ()
    rtol: float = 0.0
    atol: float = 0.0
    signed_zeros: bool = True
    label: str = ""

    @property
    def id(self) -> str:
        dts = ",".join(_short(np.asarray(a).dtype) for a in self.args)
        return f"{self.op}[{self.label or dts}]"


def _short(dt) -> str:
    from purejit.ir import dtypes

    return dtypes.dtype_name(dt)


def rng_for(*key) -> np.random.Generator:
    """A generator seeded by `key`, the same in every process (str hashes are salted)."""
    return np.random.default_rng(zlib.crc32("|".join(map(str, key)).encode()))


# ---- inputs -------------------------------------------------------------------------------

FLOAT_SPECIALS = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, np.inf, -np.inf, np.nan]


def floats(dt, n=48, *, lo=-4.0, hi=4.0, specials=True, rng=None) -> np.ndarray:
    rng = rng or rng_for("floats", dt, n, lo, hi)
    v = rng.uniform(lo, hi, n)
    if specials:
        v[: len(FLOAT_SPECIALS)] = FLOAT_SPECIALS
    return v.astype(dt)


def ints(dt, n=48, *, rng=None, small=False) -> np.ndarray:
    rng = rng or rng_for("ints", dt, n, small)
    info = np.iinfo(dt)
    lo, hi = (max(info.min, -9), min(info.max, 9)) if small else (info.min, info.max)
    v = rng.integers(lo, hi, n, dtype=np.int64, endpoint=True)
    edge = [0, 1, info.max, info.min, info.max - 1, 2, 7]
    if info.min < 0:
        edge += [-1, -2, info.min + 1, -7]
    v[: len(edge)] = [min(max(e, lo), hi) for e in edge]
    return v.astype(dt)


def complexes(dt, n=32, *, nonzero=False, rng=None) -> np.ndarray:
    rng = rng or rng_for("complex", dt, n, nonzero)
    v = rng.uniform(-3, 3, n) + 1j * rng.uniform(-3, 3, n)
    v[:6] = [0, -0.0, 1j, -2.5, 1.5 - 0.5j, 2.5 + 0j]
    if nonzero:
        v[:2] = [1, -1j]
    return v.astype(dt)


def bools(n=16) -> np.ndarray:
    return (np.arange(n) % 3 == 0) ^ (np.arange(n) % 2 == 0)


def values(dt, **kw) -> np.ndarray:
    dt = np.dtype(dt)
    if dt == PRED:
        return bools()
    if dt.kind in "iu":
        return ints(dt, small=kw.get("small", False))
    if dt.kind == "c":
        return complexes(dt, nonzero=kw.get("nonzero", False))
    return floats(dt, lo=kw.get("lo", -4.0), hi=kw.get("hi", 4.0))


# ---- expected results ------------------------------------------------------------------


def wide(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    if x.dtype.kind in "iub":
        return x
    return x.astype(np.float64)


def via_f64(fn, out_dtype=None):
    """Compute `fn` in float64/complex128 and round to the operand (or given) dtype."""

    def run(*xs):
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*[wide(x) for x in xs]))
        return [out.astype(out_dtype or xs[0].dtype)]

    return run


def per_element(fn, out_dtype=None):
    """Apply a Python function element by element (Python ints/floats, not NumPy)."""

    def run(*xs):
        dt = np.dtype(out_dtype or xs[0].dtype)
        flat = [np.asarray(x).reshape(-1).tolist() for x in xs]
        res = [fn(*vals) for vals in zip(*flat)]
        if dt.kind in "iu":
            bits = dt.itemsize * 8
            res = [r & ((1 << bits) - 1) for r in res]
            out = np.array(res, dtype=np.uint64).astype(f"u{dt.itemsize}").view(dt)
        else:
            out = np.array(res, dtype=np.float64 if dt.kind != "b" else bool).astype(dt)
        return [out.reshape(np.shape(xs[0]))]

    return run


def _bits(dt) -> int:
    return np.dtype(dt).itemsize * 8


def _to_signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def int_divide(dt):
    bits, signed = _bits(dt), np.dtype(dt).kind == "i"

    def f(a, b):
        if b == 0:
            return -1
        if signed and a == -(1 << (bits - 1)) and b == -1:
            return a
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q

    return f


def int_remainder(dt):
    bits, signed = _bits(dt), np.dtype(dt).kind == "i"

    def f(a, b):
        if b == 0:
            return a
        if signed and a == -(1 << (bits - 1)) and b == -1:
            return 0
        r = abs(a) % abs(b)
        return r if a >= 0 else -r

    return f


def int_power(dt):
    bits = _bits(dt)

    def f(a, b):
        if _to_signed(b, bits) < 0:
            sa = _to_signed(a, bits)
            return 1 if sa == 1 else (-1 if b % 2 else 1) if sa == -1 else 0
        return pow(a, b & 63, 1 << bits)  # XLA squares over the exponent's low 6 bits

    return f


def shift(kind, dt):
    bits = _bits(dt)

    def f(a, b):
        n = b & ((1 << bits) - 1)  # the amount is read as unsigned
        if kind == "left":
            return 0 if n >= bits else a << n
        if kind == "logical":
            return 0 if n >= bits else (a & ((1 << bits) - 1)) >> n
        return _to_signed(a, bits) >> min(n, bits - 1)

    return f


def popcnt(dt):
    return lambda a: bin(a & ((1 << _bits(dt)) - 1)).count("1")


def clz(dt):
    return lambda a: _bits(dt) - (a & ((1 << _bits(dt)) - 1)).bit_length()


def round_afz(v: float) -> float:
    if not math.isfinite(v) or abs(v) >= 2.0**52:  # already an integer
        return v
    r = float(Decimal(abs(v)).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return math.copysign(r, v)


def sign(x):
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag))
    if x.dtype.kind == "f":
        return np.where(x == 0, x, np.sign(x))  # sign(-0.0) == -0.0
    return np.sign(x)


def float_minmax(kind):
    """XLA's float max/min: NaN wins; -0.0 < +0.0."""

    def f(a, b):
        if math.isnan(a) or math.isnan(b):
            return math.nan
        if a == b == 0:
            neg_a, neg_b = math.copysign(1, a) < 0, math.copysign(1, b) < 0
            neg = (neg_a and neg_b) if kind == "max" else (neg_a or neg_b)
            return -0.0 if neg else 0.0
        return max(a, b) if kind == "max" else min(a, b)

    return f


def complex_minmax(kind):
    """JAX's complex max/min: lexicographic on (real, imag)."""

    def run(a, b):
        key_a, key_b = list(zip(a.real, a.imag)), list(zip(b.real, b.imag))
        pick = [(ka > kb) if kind == "max" else (ka < kb) for ka, kb in zip(key_a, key_b)]
        return [np.where(pick, a, b)]

    return run


def lgamma(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:
        return math.inf


def convert(x: np.ndarray, dt) -> np.ndarray:
    """XLA's convert, element by element: float->int truncates and saturates, NaN -> 0;
    ->pred is x != 0; complex->real drops the imaginary part."""
    dt = np.dtype(dt)
    if x.dtype.kind == "c" and dt.kind != "c":
        x = x.real
    if dt == PRED:
        return np.array([v != 0 for v in x.reshape(-1).tolist()], bool).reshape(x.shape)
    if x.dtype.kind not in "iub" and dt.kind in "iu":
        info = np.iinfo(dt)
        out = []
        for v in x.astype(np.float64).reshape(-1).tolist():
            v = 0 if math.isnan(v) else v
            v = info.max if v >= info.max else info.min if v <= info.min else int(v)
            out.append(v)
        return np.array(out, dtype=object).astype(dt).reshape(x.shape)
    if x.dtype == PRED:
        return x.astype(np.int64).astype(dt)
    with np.errstate(over="ignore"):  # out-of-range floats become inf, as in XLA
        return wide(x).astype(dt)
