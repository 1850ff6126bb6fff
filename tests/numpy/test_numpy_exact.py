"""Exact where JAX is exact: x ** 2 equals x * x eagerly (as under jit), linspace and
quantile equal jax.numpy's bit for bit."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("dt", [np.float32, np.complex64])
def test_square_by_power_is_exact(dt):
    x = RNG.standard_normal(1000).astype(dt)
    if dt == np.complex64:
        x = (x + 1j * RNG.standard_normal(1000)).astype(dt)
    a = jnp.asarray(x)
    for p in (2, 3, np.int32(2)):
        got = np.asarray(a**p)
        np.testing.assert_array_equal(got, np.asarray(jjnp.asarray(x) ** p))
    np.testing.assert_array_equal(np.asarray(a**2), np.asarray(a * a))
    np.testing.assert_array_equal(np.asarray(purejit.jit(lambda v: v**2)(x)), np.asarray(a * a))


def test_integer_power_types():
    for base, p in ((jnp.asarray([True, False]), 2), (2, 3), (2.0, 2), (jnp.arange(3.0), -2)):
        ref_base = jjnp.asarray(np.asarray(base)) if hasattr(base, "dtype") else base
        got, want = jnp.power(base, p), jjnp.power(ref_base, p)
        assert got.dtype == want.dtype and got.weak_type == want.weak_type, (base, p)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(TypeError):
        jnp.power(jnp.arange(3), -1)


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
def test_integer_array_power_is_jaxs(dt):
    # jax.numpy's six squarings on every jaxlib (XLA's own integer power reads all the
    # exponent's bits from jaxlib 0.12 on, and gave 0 ** 64 = 1 before): 0 ** 64, 2 ** 64,
    # exponents past 64, overflow, eager and under jit
    big = min(np.iinfo(dt).max, 200)
    e = np.array([0, 1, 2, 5, 31, 63, 64, 65, 100, big, 7, 64], dt)
    b = np.array(
        [0, 0, 2, -2 if np.issubdtype(dt, np.signedinteger) else 250, 3, 2, 2, 3, 0, 5, 36, 0], dt
    )
    want = np.asarray(jjnp.power(b, e))
    np.testing.assert_array_equal(np.asarray(jnp.power(b, e)), want)
    np.testing.assert_array_equal(np.asarray(purejit.jit(jnp.power)(b, e)), want)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(b) ** jnp.asarray(e)), want)


def test_lax_pow_takes_floats_as_jax_does():
    x, n = np.array([2.0, 3.0], np.float32), np.array([3, 2], np.int32)
    np.testing.assert_array_equal(np.asarray(purejit.lax.pow(x, n)), np.asarray(jax.lax.pow(x, n)))
    with pytest.raises(TypeError, match="lax.pow does not accept dtype int32"):
        purejit.lax.pow(n, n)


LINSPACE = [
    (0.0, 1.0, 1000, {}),
    (-3.3, 7.1, 999, {}),
    (1.0, 1000.0, 777, {"endpoint": False}),
    (0, 10, 101, {"dtype": np.int32}),
    (np.array([0.0, 1.0]), np.array([5.0, -2.0]), 333, {"axis": 1}),
    (2.0, 3.0, 1, {}),
    (2.0, 3.0, 0, {}),
]


@pytest.mark.parametrize("start,stop,num,kw", LINSPACE)
def test_linspace_bit_identical(start, stop, num, kw):
    want = np.asarray(jjnp.linspace(start, stop, num, **kw))
    got = jnp.linspace(start, stop, num, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)
    jitted = purejit.jit(lambda a, b: jnp.linspace(a, b, num, **kw))(start, stop)
    np.testing.assert_array_equal(np.asarray(jitted), want)
    _, step = jnp.linspace(start, stop, num, retstep=True, **kw)
    np.testing.assert_array_equal(
        np.asarray(step), np.asarray(jjnp.linspace(start, stop, num, retstep=True, **kw)[1])
    )


def test_quantile_bit_identical():
    x = RNG.standard_normal((4, 37)).astype(np.float32)
    for fn in (lambda m, a: m.percentile(a, 30.0, axis=1),
               lambda m, a: m.quantile(a, m.asarray([0.1, 0.5, 0.9]), axis=0),
               lambda m, a: m.median(a, axis=1)):  # fmt: skip
        np.testing.assert_array_equal(np.asarray(fn(jnp, jnp.asarray(x))),
                                      np.asarray(fn(jjnp, jax.numpy.asarray(x))))  # fmt: skip
