"""angle, fabs, divmod, modf, float_power, frexp, ldexp, gcd, lcm, bitwise_count, fmax, fmin,
spacing, isposinf/isneginf, iscomplex/isreal(obj), sort_complex and i0 against jax.numpy."""

import jax.numpy as jjnp
import numpy as np
import pytest
from jnp_compare import check_cases

import purejit
import purejit.numpy as jnp

X = np.array([0.0, 1e-40, -3.0, np.inf, -np.inf, np.nan, 8.0, -0.5, 2.5, 25.0, -30.0], np.float32)
IS = np.array([12, -18, 0, 7, -1], np.int32)
JS = np.array([8, 6, 5, 0, -3], np.int32)

CASES = {
    "angle": lambda m, x, i, j: (m.angle(x), m.angle(i), m.angle(x + 1j * x[::-1], deg=True),
                                 m.angle(3), m.angle(2.0)),
    "fabs": lambda m, x, i, j: (m.fabs(x), m.fabs(i), m.fabs(-2)),
    "divmod": lambda m, x, i, j: (m.divmod(i, j), m.divmod(x, 1.5), m.divmod(5, 3)),
    "modf": lambda m, x, i, j: (m.modf(x), m.modf(3)),
    "float_power": lambda m, x, i, j: (m.float_power(i, 2), m.float_power(2, 3),
                                       m.float_power(x, 0.5)),
    "frexp": lambda m, x, i, j: (m.frexp(x), m.frexp(i), m.frexp(3),
                                 m.frexp(x[2:].astype(m.bfloat16)),
                                 m.frexp(x[2:].astype(m.float16))),
    "ldexp": lambda m, x, i, j: (m.ldexp(x, 3), m.ldexp(1.0, 3), m.ldexp(i, 2),
                                 m.ldexp(m.float32(1.5),
                                         m.array([130, -140, 300, -300, 128, -149, -150, 4]))),
    "gcd lcm": lambda m, x, i, j: (m.gcd(i, j), m.lcm(i, j), m.gcd(4, 6),
                                   m.lcm(i.astype(m.uint8), 6),
                                   m.gcd(i.astype(m.int8), j.astype(m.uint8))),
    "bitwise_count": lambda m, x, i, j: (m.bitwise_count(i), m.bitwise_count(i.astype(m.uint16)),
                                         m.bitwise_count(i.astype(m.int8) * 20),
                                         m.bitwise_count(5), m.bitwise_count(i > 0)),
    "fmax fmin": lambda m, x, i, j: (m.fmax(x, x[::-1]), m.fmin(x, x[::-1]), m.fmax(1, 2),
                                     m.fmin(i, j)),
    "spacing": lambda m, x, i, j: (m.spacing(x), m.spacing(1), m.spacing(x.astype(m.float16))),
    "isposinf": lambda m, x, i, j: (m.isposinf(x), m.isneginf(x), m.isposinf(i), m.isneginf(2)),
    "iscomplex": lambda m, x, i, j: (m.iscomplex(x), m.isreal(x + 1j * x), m.iscomplex(3),
                                     m.isreal(1 + 0j)),
    "sort_complex": lambda m, x, i, j: (m.sort_complex(i), m.sort_complex(x[:3] + 1j * x[3:6])),
    "i0": lambda m, x, i, j: (m.i0(m.where(m.isfinite(x), x, 1.0)), m.i0(i), m.i0(2.0),
                              m.i0(m.linspace(-40, 40, 81)), m.i0(x[6:].astype(m.float16))),
}  # fmt: skip


def test_against_jax():
    check_cases(CASES, X, IS, JS, eager=True, rtol=3e-6)


def test_i0_bits_and_derivative_are_jax():
    # exp(|x|) lax.bessel_i0e(|x|), with the tangent zeroed at 0 (I0'(0) = I1(0) = 0)
    import jax

    x = np.array([0.0, -0.0, 1e-3, 0.5, 7.9, 8.1, 30.0, -2.0, 3.0], np.float32)
    for f, g in ((jjnp.i0, jnp.i0), (jax.grad(jjnp.i0), purejit.grad(jnp.i0))):
        want = np.asarray(jax.jit(jax.vmap(f))(x))
        got = np.asarray(purejit.jit(purejit.vmap(g))(x))
        np.testing.assert_allclose(got, want, rtol=3e-6, atol=0)
    assert float(purejit.grad(jnp.i0)(0.0)) == 0.0


def test_i0_float64():
    """float64 accuracy on both sides of Cephes' switch at |x| = 8 and far out."""
    x = np.concatenate([np.linspace(-50, 50, 201), [7.99, 8.0, 8.01, 700.0]])
    purejit.config.update("enable_x64", True)
    try:
        got = np.asarray(jnp.i0(jnp.asarray(x)))
    finally:
        purejit.config.update("enable_x64", False)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.i0(x), rtol=1e-13)


def test_objects_and_errors():
    assert jnp.iscomplexobj(1j) and not jnp.iscomplexobj([1, 2]) and jnp.isrealobj(X)
    assert jnp.iscomplexobj(jnp.asarray(X) * 1j) == jjnp.iscomplexobj(jjnp.asarray(X) * 1j)
    for fn, args, err in [
        (jnp.fabs, (1j,), TypeError),
        (jnp.frexp, (1j,), TypeError),
        (jnp.ldexp, (1.0, 2.0), ValueError),
        (jnp.gcd, (1.0, 2), ValueError),
        (jnp.lcm, (True, False), ValueError),
        (jnp.isposinf, (1j,), ValueError),
        (jnp.spacing, (1j,), ValueError),
        (jnp.bitwise_count, (1.5,), TypeError),
    ]:
        with pytest.raises(err):
            fn(*args)
