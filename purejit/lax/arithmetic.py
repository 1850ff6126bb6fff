"""Elementwise arithmetic of jax.lax that the IR composes from its own ops: `exp2` (as JAX
lowers it, exp(log(2) * x)) and `mulhi` (the high half of the double-width integer
product, from half-width limbs so no wider type is needed); jax 0.11's `log2` and
`one_minus_square`, which bind IR ops of their own (ir/ops/powers.py: JAX's lowering and JVP);
plus the option types of jax.lax's elementwise ops, `RoundingMethod`, `AccuracyMode` and
`Tolerance`.
"""

from __future__ import annotations

import enum

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import broadcast_arrays_named
from purejit.lax._lift import lift as _lift
from purejit.lax.elementwise import add, bitwise_and, exp, lt, mul, shift_right_logical, sub
from purejit.lax.ops import _same_dtypes, bitcast_convert_type, full, select
from purejit.tracing import bind1


class RoundingMethod(enum.IntEnum):
    """How `lax.round` breaks ties: away from zero (0) or to the nearest even (1)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


class AccuracyMode(enum.Enum):
    """A requested accuracy for a transcendental op (XLA's `result_accuracy` mode)."""

    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """Tolerances for a transcendental op's implementation (XLA's `result_accuracy`): at most
    two of atol, rtol, ulps; all non-negative, one of them set."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps

    def __eq__(self, other):
        return isinstance(other, Tolerance) and (self.atol, self.rtol, self.ulps) == (
            other.atol,
            other.rtol,
            other.ulps,
        )

    def __hash__(self):
        return hash((self.atol, self.rtol, self.ulps))

    def __repr__(self):
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


def _where() -> str:
    return errors.at(errors.user_location())


def check_accuracy(name: str, accuracy) -> None:
    """Accept `accuracy=None` or `AccuracyMode.DEFAULT`; anything else asks for XLA's
    per-op `result_accuracy`, which purejit does not emit, so it is refused, not dropped."""
    if accuracy is None or accuracy is AccuracyMode.DEFAULT:
        return
    if not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise TypeError(
            f"lax.{name}: accuracy must be a Tolerance or an AccuracyMode, got {accuracy!r}"
        )
    raise NotImplementedError(
        f"lax.{name}: accuracy={accuracy!r} asks XLA for a specific implementation "
        f"(result_accuracy), which purejit does not emit; pass accuracy=None{_where()}"
    )


def exp2(x, *, accuracy=None):
    """`2 ** x` elementwise, computed as exp(log(2) * x) in `x`'s dtype (as JAX lowers it)."""
    check_accuracy("exp2", accuracy)
    a = _lift(x)
    if not (pdt.is_inexact(a.dtype) or a.dtype.kind == "c"):
        raise TypeError(
            f"lax.exp2 does not accept dtype {a.dtype.name}. Accepted dtypes are subtypes of "
            f"floating or complexfloating{_where()}"
        )
    log2 = np.array(np.log(2), a.dtype)
    return exp(mul(log2, a))


def log2(x, *, accuracy=None):
    """Elementwise base-2 logarithm as jax 0.11's `lax.log2`: log(x) * 1.4426950408889634
    (each part of a complex log), with JAX's tangent t / (x * log(2))."""
    check_accuracy("log2", accuracy)
    a = _lift(x)
    if not (pdt.is_inexact(a.dtype) or a.dtype.kind == "c"):
        raise TypeError(
            f"log2 does not accept dtype {a.dtype.name}. Accepted dtypes are subtypes of "
            f"floating, complexfloating{_where()}"
        )
    return bind1("log2", a)


def one_minus_square(x):
    """Elementwise 1 - x**2 as jax 0.11's `lax.one_minus_square`: (1 + x) * (1 - x), which
    keeps the bits of |x| near 1, with the tangent t * (-2 * x), which keeps them near 0."""
    a = _lift(x)
    if not (pdt.is_inexact(a.dtype) or a.dtype.kind in "iuc"):
        raise TypeError(
            f"one_minus_square does not accept dtype {a.dtype.name}. Accepted dtypes are "
            f"subtypes of integer, floating, complexfloating{_where()}"
        )
    return bind1("one_minus_square", a)


def _limbs(u, half: int):
    mask = np.array((1 << half) - 1, u.dtype)
    return bitwise_and(u, mask), shift_right_logical(u, np.array(half, u.dtype))


def mulhi(x, y, /):
    """The high N bits of the 2N-bit product of N-bit integers, elementwise, as
    `jax.lax.mulhi` (signed operands give the signed high half)."""
    a, b = _lift(x), _lift(y)
    _same_dtypes("mulhi", a, b)
    dt = a.dtype
    if dt.kind not in "iu":
        raise TypeError(f"lax.mulhi requires integer operands, got {dt.name}{_where()}")
    a, b = broadcast_arrays_named("mulhi", a, b)
    bits = dt.itemsize * 8
    udt = np.dtype(f"uint{bits}")
    ua = a if dt.kind == "u" else bitcast_convert_type(a, udt)
    ub = b if dt.kind == "u" else bitcast_convert_type(b, udt)
    half = bits // 2
    a_lo, a_hi = _limbs(ua, half)
    b_lo, b_hi = _limbs(ub, half)
    # each limb product fits N bits; carries are gathered half a word at a time
    t = add(mul(a_hi, b_lo), _limbs(mul(a_lo, b_lo), half)[1])
    t_lo, t_hi = _limbs(t, half)
    w = add(t_lo, mul(a_lo, b_hi))
    hi = add(add(mul(a_hi, b_hi), t_hi), _limbs(w, half)[1])
    if dt.kind == "u":
        return hi
    # signed: hi(a*b) = hi_u(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0)  (mod 2^N)
    zero, zero_u = np.zeros((), dt), full(ua.shape, np.zeros((), udt))
    hi = sub(hi, select(lt(a, zero), ub, zero_u))
    hi = sub(hi, select(lt(b, zero), ua, zero_u))
    return bitcast_convert_type(hi, dt)
