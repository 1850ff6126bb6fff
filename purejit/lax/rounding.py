"""`lax.reduce_precision`: round values to a narrower float format, keeping their type."""

from __future__ import annotations

import operator

from purejit import errors
from purejit.ir import dtypes
from purejit.lax._lift import lift
from purejit.tracing import Tracer, bind1


def _static_int(value, what: str) -> int:
    if isinstance(value, Tracer):
        raise errors.PurejitTypeError(
            f"lax.reduce_precision: {what} must be a concrete integer, got a traced value"
            f"{errors.at(errors.user_location())} (pass a Python int, or mark it static)"
        )
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"lax.reduce_precision: {what} must be an integer, got {value!r}"
            f"{errors.at(errors.user_location())}"
        ) from None


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """`operand` rounded to a float format with `exponent_bits` exponent and
    `mantissa_bits` mantissa bits, in its own dtype (as `jax.lax.reduce_precision`, XLA's
    `ReducePrecision`): the mantissa rounds to nearest, ties to even; values beyond the
    narrow format's range become infinities, values below its smallest normal number
    zeros (both of their sign); NaNs stay NaN. With the operand's own widths it is the
    identity; `finfo(bfloat16).nexp, finfo(bfloat16).nmant` emulate bfloat16 in float32.

    Args:
        operand: a floating-point array (a Python float gives a weakly typed float32).
        exponent_bits: exponent width, at least 1.
        mantissa_bits: explicit mantissa width (without the implicit leading 1), at least 0.
    Returns:
        An array of the operand's shape and dtype.
    """
    e = _static_int(exponent_bits, "exponent_bits")
    m = _static_int(mantissa_bits, "mantissa_bits")
    x = lift(operand)
    where = errors.at(errors.user_location())
    if not dtypes.is_float(x.dtype):
        raise TypeError(
            f"lax.reduce_precision does not accept dtype {x.dtype.name}; accepted dtypes are "
            f"the real floating types{where} (convert the operand first)"
        )
    if e < 1:
        raise ValueError(f"lax.reduce_precision: exponent_bits must be positive; got {e}{where}")
    if m < 0:
        raise ValueError(
            f"lax.reduce_precision: mantissa_bits must be non-negative; got {m}{where}"
        )
    return bind1("reduce_precision", x, exponent_bits=e, mantissa_bits=m)
