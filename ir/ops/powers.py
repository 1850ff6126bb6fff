"""Powers with a static exponent: `integer_pow {y}` and `square` (JAX's `integer_pow` and
`square` primitives).

Both are products of the operand with itself, yet they are ops of their own, as in JAX: what
they compute is fixed (the multiply tree below, rounding for rounding as JAX's lowering), and
their derivative is JAX's `t * (y * x**(y-1))`, one product, where the derivative of the
products spelt out (`x * x`) adds two terms `t*x + x*t` into the cotangent sum and rounds
differently (Optax's L-BFGS against its plain loop drifts 150 ulps from JAX's in 15
steps that way).

  * `integer_pow {y}` is `square_and_multiply(x, y)`: x for 1, x*x for 2, (x*x)*x for 3,
    1/x for -1; otherwise repeated squaring, the accumulator times the current square, and
    1/acc for a negative y. Integer operands wrap in their width; a negative y on an integer
    operand is a type error (JAX's).
  * `square` is x*x, except for complex operands, where it is CHLO's form
    `(re - im) * (re + im) + i * 2 * re * im` (XLA's expansion of `chlo.square`).

Narrow floats (bf16, f16) round each product back to their type, as the multiplies do.

jax 0.11's `one_minus_square` and `log2` live here too, ops of their own for the same reason:
  * `one_minus_square` is (1 + x) * (1 - x), JAX's lowering, with JAX's tangent t * (-2x)
    (the product rule of the lowering cancels to 0 for |x| below the epsilon).
  * `log2` is log(x) times 1.4426950408889634 rounded to the dtype (each part of a complex
    log), with JAX's tangent t / (x * log(2)).
"""

from __future__ import annotations

from typing import Callable, TypeVar

import numpy as np
from purejit.ir import dtypes
from purejit.ir.ops._util import compute_dtype, int_attr, nargs, need_attrs
from purejit.ir.registry import OpDef, fail, register

T = TypeVar("T")

_EW = frozenset({"pure", "elementwise"})


def square_and_multiply(
    x: T, y: int, mul: Callable[[T, T], T], ones_like: Callable[[T], T], div: Callable[[T, T], T]
) -> T:
    """`x ** y` as JAX lowers `integer_pow`: the same products in the same order.

    Args:
        x: the operand (an array, or a value being emitted).
        y: the static exponent.
        mul, ones_like, div: how to multiply two values, make ones of a value's type, divide.
    Returns:
        the power, built from `mul` (and `div` for negative exponents).
    """
    if y == 0:
        return ones_like(x)
    if y == 3:  # JAX emits (x*x)*x; its general loop would give x*(x*x)
        return mul(mul(x, x), x)
    if y == -1:
        return div(ones_like(x), x)
    n, acc = abs(y), None
    while n:
        if n & 1:
            acc = x if acc is None else mul(acc, x)
        n >>= 1
        if n:
            x = mul(x, x)
    return div(ones_like(acc), acc) if y < 0 else acc


def _accepts(dt) -> bool:
    return dtypes.is_integer(dt) or dtypes.is_inexact(dt)


def _rounded(fn):
    """`fn` on narrow floats computed in f32 and rounded back to their type."""

    def run(*xs):
        dt = xs[0].dtype
        cdt = compute_dtype(dt)
        return np.asarray(fn(*(x.astype(cdt) for x in xs))).astype(dt)

    return run


_mul = _rounded(np.multiply)
_div = _rounded(lambda a, b: a / b)


def _ones_like(x):
    return np.ones(np.shape(x), x.dtype)


# ---- integer_pow --------------------------------------------------------------------------


def _integer_pow_infer(types, attrs, regions):
    nargs("integer_pow", types, 1)
    need_attrs("integer_pow", attrs, "y")
    (t,) = types
    y = int_attr("integer_pow", "y", attrs["y"])
    if not _accepts(t.dtype):
        fail("integer_pow", f"does not accept {t} (expects an integer or inexact type)")
    if y < 0 and dtypes.is_integer(t.dtype):
        fail("integer_pow", f"integers cannot be raised to negative powers: {t} ** {y}")
    return [t]


