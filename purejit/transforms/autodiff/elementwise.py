"""JVP and transpose rules of the elementwise ops (`ir/ops/elementwise.py`).

Formulas follow JAX's (`jax/_src/lax/lax.py`): derivatives at kinks (abs at 0, max of
equal values, clamp at its bounds) are JAX's, and tangents of complex values are
complex-linear, so reverse mode gives JAX's conjugate convention.
"""

from __future__ import annotations

import math

import numpy as np

from purejit.backend import versions
from purejit.lax.special_functions import bessel_i0e
from purejit.transforms.autodiff.interpreter import NonDifferentiableError
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    UndefinedPrimal,
    Zero,
    add,
    aval,
    conj,
    convert,
    defjvp,
    deftranspose,
    div,
    full_like,
    instantiate,
    make_complex,
    mul,
    neg,
    not_differentiable,
    op,
    select,
    sub,
    zeros,
)

# ---- unary: t_out = t * f'(x), written with the primal x and result y ----------------------

_UNARY = {}


def _unary(name):
    def deco(deriv):
        _UNARY[name] = deriv
        return deriv

    return deco


def _cmp(a, b, direction):
    return op("compare", a, b, comparison_direction=direction)


def _c(x, v):
    return full_like(x, v)


@_unary("sqrt")
def _(x, y, t):
    return mul(t, div(_c(y, 0.5), y))


@_unary("rsqrt")
def _(x, y, t):
    return mul(t, mul(_c(x, -0.5), div(y, x)))


@_unary("cbrt")
def _(x, y, t):
    # JAX's form, rounding for rounding: 1/3 * y**-2 (integer_pow(y, -2) is 1 / (y * y))
    return mul(t, mul(_c(x, 1 / 3), div(_c(y, 1), mul(y, y))))


@_unary("exponential")
def _(x, y, t):
    return mul(t, y)


@_unary("exponential_minus_one")
def _(x, y, t):
    return mul(t, add(y, _c(y, 1)))


@_unary("log")
def _(x, y, t):
    return div(t, x)


@_unary("log_plus_one")
def _(x, y, t):
    return div(t, add(x, _c(x, 1)))


@_unary("logistic")
def _(x, y, t):
    return mul(t, mul(y, sub(_c(y, 1), y)))


@_unary("sine")
def _(x, y, t):
    return mul(t, op("cosine", x))


@_unary("cosine")
def _(x, y, t):
    return neg(mul(t, op("sine", x)))


@_unary("tan")
def _(x, y, t):
    return mul(t, add(_c(y, 1), mul(y, y)))


@_unary("tanh")
def _(x, y, t):
    # (t + t*y) * (1 - y), as JAX: 1 - y*y cancels where |y| is near 1 (a float16 acos(tanh)
    # chain on a GPU lost 10x JAX's accuracy with it); jax >= 0.11.2: t * ((1 + y) * (1 - y))
    if versions.jax_release() >= (0, 11, 2):
        return mul(t, _one_minus_square(x, y))
    return mul(add(t, mul(t, y)), sub(_c(x, 1), y))


def _one_minus_square(x, y):
    """(1 + y) (1 - y), differentiated as -2 y dy (jax >= 0.11.2's one_minus_square): the product's
    own derivative (1 - y) - (1 + y) cancels near y = 0. The value's bits are the product's,
    as (v) + (w - w) with both w = -y*y finite (|y| <= 1 for tanh) adds an exact zero."""
    v = mul(add(_c(x, 1), y), sub(_c(x, 1), y))
    w = neg(mul(y, y))
    return add(op("stop_gradient", v), sub(w, op("stop_gradient", w)))


@_unary("asin")
def _(x, y, t):
    return mul(t, op("rsqrt", sub(_c(x, 1), mul(x, x))))


@_unary("acos")
def _(x, y, t):
    return neg(mul(t, op("rsqrt", sub(_c(x, 1), mul(x, x)))))


@_unary("atan")
def _(x, y, t):
    return div(t, add(_c(x, 1), mul(x, x)))


@_unary("sinh")
def _(x, y, t):
    return mul(t, op("cosh", x))


@_unary("cosh")
def _(x, y, t):
    return mul(t, op("sinh", x))


@_unary("asinh")
def _(x, y, t):
    return mul(t, op("rsqrt", add(mul(x, x), _c(x, 1))))


@_unary("acosh")
def _(x, y, t):
    # x*x - 1 as JAX (its domain is x >= 1, where (x - 1)(x + 1) gains nothing)
    return mul(t, op("rsqrt", sub(mul(x, x), _c(x, 1))))


