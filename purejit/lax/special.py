"""`random_gamma_grad`: the derivative of a Gamma(a, 1) sample with respect to `a`, as
`jax.lax.random_gamma_grad`, composed from existing ops (no IR op of its own).

A sample x of Gamma(a, 1) solves P(a, x) = u for a uniform u held fixed, with P the
regularised lower incomplete gamma function, so implicitly

    dx/da = -(dP/da) / (dP/dx),    dP/dx = x^(a-1) e^-x / Gamma(a).

Both factors share the prefactor x^a e^-x / Gamma(a), which cancels: what remains is the
derivative in `a` of the normalised series (or continued fraction) times x. The series of
P(a, x) serves where x <= 1 or x <= a, the continued fraction of Q(a, x) = 1 - P(a, x)
elsewhere; each is a `while_loop` that carries the value and its derivative in `a` and stops
once the derivative has converged (the continued fraction after at most 2000 terms), the
same iteration as JAX's, so the results agree to rounding.
"""

from __future__ import annotations

import math

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import broadcast_shapes_named, convert
from purejit.lax._lift import lift as _lift
from purejit.lax.control import while_loop
from purejit.lax.elementwise import (
    abs,
    add,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    div,
    eq,
    gt,
    le,
    lgamma,
    log,
    lt,
    mul,
    ne,
    neg,
    sub,
)
from purejit.lax.ops import broadcast_in_dim, reduce, select

_CF_MAX_TERMS = 2000


def _where() -> str:
    return errors.at(errors.user_location())


def _k(v, like):
    """The constant `v` in `like`'s dtype."""
    return np.array(v, like.dtype)


def _full(v, like):
    return broadcast_in_dim(_k(v, like), tuple(like.shape), ())


def _any(pred):
    return reduce(pred, np.bool_(False), lambda acc, x: bitwise_or(acc, x), tuple(range(pred.ndim)))


# psi(z) ~ log z - 1/(2z) - sum_k B_2k / (2k z^2k), k = 1..8
_PSI_SERIES = (
    1 / 12,
    -1 / 120,
    1 / 252,
    -1 / 240,
    1 / 132,
    -691 / 32760,
    1 / 12,
    -3617 / 8160,
)


def _digamma_positive(x):
    """psi(x) for x > 0: the recurrence psi(x) = psi(x + s) - sum_{k<s} 1 / (x + k), then the
    asymptotic series at x + s (s = 10 keeps its truncation below float64's rounding)."""
    shift = 6 if x.dtype.itemsize < 8 else 10
    acc = _full(0, x)
    for k in range(shift):
        acc = add(acc, div(_k(1, x), add(x, _k(k, x))))
    z = add(x, _k(shift, x))
    inv2 = div(_k(1, x), mul(z, z))
    series = _full(0, x)
    for coef in reversed(_PSI_SERIES):
        series = mul(add(series, _k(coef, x)), inv2)
    psi = sub(sub(log(z), div(_k(0.5, x), z)), series)
    return sub(psi, acc)


def _series_sample_derivative(x, a, enabled, eps):
    """dx/da from the series of P(a, x): with S = sum_n c_n, c_0 = 1,
    c_n = c_{n-1} x / (a + n), P = x^a e^-x / Gamma(a + 1) * S."""

    def cond(vals):
        return _any(vals[0])

    def body(vals):
        on, r, c, ans, dc_da, dans_da = vals
        r_new = add(r, _k(1, r))
        # d c_n / da = d c_{n-1} / da * x / r - c_{n-1} x / r^2
        dc_new = sub(mul(dc_da, div(x, r_new)), div(mul(c, x), mul(r_new, r_new)))
        dans_new = add(dans_da, dc_new)
        c_new = mul(c, div(x, r_new))
        ans_new = add(ans, c_new)
        going = bitwise_and(on, gt(abs(div(dc_new, dans_new)), _k(eps, x)))
        keep = lambda new, old: select(on, new, old)  # noqa: E731
        return (
            going,
            keep(r_new, r),
            keep(c_new, c),
            keep(ans_new, ans),
            keep(dc_new, dc_da),
            keep(dans_new, dans_da),
        )

    init = (enabled, a, _full(1, a), _full(1, a), _full(0, a), _full(0, a))
    _, _, _, ans, _, dans_da = while_loop(cond, body, init)
    dlogax_da = sub(log(x), _digamma_positive(add(a, _k(1, a))))
    return div(mul(neg(add(dans_da, mul(ans, dlogax_da))), x), a)


