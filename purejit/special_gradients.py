"""The derivatives of lax's incomplete gamma and beta functions (`purejit/lax/incomplete.py`),
registered into lax when purejit is imported: each function becomes a `custom_jvp` whose
rule is linear in the tangents, so reverse mode never has to transpose their while loops.

    igamma(a, x):        dP/dx = x^(a-1) e^-x / Gamma(a),  dP/da = igamma_grad_a(a, x)
    igammac(a, x):       the negatives
    igamma_grad_a(a, x): d/dx = dP/dx (log x - digamma(a)); d/da by forward-mode
                         differentiation of its own series / continued fraction
    betainc(a, b, x):    dI/dx = x^(a-1) (1-x)^(b-1) / B(a, b); d/da and d/db by forward-mode
                         differentiation of the continued fraction
    bessel_i0e(x):       i1e(x) - sign(x) i0e(x) (differentiating the Chebyshev expansions
                         instead gives NaN at 0 and a 1e-3 relative error near it)
    jnp.logaddexp(x, y): t_x exp(x - out) + t_y exp(y - out), +inf read as 0 (and base 2 for
                         logaddexp2), as JAX's custom JVPs

JAX defines the same first derivatives; it has no derivative of `betainc` in a or b, nor of
`igamma_grad_a` in a: purejit's come from differentiating the converged iterations (exact
for the truncated fraction, checked against finite differences in the tests), because
purejit's custom_jvp instantiates zero tangents, so a rule that refused them would refuse
every derivative of the other operands too.
"""

from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np

from purejit.autodiff import jvp
from purejit.custom_derivatives import custom_jvp
from purejit.lax import incomplete, special_functions
from purejit.lax.arithmetic import exp2
from purejit.lax.elementwise import abs as abs_
from purejit.lax.elementwise import eq, le, real
from purejit.lax.ops import select
from purejit.numpy import _arithmetic, _calculus, _elementwise
from purejit.lax.elementwise import add, div, exp, lgamma, log, log1p, mul, neg, sign, sub
from purejit.lax.special_functions import bessel_i1e, digamma


def _one(v):
    return np.array(1, v.dtype)


def _dp_dx(a, x):
    # x^(a-1) e^-x / Gamma(a), in logs
    return exp(sub(sub(mul(sub(a, _one(a)), log(x)), x), lgamma(a)))


def _forward(fn, args, which: int):
    """d fn / d args[which] by forward mode (through fn's while loops)."""
    tangents = tuple(np.ones(v.shape, v.dtype) if i == which else np.zeros(v.shape, v.dtype)
                     for i, v in enumerate(args))  # fmt: skip
    return jvp(fn, tuple(args), tangents)[1]


@custom_jvp
def igamma_grad_a(a, x):
    return incomplete.igamma_grad_a_value(a, x)


@igamma_grad_a.defjvp
def _igamma_grad_a_jvp(primals, tangents):
    a, x = primals
    ta, tx = tangents
    out = igamma_grad_a(a, x)
    d_da = _forward(incomplete.igamma_grad_a_value, (a, x), 0)
    d_dx = mul(_dp_dx(a, x), sub(log(x), digamma(a)))
    return out, add(mul(d_da, ta), mul(d_dx, tx))


@custom_jvp
def igamma(a, x):
    return incomplete.igamma_value(a, x)


@igamma.defjvp
def _igamma_jvp(primals, tangents):
    a, x = primals
    ta, tx = tangents
    return igamma(a, x), add(mul(igamma_grad_a(a, x), ta), mul(_dp_dx(a, x), tx))


@custom_jvp
def igammac(a, x):
    return incomplete.igammac_value(a, x)


@igammac.defjvp
def _igammac_jvp(primals, tangents):
    a, x = primals
    ta, tx = tangents
    d = add(mul(igamma_grad_a(a, x), ta), mul(_dp_dx(a, x), tx))
    return igammac(a, x), neg(d)


@custom_jvp
def betainc(a, b, x):
    return incomplete.betainc_value(a, b, x)


@betainc.defjvp
def _betainc_jvp(primals, tangents):
    a, b, x = primals
    ta, tb, tx = tangents
    one = _one(a)
    lbeta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    d_dx = exp(sub(add(mul(sub(b, one), log1p(neg(x))), mul(sub(a, one), log(x))), lbeta))
    d_da = _forward(incomplete.betainc_value, (a, b, x), 0)
    d_db = _forward(incomplete.betainc_value, (a, b, x), 1)
    tangent = add(add(mul(d_da, ta), mul(d_db, tb)), mul(d_dx, tx))
    return betainc(a, b, x), tangent


for _name, _fn in (
    ("igamma", igamma),
    ("igammac", igammac),
    ("igamma_grad_a", igamma_grad_a),
    ("betainc", betainc),
):
    incomplete.register(_name, _fn)


@custom_jvp
def bessel_i0e(x):
    return special_functions.bessel_i0e_value(x)