@_unary("atanh")
def _(x, y, t):
    one = _c(x, 1)
    return mul(div(one, add(one, x)), div(t, sub(one, x)))


@_unary("erf")
def _(x, y, t):
    return mul(_c(x, 2 / math.sqrt(math.pi)), mul(t, op("exponential", neg(mul(x, x)))))


@_unary("erf_inv")
def _(x, y, t):
    # d/dx erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x) ** 2)
    return mul(_c(x, math.sqrt(math.pi) / 2), mul(t, op("exponential", mul(y, y))))


@_unary("lgamma")
def _(x, y, t):
    return mul(t, op("digamma", x))


@_unary("erfc")
def _(x, y, t):
    # JAX's order of products (as erf's), so the derivative rounds as JAX's
    return mul(_c(x, -2 / math.sqrt(math.pi)), mul(t, op("exponential", neg(mul(x, x)))))


@_unary("digamma")
def _(x, y, t):
    return mul(t, op("polygamma", _c(x, 1), x))


@_unary("bessel_i1e")
def _(x, y, t):
    # i1e' = i0e(x) - i1e(x) (sign(x) + 1/x), and 1/2 at x = 0 (JAX's, with |x| <= eps as 0)
    eps = _c(x, float(np.finfo(aval(x).dtype).eps))
    tiny = _cmp(op("abs", x), eps, "LE")
    safe = select(tiny, eps, x)
    d = sub(bessel_i0e(safe), mul(y, add(op("sign", safe), div(_c(x, 1), safe))))
    return mul(t, select(tiny, _c(x, 0.5), d))


@_unary("negate")
def _(x, y, t):
    return neg(t)


@_unary("real")
def _(x, y, t):
    return op("real", t)


@_unary("imag")
def _(x, y, t):
    return op("imag", t)


@_unary("abs")
def _(x, y, t):
    if aval(x).dtype.kind == "c":
        safe = select(_cmp(y, _c(y, 0), "EQ"), _c(y, 1), y)
        return op("real", mul(t, div(conj(x), convert(safe, aval(x).dtype))))
    return select(_cmp(x, _c(x, 0), "GE"), t, neg(t))


def _unary_rule(name, deriv):
    def rule(ctx, primals, tangents, attrs, regions):
        (x,), (t,) = primals, tangents
        y = op(name, x)
        return [y], [deriv(x, y, t)]

    return rule


for _name, _deriv in _UNARY.items():
    defjvp(_name)(_unary_rule(_name, _deriv))


def _zero_jvp(name):
    def rule(ctx, primals, tangents, attrs, regions):
        y = op(name, *primals, **attrs)
        return [y], [Zero(aval(y))]

    defjvp(name)(rule)


# piecewise constant: the derivative is zero wherever it exists (JAX's defjvp_zero); a
# bitcast's bits do not move with its operand's value continuously (JAX: zero too)
for _name in (
    "sign",
    "floor",
    "ceil",
    "round_nearest_afz",
    "round_nearest_even",
    "bitcast_convert",
):
    _zero_jvp(_name)

not_differentiable(
    "JAX does not differentiate it: lax.nextafter has no differentiation rule in JAX (its "
    "result is a neighbouring float, a step function of its operands)",
    "next_after",
)

not_differentiable(
    "integer or boolean results",
    "compare",
    "is_finite",
    "not",
    "and",
    "or",
    "xor",
    "popcnt",
    "count_leading_zeros",
    "shift_left",
    "shift_right_logical",
    "shift_right_arithmetic",
)

# ---- binary ----------------------------------------------------------------------------------


def _binary(name, dx, dy):
    """JVP of a binary op: t_out = dx(x, y, z, tx) + dy(x, y, z, ty); Zero terms skipped."""

    def rule(ctx, primals, tangents, attrs, regions):
        (x, y), (tx, ty) = primals, tangents
        z = op(name, x, y)
        out = Zero(aval(z))
        if not isinstance(tx, Zero):
            out = add(out, dx(x, y, z, tx))
        if not isinstance(ty, Zero):
            out = add(out, dy(x, y, z, ty))
        return [z], [out]

    defjvp(name)(rule)


