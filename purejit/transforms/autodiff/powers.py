"""JVP rules of the powers family (`ir/ops/powers.py`).

JAX's forms, product for product (`jax/_src/lax/lax.py`): the tangent of `x ** y` is
`t * (y * x**(y-1))` (`t * (2 * x)` for y == 2, `t` for y == 1, zero for y == 0), and that of
`square(x)` is `t * (2 * x)`, that of `one_minus_square(x)` is `t * (-2 * x)` and that of
`log2(x)` is `t / (x * log(2))`. No op here is linear, so none has a transpose rule: reverse
mode transposes the multiplies of these tangents.
"""

from __future__ import annotations

from purejit.transforms.autodiff._core import Zero, aval, defjvp, div, full_like, mul, op


def _two_x(x):
    return mul(full_like(x, 2), x)


@defjvp("integer_pow")
def _integer_pow_jvp(ctx, primals, tangents, attrs, regions):
    (x,), (t,), y = primals, tangents, attrs["y"]
    z = op("integer_pow", x, y=y)
    if y == 0:
        return [z], [Zero(aval(t))]
    if y == 1:
        return [z], [t]
    if y == 2:
        return [z], [mul(t, _two_x(x))]
    return [z], [mul(t, mul(full_like(x, y), op("integer_pow", x, y=y - 1)))]


@defjvp("square")
def _square_jvp(ctx, primals, tangents, attrs, regions):
    (x,), (t,) = primals, tangents
    return [op("square", x)], [mul(t, _two_x(x))]


@defjvp("one_minus_square")
def _one_minus_square_jvp(ctx, primals, tangents, attrs, regions):
    # JAX defines the tangent as t * (-2 * x), not the product rule of (1 + x) * (1 - x),
    # which cancels to 0 for |x| below the epsilon
    (x,), (t,) = primals, tangents
    return [op("one_minus_square", x)], [mul(t, mul(full_like(x, -2), x))]


@defjvp("log2")
def _log2_jvp(ctx, primals, tangents, attrs, regions):
    # JAX: t / (x * log(2)), the log of 2 taken in x's dtype
    (x,), (t,) = primals, tangents
    return [op("log2", x)], [div(t, mul(x, op("log", full_like(x, 2))))]
