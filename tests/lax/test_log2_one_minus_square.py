"""jax 0.11's `lax.log2` and `lax.one_minus_square` (IR ops `log2`, `one_minus_square` in
ir/ops/powers.py). The local jax (0.10.2) lacks both, so the references are JAX's formulas
computed in NumPy and the StableHLO JAX's lowering emits; tools/check_jax011_names.py compares
them with jax 0.11.2's bit for bit."""

import ml_dtypes
import numpy as np
import pytest

import purejit
from purejit import lax
from purejit.ir import Builder, TensorType, interpret, verify

BF16 = ml_dtypes.bfloat16
X32 = np.array([0.0, 1e-30, 0.3, 0.999, 1.0, 1.0001, 2.5, 7.0, 1e20, np.inf, np.nan], np.float32)


def _bits(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b), strict=True)


def test_one_minus_square_is_one_plus_x_times_one_minus_x():
    for x in (X32, -X32, np.arange(-5, 6, dtype=np.int32)):
        one = x.dtype.type(1)
        with np.errstate(all="ignore"):
            want = (one + x) * (one - x)
        _bits(lax.one_minus_square(x), want)
        _bits(purejit.jit(lax.one_minus_square)(x), want)
    c = np.array([0.5 + 0.25j, -1.5j, 2 - 1j], np.complex64)
    np.testing.assert_allclose(np.asarray(lax.one_minus_square(c)), 1 - c * c, rtol=1e-6)
    b = X32[:8].astype(BF16)
    one = BF16(1)
    _bits(purejit.jit(lax.one_minus_square)(b), ((one + b) * (one - b)).astype(BF16))
    _bits(lax.log2(np.array([2.0, 8.0], BF16)), np.array([1.0, 3.0], BF16))


def test_one_minus_square_tangent_is_minus_two_x():
    # the product rule of (1 + x)(1 - x) cancels to 0 below the epsilon; JAX's rule does not
    x = np.array([1e-30, 1e-8, 0.5, 3.0], np.float32)
    g = purejit.grad(lambda v: lax.one_minus_square(v).sum())(x)
    _bits(g, np.float32(-2) * x)
    t = purejit.jvp(lax.one_minus_square, (x,), (np.ones_like(x),))[1]
    _bits(t, np.float32(-2) * x)
    _bits(
        purejit.vmap(lax.one_minus_square)(x.reshape(2, 2)), lax.one_minus_square(x).reshape(2, 2)
    )


def test_log2_is_log_times_one_over_ln2():
    x = np.abs(X32[2:])
    want = np.log(x) * np.float32(1.4426950408889634)
    np.testing.assert_allclose(np.asarray(lax.log2(x)), want, rtol=2e-7)
    _bits(purejit.jit(lax.log2)(x), lax.log2(x))
    x64 = np.array([0.5, 3.0, 1024.0], np.float64)
    with purejit.enable_x64(True):
        np.testing.assert_allclose(np.asarray(lax.log2(x64)), np.log2(x64), rtol=1e-15)
    c = np.array([1 + 1j, -2.0, 0.5j], np.complex64)
    np.testing.assert_allclose(np.asarray(purejit.jit(lax.log2)(c)), np.log2(c), rtol=1e-6)


def test_log2_tangent_vmap_and_errors():
    x = np.array([0.25, 1.0, 3.0, 10.0], np.float32)
    g = purejit.grad(lambda v: lax.log2(v).sum())(x)
    _bits(g, np.float32(1) / (x * np.float32(np.log(2))))
    _bits(purejit.vmap(lax.log2)(x.reshape(2, 2)), lax.log2(x).reshape(2, 2))
    with pytest.raises(TypeError, match="log2 does not accept dtype int32"):
        lax.log2(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match="one_minus_square does not accept dtype bool"):
        lax.one_minus_square(np.array([True]))
    with pytest.raises(NotImplementedError, match="result_accuracy"):
        lax.log2(x, accuracy=lax.Tolerance(rtol=1e-3))


def test_emitted_stablehlo_is_jaxs_lowering():
    x = np.ones((3,), np.float32)
    text = purejit.jit(lax.log2).lower(x).as_text()
    ops = [o for o in ("stablehlo.log", "stablehlo.multiply") if o in text]
    assert ops == ["stablehlo.log", "stablehlo.multiply"]
    assert text.index("stablehlo.log") < text.index("stablehlo.multiply")
    text = purejit.jit(lax.one_minus_square).lower(x).as_text()
    order = [text.index(f"stablehlo.{o}") for o in ("add", "subtract", "multiply")]
    assert order == sorted(order)


def test_interpreter_agrees_with_compiled():
    x = np.array([0.3, 0.999, 2.5], np.float32)
    for name, f in (("log2", lax.log2), ("one_minus_square", lax.one_minus_square)):
        b = Builder(name)
        p = b.param(TensorType(x.shape, x.dtype))
        fn = verify(b.finish(b.op(name, [p])))
        np.testing.assert_allclose(interpret(fn, x)[0], purejit.jit(f)(x), rtol=2e-7)
