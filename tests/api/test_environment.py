"""clear_caches, make_user_context, effects_barrier, print_environment_info, the process
helpers and memory spaces (purejit/environment.py), against JAX where JAX has an answer."""

from __future__ import annotations

import threading
import time

import jax
import numpy as np
import pytest

import purejit
import purejit.debug


def test_clear_caches_makes_every_jitted_function_trace_again():
    f = purejit.jit(lambda x: x * 2)
    x = np.ones(3, np.float32)
    f(x)
    f(x)
    assert f.stats.traces == 1
    purejit.clear_caches()
    np.testing.assert_array_equal(f(x), x * 2)
    assert f.stats.traces == 2
    f(x)
    assert f.stats.traces == 2


def test_user_context_keys_the_jit_cache_as_jax():
    for api in (jax, purejit):
        ctx = api.make_user_context(default_value=1)
        f = api.jit(lambda x: x + ctx.value)
        assert float(f(1.0)) == 2.0
        with ctx(10):
            assert ctx.value == 10
            assert float(f(1.0)) == 11.0  # traced again: the value is part of the key
            assert float(f(1.0)) == 11.0  # the fast paths see it too
        assert float(f(1.0)) == 2.0 and ctx.value == 1


def test_effects_barrier_waits_for_callbacks():
    seen, main = [], threading.get_ident()

    def slow(x):
        time.sleep(0.05)
        seen.append((float(x.sum()), threading.get_ident() == main))

    f = purejit.jit(lambda x: (purejit.debug.callback(slow, x), x + 1)[1])
    out = f(np.ones(4, np.float32))
    purejit.effects_barrier()
    assert [s for s, _ in seen] == [4.0]
    np.testing.assert_array_equal(out, np.full(4, 2.0, np.float32))
    purejit.effects_barrier()  # nothing pending: returns at once
    jax.effects_barrier()


@pytest.mark.filterwarnings("ignore:jax.process")
def test_environment_info_and_processes():
    text = purejit.print_environment_info(return_string=True)
    for part in ("purejit:", f"jax:     {jax.__version__}", "numpy:", "python:", "process_count"):
        assert part in text, part
    with pytest.warns(UserWarning, match="process_count"):
        assert purejit.host_count() == jax.host_count() == purejit.process_count()
    with pytest.warns(UserWarning, match="process_index"):
        assert purejit.host_id() == jax.host_id() == 0
    with pytest.warns(UserWarning, match="process_indices"):
        assert purejit.host_ids() == jax.host_ids() == purejit.process_indices()
    assert purejit.process_indices() == jax.process_indices()
    assert [s.name for s in purejit.memory.Space] == [s.name for s in jax.memory.Space]


def test_memory_spaces():
    x = np.arange(3.0, dtype=np.float32)
    on_device = purejit.device_put(x, purejit.memory.Space.Device)
    np.testing.assert_array_equal(on_device, x)
    with pytest.raises(NotImplementedError, match="device memory"):
        purejit.device_put(x, purejit.memory.Space.Host)
