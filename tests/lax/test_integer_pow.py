"""`integer_pow` and `square` (ir/ops/powers.py) against JAX's primitives of the same names:
bits of the results (interpreter, eager, jit) and of the derivatives, the jaxpr that
`x ** n`, `jnp.power`, `jnp.square` and `jnp.reciprocal` make, batching and errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit import lax
from purejit.ir import Builder, TensorType, interpret, verify

BF16 = np.dtype(ml_dtypes.bfloat16)
EXPONENTS = list(range(-3, 6))
DTYPES = {"f32": np.float32, "bf16": BF16, "i32": np.int32}


def _inputs(dt):
    dt = np.dtype(dt)
    if dt.kind == "i":  # every width's wrap-around: big values overflow from n = 3
        return np.array([0, 1, -1, 2, -3, 7, 11, -40, 1000, 46341, -2**31], dt)  # fmt: skip
    v = np.random.default_rng(0).normal(size=64) * 3
    v[:8] = [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, 1e30]
    with np.errstate(over="ignore"):
        return v.astype(dt)


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    nan = np.zeros(want.shape, bool)
    if want.dtype.kind != "i":  # NaN is NaN (payloads are the backend's)
        nan = np.isnan(want.astype(np.complex128))
        assert (np.isnan(got.astype(np.complex128)) == nan).all(), what
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan], err_msg=what)


def _exponents(dt):
    return [n for n in EXPONENTS if n >= 0 or np.dtype(dt).kind != "i"]


@pytest.mark.parametrize("name", list(DTYPES))
def test_bits_match_jax_in_the_interpreter_eagerly_and_under_jit(name):
    dt = DTYPES[name]
    x = _inputs(dt)
    ns = _exponents(dt)
    want = jax.jit(lambda v: [jax.lax.integer_pow(v, n) for n in ns])(x)
    got_jit = purejit.jit(lambda v: [lax.integer_pow(v, n) for n in ns])(x)
    b = Builder("powers")
    p = b.param(TensorType(x.shape, x.dtype))
    fn = verify(b.finish([b.op("integer_pow", [p], {"y": n})[0] for n in ns]))
    got_ir = interpret(fn, x)
    for n, w, gj, gi in zip(ns, want, got_jit, got_ir, strict=True):
        _same(gj, w, f"jit {name} ** {n}")
        _same(gi, w, f"interpreter {name} ** {n}")
        _same(lax.integer_pow(x, n), w, f"eager {name} ** {n}")
        _same(pnp.power(x, n), jnp.power(x, n), f"jnp.power {name}, {n}")


@pytest.mark.parametrize("dt", [np.float32, BF16, np.int32, np.complex64], ids=str)
def test_square_matches_jax_including_chlo_complex_form(dt):
    rng = np.random.default_rng(1)
    v = rng.normal(size=256) * np.exp(rng.normal(size=256) * 2)
    if np.dtype(dt).kind == "c":
        v = v + 1j * rng.normal(size=256) * np.exp(rng.normal(size=256) * 2)
    x = (v * 100 if np.dtype(dt).kind == "i" else v).astype(dt)
    want = jax.jit(jnp.square)(x)
    _same(purejit.jit(pnp.square)(x), want, "jit")
    _same(pnp.square(x), want, "eager")
    _same(lax.square(x), jax.lax.square(x), "lax")
    b = Builder("sq")
    p = b.param(TensorType(x.shape, x.dtype))
    _same(interpret(verify(b.finish(b.op("square", [p]))), x)[0], want, "interpreter")


def test_complex_powers_keep_jaxs_operand_order():
    rng = np.random.default_rng(2)
    x = (rng.normal(size=512) + 1j * rng.normal(size=512)).astype(np.complex64)
    for n in EXPONENTS:
        _same(purejit.jit(lambda v: v**n)(x), jax.jit(lambda v: v**n)(x), f"c64 ** {n}")


@pytest.mark.parametrize("name", ["f32", "bf16"])
def test_derivatives_match_jax_bit_for_bit(name):
    x = _inputs(DTYPES[name])[8:]  # finite, nonzero

    def loss(np_, lax_):
        def f(v):
            terms = [np_.sum(v**n) for n in EXPONENTS]
            terms += [np_.sum(np_.square(v)), np_.sum(np_.reciprocal(v))]
            terms += [np_.sum(lax_.integer_pow(v, 3) * v)]
            return sum(terms[1:], terms[0])

        return f

    want = jax.jit(jax.grad(loss(jnp, jax.lax)))(x)
    _same(purejit.jit(purejit.grad(loss(pnp, lax)))(x), want, "jit(grad)")
    _same(purejit.grad(loss(pnp, lax))(x), jax.grad(loss(jnp, jax.lax))(x), "eager grad")
    for n in EXPONENTS:  # each power's derivative alone
        g = purejit.jit(purejit.grad(lambda v: pnp.sum(v**n)))(x)
        _same(g, jax.jit(jax.grad(lambda v: jnp.sum(v**n)))(x), f"d/dx x**{n}")


def test_optax_matyas_gradient_is_jaxs():
    """The cotangent of `0.26 (x**2 + y**2) - 0.48 x y` is one product per power, as JAX's
    (`t * (2 x)`): with `x * x` it was the sum `(a + t x) + x t`, a few ulps away, and
    Optax's L-BFGS against its plain loop drifted 150 ulps from JAX's in 15 steps."""

    def matyas(p):
        x, y = p
        return 0.26 * (x**2 + y**2) - 0.48 * x * y

    p = np.array([1086324233, 1086324233], np.uint32).view(np.float32)
    want = jax.jit(jax.value_and_grad(matyas))(p)
    got = purejit.jit(purejit.value_and_grad(matyas))(p)
    _same(got[0], want[0], "value")
    _same(got[1], want[1], "gradient")


def test_jaxprs_name_the_primitives_jax_names():
    x = np.ones(3, np.float32)
    text = str(purejit.make_jaxpr(lambda v: (v**2, pnp.power(v, -3), pnp.square(v)))(x))
    assert "integer_pow(%0) {y=2}" in text and "integer_pow(%0) {y=-3}" in text, text
    assert "square(%0)" in text and "multiply" not in text, text
    assert "integer_pow(%0) {y=-1}" in str(purejit.make_jaxpr(pnp.reciprocal)(x))
    assert "power(" in str(purejit.make_jaxpr(lambda v: v**2.0)(x))  # a float exponent


def test_vmap_and_weak_types_follow_jax():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    f = lambda v: lax.integer_pow(v, 3) + pnp.square(v)  # noqa: E731
    g = lambda v: jax.lax.integer_pow(v, 3) + jnp.square(v)  # noqa: E731
    _same(purejit.vmap(f, in_axes=1)(x), jax.vmap(g, in_axes=1)(x), "vmap")
    for v in (2.0, 3, np.float32(1.5)):
        w, got = jax.numpy.power(v, 3), pnp.power(v, 3)
        assert (got.dtype, got.weak_type) == (w.dtype, w.weak_type), v
        w, got = jax.numpy.square(v), pnp.square(v)
        assert (got.dtype, got.weak_type) == (w.dtype, w.weak_type), v
    _same(pnp.square(np.array([True, False])), jnp.square(np.array([True, False])), "bool")


def test_errors_name_the_op_and_the_types():
    with pytest.raises(TypeError, match="negative powers"):
        pnp.power(np.arange(3), -2)
    with pytest.raises(TypeError, match=r"integer_pow.*negative powers.*s32\[3\]"):
        purejit.jit(lambda v: lax.integer_pow(v, -1))(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match=r"integer_pow.*pred"):
        lax.integer_pow(np.array([True]), 2)
