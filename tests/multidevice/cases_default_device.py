"""purejit.default_device on 8 CPU devices: arrays, eager ops and jitted calls made in the
block land on the chosen device, as JAX's."""

import jax
import numpy as np

import purejit
import purejit.numpy as jnp

DEVS = purejit.devices()


def case_default_device_places_new_work():
    f = purejit.jit(lambda x: x * 2)
    x = np.arange(4.0, dtype=np.float32)
    assert f(x).devices() == {DEVS[0]}
    with purejit.default_device(DEVS[3]), jax.default_device(jax.devices()[3]):
        a = jnp.ones(3)
        assert a.devices() == {DEVS[3]}, a.devices()
        assert (a + 1).devices() == {DEVS[3]}
        y = f(x)
        assert y.devices() == {DEVS[3]} == {d for d in jax.jit(lambda x: x * 2)(x).devices()}
        np.testing.assert_array_equal(np.asarray(y), x * 2)
        assert purejit.config.read("jax_default_device") is DEVS[3]
    assert f(x).devices() == {DEVS[0]}
    assert jnp.ones(2).devices() == {DEVS[0]}
    with purejit.default_device("cpu"):
        assert jnp.ones(2).devices() == {DEVS[0]}