_binary("add", lambda x, y, z, t: t, lambda x, y, z, t: t)
_binary("subtract", lambda x, y, z, t: t, lambda x, y, z, t: neg(t))
_binary("multiply", lambda x, y, z, t: mul(t, y), lambda x, y, z, t: mul(x, t))
_binary(
    "divide",
    lambda x, y, z, t: div(t, y),
    # (-t x) * (1 / y**2), JAX's form rounding for rounding: the residuals are x and 1 / y**2
    # (y often a broadcast of something small)
    lambda x, y, z, t: mul(mul(neg(t), x), div(_c(y, 1), mul(y, y))),
)


def _rem_dy(x, y, z, t):
    q = div(x, y)
    return mul(neg(t), mul(op("sign", q), op("floor", op("abs", q))))


_binary("remainder", lambda x, y, z, t: t, _rem_dy)


def _replace_zero(x):
    return select(_cmp(x, _c(x, 0), "EQ"), _c(x, 1), x)


def _pow_dx(x, y, z, t):
    # y * x ** (y - 1), and 0 where y == 0 (so 0 ** 0 has derivative 0, as JAX)
    jac = mul(y, op("power", x, sub(y, _c(y, 1))))
    return mul(t, select(_cmp(y, _c(y, 0), "EQ"), _c(y, 0), jac))


def _pow_dy(x, y, z, t):
    return mul(t, mul(op("log", _replace_zero(x)), z))


_binary("power", _pow_dx, _pow_dy)


def _balanced_eq(x, z, y):
    """1 where x is the result and y is not, 1/2 where both are, 0 elsewhere (JAX)."""
    one, half, zero = _c(z, 1), _c(z, 0.5), _c(z, 0)
    return select(_cmp(x, z, "EQ"), select(_cmp(y, z, "EQ"), half, one), zero)


def _minmax_rule(name):
    def rule(ctx, primals, tangents, attrs, regions):
        (x, y), (tx, ty) = primals, tangents
        z = op(name, x, y)
        if aval(z).dtype.kind == "c":
            # complex max/min choose one operand (lexicographic order)
            pick = _cmp(op("real", z), op("real", x), "EQ")
            pick = op("and", pick, _cmp(op("imag", z), op("imag", x), "EQ"))
            return [z], [select(pick, instantiate(tx, aval(z)), instantiate(ty, aval(z)))]
        out = Zero(aval(z))
        if not isinstance(tx, Zero):
            out = add(out, mul(tx, _balanced_eq(x, z, y)))
        if not isinstance(ty, Zero):
            out = add(out, mul(ty, _balanced_eq(y, z, x)))
        return [z], [out]

    defjvp(name)(rule)


_minmax_rule("maximum")
_minmax_rule("minimum")


def _atan2_dx(x, y, z, t):
    return mul(t, div(y, add(mul(x, x), mul(y, y))))


def _atan2_dy(x, y, z, t):
    return mul(neg(t), div(x, add(mul(x, x), mul(y, y))))


_binary("atan2", _atan2_dx, _atan2_dy)


def _no_derivative(what: str):
    def refuse(*_):
        raise NonDifferentiableError(f"{what} (JAX does not define it either)")

    return refuse


# d/dx polygamma(n, x) = polygamma(n + 1, x); n is an integer order
_binary(
    "polygamma",
    _no_derivative("polygamma: no derivative with respect to the order n"),
    lambda n, x, z, t: mul(t, op("polygamma", add(n, _c(n, 1)), x)),
)
# d/dq zeta(s, q) = -s zeta(s + 1, q)
_binary(
    "zeta",
    _no_derivative("zeta: no derivative with respect to s"),
    lambda s, q, z, t: mul(t, neg(mul(s, op("zeta", add(s, _c(s, 1)), q)))),
)


@defjvp("select")
def _select_jvp(ctx, primals, tangents, attrs, regions):
    p, a, b = primals
    _, ta, tb = tangents
    z = op("select", p, a, b)
    if isinstance(ta, Zero) and isinstance(tb, Zero):
        return [z], [Zero(aval(z))]
    return [z], [select(p, instantiate(ta, aval(z)), instantiate(tb, aval(z)))]


def _bcast_to(t, x):
    """A scalar bound's tangent broadcast to the operand's shape."""
    shp = aval(x).shape
    if aval(t).shape == shp:
        return t
    return op("broadcast_in_dim", t, shape=shp, broadcast_dimensions=())


