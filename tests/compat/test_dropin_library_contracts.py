"""Contracts JAX libraries rely on in drop-in mode (chex's asserts, restrict_backends and
fakes): every array has a sharding, `jax.typeof(x).sharding` is the array's,
`jax._src.compiler.backend_compile_and_load` is the compile step purejit goes through,
`jax._src.xla_bridge._backends` lists the started clients, `jax.lax.pswapaxes` exists."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.compat


@pytest.fixture
def jax():
    with purejit.compat.dropin() as jax:
        yield jax


def test_every_array_has_a_sharding(jax):
    x = jax.numpy.ones(3)
    assert x.sharding.device_set == {x.device} and x.sharding.is_fully_replicated
    assert jax.typeof(x).sharding == x.sharding
    assert jax.typeof(x).shape == (3,)
    assert purejit.typeof(x).sharding is None  # purejit's own avals leave it unspecified


def test_compile_step_is_replaceable(jax):
    from jax._src import compiler
    from jax._src import xla_bridge

    seen = []
    inner = compiler.backend_compile_and_load

    def watch(backend, *args, **kwargs):
        seen.append(backend.platform)
        return inner(backend, *args, **kwargs)

    compiler.backend_compile_and_load = watch
    try:
        assert jax.jit(lambda v: v * 3 + 1)(np.float32(2)) == 7
    finally:
        compiler.backend_compile_and_load = inner
    assert seen and set(seen) == {"cpu"}
    assert "cpu" in xla_bridge._backends


def test_pswapaxes_is_all_to_all(jax):
    assert jax.lax.pswapaxes.__name__ == "pswapaxes"
    out = jax.vmap(lambda v: jax.lax.pswapaxes(v, "i", 0), axis_name="i")(
        np.arange(4.0, dtype=np.float32).reshape(2, 2)
    )
    np.testing.assert_array_equal(out, np.arange(4.0).reshape(2, 2).T)
