"""numpy_rank_promotion (JAX's jax_numpy_rank_promotion): "allow" broadcasts operands of
different ranks as NumPy does, "warn" warns and "raise" raises naming the function and the
shapes, as jax.numpy does; scalars broadcast freely in every mode; jit retraces per mode."""

import warnings

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp

A, B = np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)


def test_allow_is_the_default():
    assert purejit.config.read("jax_numpy_rank_promotion") == "allow"
    np.testing.assert_array_equal(pnp.add(A, B), A + B)


def test_raise_names_the_function_and_shapes():
    f = purejit.jit(lambda a, b: a * b)
    np.testing.assert_array_equal(f(A, B), A * B)  # traced under "allow"
    with purejit.numpy_rank_promotion("raise"):
        for fn in (lambda: pnp.add(A, B), lambda: f(A, B)):
            with pytest.raises(ValueError, match=r"for (add|multiply) on shapes \(2, 3\) \(3,\)"):
                fn()
        np.testing.assert_array_equal(pnp.add(A, 1.0), A + 1)  # a scalar: allowed
        np.testing.assert_array_equal(pnp.add(A, A), A + A)
    with jax.numpy_rank_promotion("raise"), pytest.raises(ValueError, match="add on shapes"):
        jjnp.add(A, B)
    np.testing.assert_array_equal(f(A, B), A * B)  # back to "allow"


def test_warn_warns_and_computes():
    with purejit.numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match="rank promotion for subtract"):
            out = pnp.subtract(A, B)
    np.testing.assert_array_equal(out, A - B)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pnp.subtract(A, B)  # "allow" again: silent


def test_bad_mode_is_refused():
    with pytest.raises(ValueError, match="'allow', 'warn' or 'raise'"):
        purejit.config.update("jax_numpy_rank_promotion", "sometimes")
    assert purejit.config.read("numpy_rank_promotion") == "allow"
