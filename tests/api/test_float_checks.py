"""debug_nans / debug_infs (JAX's jax_debug_nans / jax_debug_infs): eager ops, eager
purejit.numpy programs and jitted calls raise FloatingPointError naming the op that made a
NaN or an Inf and the user's line; a call cached before the option was set is checked too;
off, nothing is checked. Compared with what JAX raises for the same program."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit import lax as plax


def _f(np_, x):
    y = x * 2.0
    return np_.log(y - 4.0)  # NaN for x < 2


def test_jit_names_the_op_that_made_the_nan():
    f = purejit.jit(lambda x: _f(pnp, x))
    np.testing.assert_allclose(f(np.float32(3.0)), np.log(2.0), rtol=1e-6)  # cached, unchecked
    with purejit.debug_nans(True):
        with pytest.raises(FloatingPointError) as got:
            f(np.float32(1.0))
        assert float(f(np.float32(3.0))) == pytest.approx(np.log(2.0))  # finite: no error
    msg = str(got.value)
    assert msg.startswith("invalid value (nan) encountered in log")
    assert "test_float_checks.py" in msg  # the user's line
    assert "jit(<lambda>)" in " ".join(got.value.__notes__)
    with jax.debug_nans(True), pytest.raises(FloatingPointError, match="nan"):
        jax.jit(lambda x: _f(jjnp, x))(np.float32(1.0))
    assert np.isnan(f(np.float32(1.0)))  # off again: no check


def test_eager_ops_and_lax():
    x = pnp.asarray(np.array([-1.0, 2.0], np.float32))
    with purejit.debug_nans(True):
        with pytest.raises(FloatingPointError, match="encountered in log"):
            pnp.log(x)
        with pytest.raises(FloatingPointError, match="encountered in sqrt"):
            plax.sqrt(x)
        pnp.log(pnp.abs(x))  # finite
        with pytest.raises(FloatingPointError, match="encountered in multiply"):
            x * np.float32(np.nan)
    assert np.isnan(np.asarray(pnp.log(x))[0])


def test_debug_infs_and_integer_outputs():
    purejit.config.update("jax_debug_infs", True)
    try:
        with pytest.raises(FloatingPointError, match=r"divide by zero \(inf\) encountered in"):
            purejit.jit(lambda a, b: a / b)(pnp.float32(1.0), pnp.float32(0.0))
        out = purejit.jit(lambda a: a // 1)(np.int32(3))  # integers are never checked
        assert int(out) == 3
    finally:
        purejit.config.update("jax_debug_infs", False)
    assert purejit.config.read("jax_debug_infs") is False


def test_the_op_by_op_rerun_locates_a_nan_in_a_loop():
    def body(i, c):
        return c - 1.0

    @purejit.jit
    def g(x):
        return pnp.sqrt(purejit.lax.fori_loop(0, 3, body, x))

    with purejit.debug_nans(True), pytest.raises(FloatingPointError, match="sqrt"):
        g(np.float32(1.0))