def _cf_sample_derivative(x, a, enabled, eps):
    """dx/da from the continued fraction of Q(a, x) (convergents p_k / q_k, carried with their
    derivatives in `a` and rescaled by eps when they grow past 1 / eps)."""

    def cond(vals):
        return bitwise_and(lt(vals[4], _k(_CF_MAX_TERMS, x)), _any(vals[0]))

    def body(vals):
        on, ans, y, z, cnt, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans = vals
        cnt = add(cnt, _k(1, cnt))
        y_new = add(y, _k(1, y))
        z_new = add(z, _k(2, z))
        yc = mul(y_new, cnt)
        pk = sub(mul(pkm1, z_new), mul(pkm2, yc))
        qk = sub(mul(qkm1, z_new), mul(qkm2, yc))
        nonzero = ne(qk, _k(0, qk))
        ans_new = select(nonzero, div(pk, qk), ans)
        dpk = add(sub(sub(mul(dpkm1, z_new), pkm1), mul(dpkm2, yc)), mul(pkm2, cnt))
        dqk = add(sub(sub(mul(dqkm1, z_new), qkm1), mul(dqkm2, yc)), mul(qkm2, cnt))
        dans_new = select(nonzero, div(sub(dpk, mul(ans_new, dqk)), qk), dans)
        change = select(nonzero, abs(sub(dans_new, dans)), _full(1, dans))
        # shift the recurrence, rescaling every carried convergent where p_k is huge
        big = gt(abs(pk), _k(1 / eps, pk))

        def scale(v):
            return select(big, mul(v, _k(eps, v)), v)

        shifted = [scale(v) for v in (pkm1, pk, qkm1, qk, dpkm1, dqkm1, dpk, dqk)]
        going = bitwise_and(on, gt(change, _k(eps, change)))
        new = (ans_new, y_new, z_new)
        old = (ans, y, z)
        olds = (pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1)
        news = (
            shifted[1],  # p_{k-1} <- p_k
            shifted[3],  # q_{k-1} <- q_k
            shifted[0],  # p_{k-2} <- p_{k-1}
            shifted[2],  # q_{k-2} <- q_{k-1}
            shifted[4],
            shifted[5],
            shifted[6],
            shifted[7],
        )
        return (
            going,
            *(select(on, n, o) for n, o in zip(new, old)),
            cnt,
            *(select(on, n, o) for n, o in zip(news, olds)),
            select(on, dans_new, dans),
        )

    y = sub(_k(1, a), a)
    z = add(add(x, y), _k(1, x))
    pkm2 = _full(1, x)
    qkm2 = x
    pkm1 = add(x, _k(1, x))
    qkm1 = mul(z, x)
    ans = div(pkm1, qkm1)
    dqkm1 = neg(x)
    dans = div(neg(mul(ans, dqkm1)), qkm1)
    zeros = _full(0, x)
    init = (enabled, ans, y, z, np.array(0, x.dtype), pkm1, qkm1, pkm2, qkm2)
    init = init + (zeros, zeros, zeros, dqkm1, dans)
    vals = while_loop(cond, body, init)
    ans, dans = vals[1], vals[13]
    dlogax_da = sub(log(x), _digamma_positive(a))
    return mul(neg(add(dans, mul(ans, dlogax_da))), x)


def _sample_derivative(a, x):
    eps = float(np.finfo(a.dtype).eps)
    is_nan = bitwise_or(ne(a, a), ne(x, x))
    x_is_zero = eq(x, _k(0, x))
    domain_error = bitwise_or(lt(x, _k(0, x)), le(a, _k(0, a)))
    use_cf = bitwise_and(gt(x, _k(1, x)), gt(x, a))
    log_ax = sub(sub(mul(a, log(x)), x), lgamma(a))
    underflow = lt(log_ax, _k(-math.log(float(np.finfo(a.dtype).max)), a))
    enabled = bitwise_not(
        bitwise_or(bitwise_or(bitwise_or(x_is_zero, domain_error), underflow), is_nan)
    )
    # each method runs on every lane (disabled where the other one serves it)
    cf = _cf_sample_derivative(x, a, bitwise_and(enabled, use_cf), eps)
    series = _series_sample_derivative(x, a, bitwise_and(enabled, bitwise_not(use_cf)), eps)
    out = select(use_cf, neg(cf), series)
    out = select(x_is_zero, _full(0, out), out)
    return select(bitwise_or(domain_error, is_nan), _full(np.nan, a), out)


def random_gamma_grad(a, x):
    """The derivative of a Gamma(a, 1) sample `x` with respect to `a`, elementwise, as
    `jax.lax.random_gamma_grad` (implicit reparameterisation).

    Args:
        a: the shape parameter, a float array.
        x: samples of Gamma(a, 1), a float array of a's dtype. As in JAX, the operands
            broadcast to their common shape with a lower-rank operand aligned on the leading
            axes; float16 and bfloat16 are computed in float32.
    Returns:
        dx/da, of the broadcast shape and a's dtype; 0 where x == 0, NaN where x < 0 or
        a <= 0.
    """
    a, x = _lift(a), _lift(x)
    for name, v in (("a", a), ("x", x)):
        if not pdt.is_inexact(v.dtype) or v.dtype.kind == "c":
            raise errors.PurejitTypeError(
                f"lax.random_gamma_grad: {name} must be a real float array, got "
                f"{v.aval.str_short()}{_where()}; convert it with convert_element_type"
            )
    shape = broadcast_shapes_named("lax.random_gamma_grad", a.shape, x.shape)
    for name, v in (("a", a), ("x", x)):
        if any(d not in (1, shape[i]) for i, d in enumerate(v.shape)):
            raise errors.PurejitTypeError(
                f"lax.random_gamma_grad: {name} {v.aval.str_short()} does not broadcast to "
                f"{list(shape)} along the leading axes (jax.lax.random_gamma_grad aligns a "
                f"lower-rank operand on the leading axes){_where()}; broadcast it first"
            )
    a = broadcast_in_dim(a, shape, tuple(range(a.ndim)))
    x = broadcast_in_dim(x, shape, tuple(range(x.ndim)))
    out_dtype = a.dtype
    weak = a.weak_type and x.weak_type
    if out_dtype in (np.dtype(np.float16), pdt.bfloat16):
        a, x = convert(a, np.float32), convert(x, np.float32)
    if a.dtype != x.dtype:
        raise errors.PurejitTypeError(
            f"lax.random_gamma_grad requires a and x to have the same dtype, got "
            f"{a.dtype.name} and {x.dtype.name}{_where()}; convert with convert_element_type"
        )
    return convert(_sample_derivative(a, x), out_dtype, weak=weak)
