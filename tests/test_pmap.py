"""purejit.pmap on this process's devices (one in the unit-test process; the 8-device cases
run in a child process: tests/multidevice/test_md_pmap.py), and `jax.pmap` in drop-in mode."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
import purejit.compat
from purejit import lax


def test_pmap_over_one_device_matches_jax():
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    out = purejit.pmap(lambda v: v / lax.psum(v.sum(), "i"), axis_name="i")(x)
    want = jax.pmap(lambda v: v / jax.lax.psum(v.sum(), "i"), axis_name="i")(x)
    np.testing.assert_array_equal(out, want)
    assert isinstance(out, purejit.Array) and out.shape == (1, 6)


def test_pmap_out_axes_none_and_in_axes_tuple():
    f = purejit.pmap(lambda a, b: (a + b, b), in_axes=(0, None), out_axes=(0, None))
    s, b = f(np.ones((1, 3), np.float32), np.float32(2))
    np.testing.assert_array_equal(s, 3 * np.ones((1, 3)))
    assert b.shape == ()


def test_unsupported_options_raise():
    with pytest.raises(NotImplementedError, match="global_arg_shapes"):
        purejit.pmap(lambda x: x, global_arg_shapes=((2,),))
    with pytest.raises(ValueError, match="in_axes"):
        purejit.pmap(lambda x, y: x, in_axes=(0,))(np.zeros(1), np.zeros(1))


def test_dropin_jax_pmap_is_purejit():
    with purejit.compat.dropin() as jx:
        assert jx.pmap is purejit.pmap
        out = jx.pmap(lambda v: jx.lax.pmean(v, "d"), axis_name="d")(np.ones((1, 2)))
        np.testing.assert_array_equal(out, np.ones((1, 2)))


def test_signature_of_pmapped_and_jitted_functions():
    import inspect

    def foo(x, multiplier, y, mode="bar"):
        return x

    want = "(x, multiplier, y, mode='bar')"
    assert str(inspect.signature(purejit.pmap(foo), follow_wrapped=False)) == want
    assert str(inspect.signature(purejit.jit(foo), follow_wrapped=False)) == want


def test_mapping_a_scalar_raises_as_jax():
    with pytest.raises(ValueError, match="rank should be at least 1"):
        purejit.pmap(lambda x, k: x * k)(np.ones((1, 2)), 3)