@defjvp("clamp")
def _clamp_jvp(ctx, primals, tangents, attrs, regions):
    lo, x, hi = primals
    tlo, tx, thi = tangents
    z = op("clamp", lo, x, hi)
    zero = zeros(aval(z))
    out = Zero(aval(z))

    def b(v):
        return _bcast_to(v, x)

    if not isinstance(tlo, Zero):
        take = op("and", _cmp(b(lo), x, "GT"), _cmp(b(lo), b(hi), "LT"))
        out = add(out, select(take, b(tlo), zero))
    if not isinstance(tx, Zero):
        take = op("and", _cmp(x, b(lo), "GT"), _cmp(x, b(hi), "LT"))
        out = add(out, select(take, tx, zero))
    if not isinstance(thi, Zero):
        out = add(out, select(_cmp(b(hi), x, "LT"), b(thi), zero))
    return [z], [out]


@defjvp("complex")
def _complex_jvp(ctx, primals, tangents, attrs, regions):
    # complex(x, y) is linear in each part: its tangent is complex(tx, ty)
    (x, y), (tx, ty) = primals, tangents
    z = op("complex", x, y)
    return [z], [op("complex", instantiate(tx, aval(x)), instantiate(ty, aval(y)))]


@defjvp("convert")
def _convert_jvp(ctx, primals, tangents, attrs, regions):
    (x,), (t,) = primals, tangents
    z = op("convert", x, **attrs)
    return [z], [convert(t, attrs["dtype"])]


# ---- transposes of the linear ones -----------------------------------------------------------


@deftranspose("add")
def _add_t(cts, operands, attrs, regions):
    (ct,) = cts
    return [ct, ct]


@deftranspose("subtract")
def _sub_t(cts, operands, attrs, regions):
    (ct,) = cts
    return [ct, neg(ct)]


@deftranspose("negate")
def _neg_t(cts, operands, attrs, regions):
    return [neg(cts[0])]


def _is_lin(x) -> bool:
    return isinstance(x, UndefinedPrimal)


@deftranspose("multiply")
def _mul_t(cts, operands, attrs, regions):
    (ct,), (x, y) = cts, operands
    if _is_lin(x) and _is_lin(y):
        raise NotImplementedError("multiply of two tangents is not linear")
    if _is_lin(x):
        return [mul(ct, y), None]
    return [None, mul(x, ct)]


@deftranspose("divide")
def _div_t(cts, operands, attrs, regions):
    (ct,), (_, y) = cts, operands
    if _is_lin(y):
        raise NotImplementedError("divide by a tangent is not linear")
    return [div(ct, y), None]


@deftranspose("convert")
def _convert_t(cts, operands, attrs, regions):
    (ct,), (x,) = cts, operands
    return [convert(ct, aval(x).dtype)]


@defjvp("reduce_precision")
def _reduce_precision_jvp(ctx, primals, tangents, attrs, regions):
    # JAX treats it as linear: the tangent is rounded the same way (ad.deflinear)
    (x,), (t,) = primals, tangents
    z = op("reduce_precision", x, **attrs)
    return [z], [t if isinstance(t, Zero) else op("reduce_precision", t, **attrs)]


@deftranspose("reduce_precision")
def _reduce_precision_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    return [op("reduce_precision", ct, **attrs)]


@deftranspose("real")
def _real_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    return [make_complex(ct, zeros(aval(ct)))]


@deftranspose("imag")
def _imag_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    return [make_complex(zeros(aval(ct)), neg(ct))]


@deftranspose("complex")
def _complex_t(cts, operands, attrs, regions):
    # JAX's: (real(ct), imag(-ct)), the conjugate convention of real -> complex maps
    (ct,), (x, y) = cts, operands
    if isinstance(ct, Zero):
        return [Zero(aval(x)) if _is_lin(x) else None, Zero(aval(y)) if _is_lin(y) else None]
    cx = op("real", ct) if _is_lin(x) else None
    cy = neg(op("imag", ct)) if _is_lin(y) else None
    return [cx, cy]


@deftranspose("select")
def _select_t(cts, operands, attrs, regions):
    (ct,), (p, a, b) = cts, operands
    if _is_lin(p):
        raise NotImplementedError("select on a tangent predicate is not linear")
    if isinstance(ct, Zero):
        return [None, Zero(aval(a)), Zero(aval(b))]
    zero = zeros(aval(ct))
    ca = select(p, ct, zero) if _is_lin(a) else None
    cb = select(p, zero, ct) if _is_lin(b) else None
    return [None, ca, cb]


LINEAR_OPS.update(
    {
        "add",
        "subtract",
        "negate",
        "multiply",
        "divide",
        "convert",
        "real",
        "imag",
        "select",
        "complex",
        "reduce_precision",
    }
)
