"""JVP rules of the powers family (`ir/ops/powers.py`).

JAX's forms, product for product (`jax/_src/lax/lax.py`): the tangent of `x ** y` is
`t * (y * x**(y-1))` (`t * (2 * x)` for y == 2, `t` for y == 1, zero for y == 0), and that of
`square(x)` is `t * (2 * x)`. Neither op is linear, so neither has a transpose rule: reverse
mode transposes the multiplies of these tangents.
"""

from __future__ import annotations

from purejit.transforms.autodiff._core import Zero, aval, defjvp, full_like, mul, op


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