@bessel_i0e.defjvp
def _bessel_i0e_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    y = bessel_i0e(x)
    return y, mul(tx, sub(bessel_i1e(x), mul(sign(x), y)))


special_functions.IMPLS["bessel_i0e"] = bessel_i0e


def _replace_inf(x):
    # +inf (in the real part) read as 0, so equal infinities give a finite derivative
    re = real(x) if np.dtype(x.dtype).kind == "c" else x
    return select(eq(re, np.array(np.inf, re.dtype)), np.zeros(x.shape, x.dtype), x)


def _logaddexp_rule(value, base_exp):
    @custom_jvp
    def f(a, b):
        return value(a, b)

    @f.defjvp
    def _jvp(primals, tangents):
        (a, b), (ta, tb) = primals, tangents
        out = f(a, b)
        ra, rb, ro = _replace_inf(a), _replace_inf(b), _replace_inf(out)
        return out, add(mul(ta, base_exp(sub(ra, ro))), mul(tb, base_exp(sub(rb, ro))))

    return f


_arithmetic.DERIVATIVE_RULES["logaddexp"] = _logaddexp_rule(_arithmetic.logaddexp_value, exp)
_arithmetic.DERIVATIVE_RULES["logaddexp2"] = _logaddexp_rule(_calculus.logaddexp2_value, exp2)


@custom_jvp
def _hypot(x1, x2):
    return _arithmetic.hypot_scaled(x1, x2)


@_hypot.defjvp
def _hypot_jvp(primals, tangents):
    # in _hypot's outputs only, as JAX's rule: derivatives of any order recurse through this
    # rule and never differentiate the power-of-two scale (whose powers overflow)
    (x1, x2), (t1, t2) = primals, tangents
    r, u1, u2 = _hypot(x1, x2)
    dr = add(mul(u1, t1), mul(u2, t2))
    return (r, u1, u2), (dr, div(sub(t1, mul(u1, dr)), r), div(sub(t2, mul(u2, dr)), r))


_arithmetic.DERIVATIVE_RULES["hypot"] = _hypot


# jax >= 0.11.2's i0 and i1 (jnp.i0, jax.scipy.special.i0/i1): I0' = I1 by a custom JVP, and
# I1's derivatives near 0 from its Maclaurin series, where differentiating exp(|x|) i1e(x)
# meets |x|'s cusp and cancellation


def _i1_value(x):
    return mul(exp(abs_(x)), bessel_i1e(x))


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _i1_maclaurin(k, x):
    # the k-th derivative of I1 near 0 from the series' first two terms
    if k % 2 == 0:
        return mul(np.array(math.comb(k + 1, (k + 1) // 2) / 2 ** (k + 1), x.dtype), x)
    return np.full(x.shape, math.comb(k, k // 2) / 2**k, x.dtype)


@_i1_maclaurin.defjvp
def _i1_maclaurin_jvp(k, primals, tangents):
    (x,), (t,) = primals, tangents
    return _i1_maclaurin(k, x), mul(_i1_maclaurin(k + 1, x), t)


@custom_jvp
def _i1(x):
    return _i1_value(x)


@_i1.defjvp
def _i1_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out, t_out = jvp(_i1_value, (x,), (t,))
    cutoff = np.array(math.sqrt(float(ml_dtypes.finfo(x.dtype).eps)), x.dtype)
    series = le(abs_(x), cutoff)
    return out, select(series, mul(_i1_maclaurin(1, x), t), t_out)


@custom_jvp
def _i0(x):
    ax = abs_(x)
    return mul(exp(ax), bessel_i0e(ax))


@_i0.defjvp
def _i0_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _i0(x), mul(t, _i1(x))


_arithmetic.DERIVATIVE_RULES["i0"] = _i0
_arithmetic.DERIVATIVE_RULES["i1"] = _i1


# jax >= 0.12's ldexp works on the exponent bits; its derivative in x is ldexp(t, n), here
# t * ldexp(1, n) so reverse mode can transpose it (equal bits wherever t * 2**n is normal)
@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _ldexp(x, n):
    return _elementwise.ldexp_bits(x, n)


@_ldexp.defjvp
def _ldexp_jvp(n, primals, tangents):
    (x,), (t,) = primals, tangents
    return _ldexp(x, n), mul(t, _elementwise.ldexp_bits(np.ones(x.shape, x.dtype), n))


_arithmetic.DERIVATIVE_RULES["ldexp"] = _ldexp


@custom_jvp
def _frexp(x):
    return _elementwise.frexp_program(x)


@_frexp.defjvp
def _frexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    m, e = _frexp(x)
    scale = _elementwise.ldexp_bits(np.ones(x.shape, x.dtype), neg(e))
    return (m, e), (mul(t, scale), np.zeros(e.shape, e.dtype))


_arithmetic.DERIVATIVE_RULES["frexp"] = _frexp
