"""The regularised incomplete gamma and beta functions of jax.lax, composed from IR ops with
the iterations XLA's math library (and so JAX) uses:

    igamma(a, x)         P(a, x), the lower one
    igammac(a, x)        Q(a, x) = 1 - P(a, x)
    igamma_grad_a(a, x)  dP/da
    betainc(a, b, x)     I_x(a, b)
    sample_derivative(a, x)  dx/da for x ~ Gamma(a, 1) at fixed P (random_gamma_grad's)

P comes from its power series where x < 1 or x <= a, Q from Legendre's continued fraction
elsewhere; each is a `while_loop` that carries the value and its derivative in `a` and
runs until every lane has converged to the dtype's epsilon (the fraction for at most 2000
terms). I_x(a, b) is the continued fraction of DLMF 8.17.22 by the modified Lentz method
(200 terms in float32, 600 in float64), with the symmetry I_x(a, b) = 1 - I_{1-x}(b, a)
where the fraction would converge slowly.

Their derivatives (JAX's rules) come from `purejit/special_gradients.py`, which registers
differentiable versions into `IMPLS` when purejit is imported; without it these functions
are only differentiable where JAX's loops would be.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Callable

import numpy as np

from purejit import dtypes as pdt
from purejit.lax._lift import broadcast_arrays_named, convert
from purejit.lax.control import while_loop
from purejit.lax.elementwise import (
    abs,
    add,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    div,
    eq,
    exp,
    ge,
    gt,
    le,
    lgamma,
    log,
    log1p,
    lt,
    mul,
    ne,
    neg,
    rem,
    sub,
)
from purejit.lax.ops import broadcast_in_dim, reduce, select
from purejit.lax.special_functions import _floats, digamma

_CF_MAX_TERMS = 2000


class Mode(enum.Enum):
    VALUE = 1  # P or Q
    DERIVATIVE = 2  # dP/da
    SAMPLE_DERIVATIVE = 3  # dx/da at fixed P


def _k(v, like):
    return np.array(v, like.dtype)


def _full(v, like):
    return broadcast_in_dim(_k(v, like), tuple(like.shape), ())


def _any(pred):
    return reduce(pred, np.bool_(False), lambda acc, x: bitwise_or(acc, x), tuple(range(pred.ndim)))


def _is_nan(v):
    return ne(v, v)


def _series(ax, x, a, enabled, mode: Mode):
    """P(a, x) = ax / a * sum_n c_n, c_0 = 1, c_n = c_{n-1} x / (a + n), with d/da of the
    sum carried alongside (ax = x^a e^-x / Gamma(a))."""
    eps = float(np.finfo(a.dtype).eps)

    def cond(vals):
        return _any(vals[0])

    def body(vals):
        on, r, c, ans, dc_da, dans_da = vals
        r_new = add(r, _k(1, r))
        dc_new = sub(mul(dc_da, div(x, r_new)), div(mul(c, x), mul(r_new, r_new)))
        dans_new = add(dans_da, dc_new)
        c_new = mul(c, div(x, r_new))
        ans_new = add(ans, c_new)
        if mode is Mode.VALUE:
            going = bitwise_and(on, gt(div(c_new, ans_new), _k(eps, x)))
        else:
            going = bitwise_and(on, gt(abs(div(dc_new, dans_new)), _k(eps, x)))
        new = (r_new, c_new, ans_new, dc_new, dans_new)
        return (going, *(select(on, n, o) for n, o in zip(new, vals[1:])))

    init = (enabled, a, _full(1, a), _full(1, a), _full(0, a), _full(0, a))
    _, _, _, ans, _, dans_da = while_loop(cond, body, init)
    if mode is Mode.VALUE:
        return div(mul(ans, ax), a)
    dlogax_da = sub(log(x), digamma(add(a, _k(1, a))))
    if mode is Mode.DERIVATIVE:
        return div(mul(ax, add(mul(ans, dlogax_da), dans_da)), a)
    return div(mul(neg(add(dans_da, mul(ans, dlogax_da))), x), a)


def _continued_fraction(ax, x, a, enabled, mode: Mode):
    """Q(a, x) = ax * (Legendre's continued fraction), its convergents p_k / q_k and their
    derivatives in `a` carried together and rescaled by eps when p_k grows past 1 / eps."""
    eps = float(np.finfo(a.dtype).eps)

    def cond(vals):
        return bitwise_and(lt(vals[5], _k(_CF_MAX_TERMS, x)), _any(vals[0]))

    def body(vals):
        on, ans, t, y, z, cnt, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans = vals
        cnt = add(cnt, _k(1, cnt))
        y_n = add(y, _k(1, y))
        z_n = add(z, _k(2, z))
        yc = mul(y_n, cnt)
        pk = sub(mul(pkm1, z_n), mul(pkm2, yc))
        qk = sub(mul(qkm1, z_n), mul(qkm2, yc))
        nonzero = ne(qk, _k(0, qk))
        r = div(pk, qk)
        t_n = select(nonzero, abs(div(sub(ans, r), r)), _full(1, r))
        ans_n = select(nonzero, r, ans)
        dpk = add(sub(sub(mul(dpkm1, z_n), pkm1), mul(dpkm2, yc)), mul(pkm2, cnt))
        dqk = add(sub(sub(mul(dqkm1, z_n), qkm1), mul(dqkm2, yc)), mul(qkm2, cnt))
        dans_n = select(nonzero, div(sub(dpk, mul(ans_n, dqk)), qk), dans)
        change = select(nonzero, abs(sub(dans_n, dans)), _full(1, dans))
        big = gt(abs(pk), _k(1 / eps, pk))

        def scale(v):
            return select(big, mul(v, _k(eps, v)), v)

        # shift the recurrence (k-1 <- k, k-2 <- k-1), rescaled where p_k is huge
        shifted = [scale(v) for v in (pk, qk, pkm1, qkm1, dpkm1, dqkm1, dpk, dqk)]
        if mode is Mode.VALUE:
            going = bitwise_and(on, gt(t_n, _k(eps, t_n)))
        else:
            going = bitwise_and(on, gt(change, _k(eps, change)))
        keep = lambda n, o: select(on, n, o)  # noqa: E731
        head = (keep(n, o) for n, o in zip((ans_n, t_n, y_n, z_n), vals[1:5]))
        tail = (keep(n, o) for n, o in zip((*shifted, dans_n), vals[6:]))
        return (going, *head, cnt, *tail)

    y = sub(_k(1, a), a)
    z = add(add(x, y), _k(1, x))
    pkm1 = add(x, _k(1, x))
    qkm1 = mul(z, x)
    ans = div(pkm1, qkm1)
    dqkm1 = neg(x)
    dans = div(neg(mul(ans, dqkm1)), qkm1)
    zeros = _full(0, x)
    init = (enabled, ans, _full(1, x), y, z, np.array(0, x.dtype), pkm1, qkm1, _full(1, x), x)
    init = init + (zeros, zeros, zeros, dqkm1, dans)
    vals = while_loop(cond, body, init)
    ans, dans = vals[1], vals[14]
    if mode is Mode.VALUE:
        return mul(ans, ax)
    dlogax_da = sub(log(x), digamma(a))
    if mode is Mode.DERIVATIVE:
        return mul(ax, add(mul(ans, dlogax_da), dans))
    return mul(neg(add(dans, mul(ans, dlogax_da))), x)


def _log_ax(a, x):
    """log(x^a e^-x / Gamma(a)), and whether exp of it underflows."""
    lax_ = sub(sub(mul(a, log(x)), x), lgamma(a))
    return lax_, lt(lax_, _k(-math.log(float(np.finfo(a.dtype).max)), a))


def _narrow_in_float32(fn: Callable) -> Callable:
    """`fn` computed in float32 for float16 and bfloat16 operands (as JAX does: the loops'
    tolerances need float32's epsilon), the result converted back."""

    @functools.wraps(fn)
    def wrapped(*xs):
        dt = xs[0].dtype
        if dt not in (np.dtype(np.float16), pdt.bfloat16):
            return fn(*xs)
        return convert(fn(*(convert(v, np.float32) for v in xs)), dt)

    return wrapped


def _any_of(*preds):
    out = preds[0]
    for p in preds[1:]:
        out = bitwise_or(out, p)
    return out


@_narrow_in_float32
def igamma_value(a, x):
    is_nan = bitwise_or(_is_nan(a), _is_nan(x))
    x_inf = eq(x, _k(np.inf, x))
    a_zero, x_zero = eq(a, _k(0, a)), eq(x, _k(0, x))
    bad = _any_of(lt(x, _k(0, x)), lt(a, _k(0, a)), bitwise_and(a_zero, x_zero), is_nan)
    use_cf = bitwise_and(ge(x, _k(1, x)), gt(x, a))
    log_ax, underflow = _log_ax(a, x)
    ax = exp(log_ax)
    on = bitwise_not(_any_of(x_zero, bad, underflow, x_inf))
    cf = _continued_fraction(ax, x, a, bitwise_and(on, use_cf), Mode.VALUE)
    series = _series(ax, x, a, bitwise_and(on, bitwise_not(use_cf)), Mode.VALUE)
    out = select(use_cf, sub(_k(1, a), cf), series)
    out = select(x_zero, _full(0, a), out)
    out = select(x_inf, _full(1, a), out)
    return select(bad, _full(np.nan, a), out)


@_narrow_in_float32
def igammac_value(a, x):
    is_nan = bitwise_or(_is_nan(a), _is_nan(x))
    a_zero, x_zero = eq(a, _k(0, a)), eq(x, _k(0, x))
    x_inf = eq(x, _k(np.inf, x))
    bad = _any_of(lt(x, _k(0, x)), lt(a, _k(0, a)), bitwise_and(a_zero, x_zero), is_nan)
    use_series = bitwise_or(lt(x, _k(1, x)), lt(x, a))
    log_ax, underflow = _log_ax(a, x)
    on = bitwise_not(_any_of(bad, underflow, x_inf, a_zero))
    ax = exp(log_ax)
    series = _series(ax, x, a, bitwise_and(on, use_series), Mode.VALUE)
    cf = _continued_fraction(ax, x, a, bitwise_and(on, bitwise_not(use_series)), Mode.VALUE)
    out = select(use_series, sub(_k(1, a), series), cf)
    out = select(bitwise_or(x_inf, a_zero), _full(0, a), out)
    return select(bad, _full(np.nan, a), out)


def _derivative(a, x, mode: Mode):
    is_nan = bitwise_or(_is_nan(a), _is_nan(x))
    x_zero = eq(x, _k(0, x))
    bad = bitwise_or(lt(x, _k(0, x)), le(a, _k(0, a)))
    use_cf = bitwise_and(gt(x, _k(1, x)), gt(x, a))
    log_ax, underflow = _log_ax(a, x)
    ax = exp(log_ax)
    on = bitwise_not(_any_of(x_zero, bad, underflow, is_nan))
    cf = _continued_fraction(ax, x, a, bitwise_and(on, use_cf), mode)
    series = _series(ax, x, a, bitwise_and(on, bitwise_not(use_cf)), mode)
    out = select(use_cf, neg(cf), series)
    out = select(x_zero, _full(0, out), out)
    return select(bitwise_or(bad, is_nan), _full(np.nan, a), out)


@_narrow_in_float32
def igamma_grad_a_value(a, x):
    return _derivative(a, x, Mode.DERIVATIVE)


def sample_derivative(a, x):
    """dx/da of a Gamma(a, 1) sample x (what `lax.random_gamma_grad` returns)."""
    return _derivative(a, x, Mode.SAMPLE_DERIVATIVE)


# ---- the regularised incomplete beta function ---------------------------------------------------


def _lentz(num_terms: int, small: float, numerator: Callable, denominator: Callable):
    """The modified Lentz evaluation of b_0 + a_1 / (b_1 + a_2 / (b_2 + ...)), stopping when
    every lane's step |delta - 1| is below `small` or after `num_terms` terms."""

    def cond(vals):
        return bitwise_and(lt(vals[0], np.int32(num_terms)), vals[1])

    def body(vals):
        it, _, c, d, h = vals
        an, bn = numerator(it), denominator(it)
        tiny = _k(small, h)
        c = add(bn, div(an, c))
        c = select(lt(abs(c), tiny), _full(small, c), c)
        d = add(bn, mul(an, d))
        d = select(lt(abs(d), tiny), _full(small, d), d)
        d = div(_k(1, d), d)
        delta = mul(c, d)
        h = mul(h, delta)
        unconverged = _any(ge(abs(sub(delta, _k(1, delta))), tiny))
        return add(it, np.int32(1)), unconverged, c, d, h

    b0 = denominator(np.int32(0))
    h = select(lt(abs(b0), _k(small, b0)), _full(small, b0), b0)
    vals = while_loop(cond, body, (np.int32(1), np.bool_(True), h, _full(0, h), h))
    return vals[4]


@_narrow_in_float32
def betainc_value(a, b, x):
    dt = a.dtype
    one, two = _k(1, a), _k(2, a)
    a_zero = bitwise_or(eq(a, _k(0, a)), eq(b, _k(np.inf, b)))
    b_zero = bitwise_or(eq(b, _k(0, b)), eq(a, _k(np.inf, a)))
    x_zero, x_one = eq(x, _k(0, x)), eq(x, _k(1, x))
    is_nan = _any_of(_is_nan(a), _is_nan(b), _is_nan(x))
    zero_result = bitwise_or(bitwise_and(b_zero, bitwise_not(x_one)), bitwise_and(a_zero, x_zero))
    one_result = bitwise_or(bitwise_and(a_zero, bitwise_not(x_zero)), bitwise_and(b_zero, x_one))
    nan_result = _any_of(lt(a, _k(0, a)), lt(b, _k(0, b)), lt(x, _k(0, x)), gt(x, _k(1, x)),
                         bitwise_and(a_zero, b_zero), is_nan)  # fmt: skip
    # DLMF 8.17.E23 converges fast for x < (a + 1) / (a + b + 2); else use 8.17.E4
    fast = lt(x, div(add(a, one), add(add(a, b), two)))
    a, b = select(fast, a, b), select(fast, b, a)
    x = select(fast, x, sub(_k(1, x), x))

    shape = tuple(a.shape)

    def numerator(it):
        # d_1 = 1, d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)) (m = 0: -(a+b) x / (a+1)),
        # d_{2m} = m (b-m) x / ((a+2m-1)(a+2m)), for the term number `it` (DLMF 8.17.22)
        m = broadcast_in_dim(convert(div(sub(it, np.int32(1)), np.int32(2)), dt), shape, ())
        even = eq(rem(it, np.int32(2)), np.int32(0))
        a2m = add(a, mul(two, m))
        zero_num = div(mul(neg(add(a, b)), x), add(a, one))
        even_num = div(mul(mul(neg(add(a, m)), add(add(a, b), m)), x), mul(a2m, add(a2m, one)))
        odd_num = div(mul(mul(m, sub(b, m)), x), mul(sub(a2m, one), a2m))
        num = select(even, select(eq(m, _k(0, m)), zero_num, even_num), odd_num)
        return select(eq(it, np.int32(1)), _full(1, x), num)

    def denominator(it):
        if isinstance(it, np.integer):
            return _full(0 if it == 0 else 1, x)
        return select(eq(it, np.int32(0)), _full(0, x), _full(1, x))

    eps = float(np.finfo(dt).eps)
    cf = _lentz(200 if dt == np.float32 else 600, eps / 2, numerator, denominator)
    # a Gamma(a) -> 1 as a -> 0: use it for tiny a, avoiding the division by a
    tiny = lt(a, _k(float(np.finfo(dt).tiny) * 2, a))
    lbeta_small = sub(lgamma(b), lgamma(add(a, b)))
    lbeta = add(lgamma(a), lbeta_small)
    factor = select(
        tiny,
        exp(sub(mul(log1p(neg(x)), b), lbeta_small)),
        div(exp(sub(add(mul(log(x), a), mul(log1p(neg(x)), b)), lbeta)), a),
    )
    out = mul(cf, factor)
    out = select(fast, out, sub(_k(1, out), out))
    out = select(zero_result, _full(0, out), out)
    out = select(one_result, _full(1, out), out)
    return select(nan_result, _full(np.nan, out), out)


# ---- the public functions -----------------------------------------------------------------------

# differentiable versions, registered by purejit/special_gradients.py
IMPLS: dict[str, Callable] = {}


def register(name: str, impl: Callable) -> None:
    """Install the differentiable implementation of `name`."""
    IMPLS[name] = impl


def _run(name: str, raw: Callable, *args):
    xs = broadcast_arrays_named(name, *_floats(name, *args))
    # weakly typed only when every operand is (JAX's rule for its primitives); the loops
    # inside carry strong values
    weak = all(v.weak_type for v in xs)
    out = IMPLS.get(name, raw)(*xs)
    return convert(out, out.dtype, weak=weak)


def igamma(a, x):
    """The regularised lower incomplete gamma function P(a, x), elementwise, as
    `jax.lax.igamma` (differentiable in a and x)."""
    return _run("igamma", igamma_value, a, x)


def igammac(a, x):
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x), elementwise,
    as `jax.lax.igammac` (differentiable in a and x)."""
    return _run("igammac", igammac_value, a, x)


def igamma_grad_a(a, x):
    """dP(a, x)/da, elementwise, as `jax.lax.igamma_grad_a`."""
    return _run("igamma_grad_a", igamma_grad_a_value, a, x)


def betainc(a, b, x):
    """The regularised incomplete beta function I_x(a, b), elementwise, as
    `jax.lax.betainc` (differentiable in x; JAX has no derivative in a or b either)."""
    return _run("betainc", betainc_value, a, b, x)
