"""purejit and JAX in one process share the PJRT client, and arrays cross between them
without a copy where the runtime allows (what a notebook that imported JAX first needs)."""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jxnp

import purejit
import purejit.numpy as jnp


def _ptr(a):
    return a.unsafe_buffer_pointer()


def test_one_client_per_process():
    assert purejit.devices()[0].client is jax.devices()[0].client


def test_jax_numpy_takes_a_purejit_array_without_copy():
    x = jnp.arange(6.0).reshape(2, 3) * 2.0
    y = jxnp.asarray(x)
    assert isinstance(y, jax.Array)
    assert _ptr(y) == _ptr(x.buffer)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: a + 1)(y)), np.asarray(x) + 1)


def test_dlpack_from_purejit_to_jax():
    x = jnp.arange(4, dtype=jnp.int32) + 1
    y = jax.dlpack.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(y), [1, 2, 3, 4])


def test_purejit_takes_a_jax_array_without_copy():
    a = jxnp.arange(5.0)
    x = jnp.asarray(a)
    assert _ptr(x.buffer) == _ptr(a)
    np.testing.assert_array_equal(np.asarray(purejit.jit(lambda t: t * 3)(a)), np.arange(5.0) * 3)