def _integer_pow_ref(args, attrs, regions, run_region):
    x = np.asarray(args[0])
    with np.errstate(all="ignore"):  # integers wrap, floats overflow to inf, as XLA's
        return [np.asarray(square_and_multiply(x, attrs["y"], _mul, _ones_like, _div))]


register(
    OpDef(
        "integer_pow",
        _integer_pow_infer,
        _integer_pow_ref,
        _EW,
        attrs=("y",),
        doc="integer_pow {y}: x ** y for a static integer y, by JAX's multiply tree",
    )
)


# ---- square --------------------------------------------------------------------------------


def _square_infer(types, attrs, regions):
    nargs("square", types, 1)
    (t,) = types
    if not _accepts(t.dtype):
        fail("square", f"does not accept {t} (expects an integer or inexact type)")
    return [t]


def _square_ref(args, attrs, regions, run_region):
    x = np.asarray(args[0])
    with np.errstate(all="ignore"):
        if not dtypes.is_complex(x.dtype):
            return [_mul(x, x)]
        re, im = x.real, x.imag
        out = np.empty(x.shape, x.dtype)
        out.real = (re - im) * (re + im)
        out.imag = re.dtype.type(2) * re * im
        return [out]


register(
    OpDef(
        "square",
        _square_infer,
        _square_ref,
        _EW | {"cheap"},
        doc="square: x * x ((re - im) * (re + im) + 2i * re * im for complex, as CHLO's)",
    )
)


# ---- one_minus_square ----------------------------------------------------------------------


def _one_minus_square_infer(types, attrs, regions):
    nargs("one_minus_square", types, 1)
    (t,) = types
    if not _accepts(t.dtype):
        fail("one_minus_square", f"does not accept {t} (expects an integer or inexact type)")
    return [t]


def _one_minus_square_ref(args, attrs, regions, run_region):
    x = np.asarray(args[0])
    one = _ones_like(x)
    with np.errstate(all="ignore"):  # integers wrap, as XLA's
        return [np.asarray(_mul(_rounded(np.add)(one, x), _rounded(np.subtract)(one, x)))]


register(
    OpDef(
        "one_minus_square",
        _one_minus_square_infer,
        _one_minus_square_ref,
        _EW,
        doc="one_minus_square: 1 - x**2 as (1 + x) * (1 - x) (JAX's lowering), so |x| near 1 "
        "keeps its bits",
    )
)


# ---- log2 ----------------------------------------------------------------------------------

# JAX's lowering multiplies by this double's rounding to the dtype (not by 1 / log(2) rounded)
ONE_OVER_LN2 = 1.4426950408889634


def _log2_infer(types, attrs, regions):
    nargs("log2", types, 1)
    (t,) = types
    if not dtypes.is_inexact(t.dtype):
        fail("log2", f"does not accept {t} (expects a floating-point or complex type)")
    return [t]


def _log2_ref(args, attrs, regions, run_region):
    x = np.asarray(args[0])
    with np.errstate(all="ignore"):
        if dtypes.is_complex(x.dtype):
            lg = np.log(x)
            c = np.array(ONE_OVER_LN2, lg.real.dtype)
            out = np.empty(x.shape, x.dtype)
            out.real, out.imag = lg.real * c, lg.imag * c
            return [out]
        lg = _rounded(np.log)(x)
        return [_mul(lg, np.full(x.shape, ONE_OVER_LN2, x.dtype))]


register(
    OpDef(
        "log2",
        _log2_infer,
        _log2_ref,
        _EW | {"approximate"},
        doc="log2: log(x) * 1.4426950408889634 (both parts of a complex log), as JAX lowers "
        "its log2 primitive",
    )
)
