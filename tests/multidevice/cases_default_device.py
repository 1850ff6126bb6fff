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


def case_eager_ops_run_where_their_operands_are_committed():
    # as JAX: an eager op on an array committed to device 3 runs on device 3 (purejit ran it
    # on device 0 and XLA refused the buffer: "replica is assigned to device cpu:0")
    x = purejit.device_put(np.arange(4.0, dtype=np.float32), DEVS[3])
    jx = jax.device_put(np.arange(4.0, dtype=np.float32), jax.devices()[3])
    for ours, theirs in (
        (x + 1, jx + 1),  # a NumPy-level function (C++-dispatched program)
        (
            jnp.sin(x) * jnp.ones(4),
            jax.numpy.sin(jx) * jax.numpy.ones(4),
        ),  # with an uncommitted operand
        (purejit.lax.exp(x), jax.lax.exp(jx)),  # one primitive
    ):
        assert ours.devices() == {DEVS[3]}, ours.devices()
        assert {d.id for d in theirs.devices()} == {3}
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    y = x
    for _ in range(3):  # the next calls take the cached programs (C++ or Python)
        y = jnp.sin(y) + 1
    assert y.devices() == {DEVS[3]}
    w = purejit.device_put(np.ones(4, np.float32), DEVS[2])
    try:
        x + w
    except ValueError as e:
        assert "cpu:3" in str(e) and "cpu:2" in str(e) and "device_put" in str(e), e
    else:
        raise AssertionError("operands committed to two devices were accepted")


def case_compile_ahead_serves_calls_on_their_device():
    # jit(f).lower(x).compile() fills the cache f(x) reads, for the device f(x) runs on only
    from purejit.backend import pjrt

    count, real = [0], pjrt.compile

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    pjrt.compile = counting
    try:
        f = purejit.jit(lambda x: x * 3)
        x = np.arange(4.0, dtype=np.float32)
        lowered = f.lower(x)
        with purejit.default_device(DEVS[3]):
            lowered.compile()  # for device 3: not what f(x) runs outside the block
        assert f(x).devices() == {DEVS[0]} and count[0] == 2
        x3 = purejit.device_put(x, DEVS[3])
        f.lower(x3).compile(device=DEVS[3])  # the device a call on x3 runs on
        y = f(x3)
        assert y.devices() == {DEVS[3]} and count[0] == 3, (y.devices(), count)
        np.testing.assert_array_equal(np.asarray(y), x * 3)
    finally:
        pjrt.compile = real
