"""Eager primitives as cached jits of themselves: C++ dispatch, the LRU bound, host
constants, and the persistent cache's minimum compile time."""

from __future__ import annotations

import os

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.backend import cpp_jit
from purejit.compiler import cache as compile_cache
from purejit.config import config
from purejit.numpy import _core
from purejit.runtime import eager, eager_fn
from purejit.runtime.eager import eval_trace
from purejit.tracing import bind1


@pytest.mark.skipif(not cpp_jit.available(), reason="this jaxlib has no C++ jit dispatch")
def test_a_seen_signature_runs_in_cpp_without_python():
    misses = []

    class Counting(eager.Primitive):
        __slots__ = ()

        def _cache_miss(self, *bufs):
            misses.append(1)
            return super()._cache_miss(*bufs)

    prim = Counting("cosine", {}, (), None, (False,))
    x = purejit.device_put(np.linspace(0, 1, 11, dtype=np.float32))
    outs = [prim.cpp(x._buf)[0] for _ in range(5)]
    assert len(misses) == 1  # the first call taught C++ the signature; the rest ran there
    for out in outs:
        assert isinstance(out, purejit.Array) and out.dtype == np.float32
        np.testing.assert_allclose(out, np.cos(np.linspace(0, 1, 11)), rtol=1e-6)
    # an operand of another type is a new signature: one more miss, then C++ again
    h = purejit.device_put(np.linspace(0, 1, 11, dtype=np.float16))
    prim.cpp(h._buf), prim.cpp(h._buf)
    assert len(misses) == 2


def test_weak_types_and_results_match_the_python_path():
    x = purejit.device_put(np.arange(5, dtype=np.float32))
    w = jnp.asarray(2.0)  # weakly typed
    assert w.weak_type
    for _ in range(3):  # the first call misses, the next ones take C++'s path
        y = w * w
        z = x * w
        assert y.weak_type and not z.weak_type
        assert y.dtype == z.dtype == np.float32
    np.testing.assert_array_equal(z, np.arange(5) * 2.0)
    np.testing.assert_array_equal(y, 4.0)


def test_python_scalars_are_arguments_of_one_program():
    x = purejit.device_put(np.arange(8, dtype=np.float32))
    known = set(eval_trace.cache)
    before = eval_trace.compiles
    a = x * 1.25
    after_first = eval_trace.compiles
    b = x * 1.5  # another value, same signature: no compile
    c = 0.5 + x
    assert after_first - before <= 1 and eval_trace.compiles - after_first <= 1  # `add`
    assert not any(k[0] == "broadcast_in_dim" for k in set(eval_trace.cache) - known)
    np.testing.assert_array_equal(a, np.arange(8) * np.float32(1.25))
    np.testing.assert_array_equal(b, np.arange(8) * np.float32(1.5))
    np.testing.assert_array_equal(c, np.arange(8) + 0.5)
    # -0.0 and 0.0 are different values
    np.testing.assert_array_equal(np.signbit(np.asarray(x * -0.0)), [True] * 8)
    np.testing.assert_array_equal(np.signbit(np.asarray(x * 0.0)), [False] * 8)
    assert not (x * 2).weak_type and (x * 2).dtype == np.float32


def test_op_by_op_scalars_transfer_once_and_broadcast_on_the_host():
    # what a NumPy-level function that is not a program of its own does with `x * 3.0`
    x = purejit.device_put(np.arange(4, dtype=np.float32))
    known = set(eval_trace.cache)
    a, c = _core.promote_args("multiply", x, 3.0)
    assert c.shape == (4,) and c._buf is not None and c.dtype == np.float32
    key = next(k for k in eager._scalars if k[1] == (3.0).hex() and k[3] == (4,))
    eager._scalars[key][2].delete()  # as a donation of a shared constant would
    _, c2 = _core.promote_args("multiply", x, 3.0)
    np.testing.assert_array_equal(c2, np.full(4, 3.0, np.float32))
    # a broadcast of a host constant runs on the host, once per distinct value
    h = purejit.Array(host=np.array(2.5, np.float32))
    d = bind1("broadcast_in_dim", h, shape=(3,), broadcast_dimensions=())
    assert d._buf is not None
    assert not any(k[0] == "broadcast_in_dim" for k in set(eval_trace.cache) - known)
    np.testing.assert_array_equal(d, np.full(3, 2.5, np.float32))


@pytest.mark.skipif(not cpp_jit.available(), reason="this jaxlib has no C++ jit dispatch")
def test_numpy_functions_dispatch_in_cpp_and_trace_under_jit():
    misses = []

    class Counting(eager_fn.EagerFunction):
        def _cache_miss(self, *args, **kwargs):
            misses.append(1)
            return super()._cache_miss(*args, **kwargs)

    fresh = Counting(jnp.tanh._eager.f, "tanh")
    x = purejit.device_put(np.linspace(-1, 1, 23, dtype=np.float32))
    outs = [fresh.cpp(x) for _ in range(4)]
    assert len(misses) == 1
    for out in outs:
        np.testing.assert_allclose(out, np.tanh(np.linspace(-1, 1, 23)), rtol=1e-6)
    # under jit the same function is traced, never run on the device
    f = purejit.jit(lambda v: fresh.cpp(v) * 2.0)
    assert "tanh" in f.lower(x).as_text()
    np.testing.assert_allclose(f(x), 2 * np.tanh(np.asarray(x)), rtol=1e-6)
    # eager with a Python scalar: the scalar is an argument, one program for all values
    mul = Counting(jnp.multiply._eager.f, "multiply")
    misses.clear()
    for v in (1.5, 2.5, -0.0):
        np.testing.assert_array_equal(mul.cpp(x, v), np.asarray(x) * np.float32(v))
    assert len(misses) == 1


def test_the_eager_caches_are_lru_bounded():
    old = config.read("eager_cache_size")
    config.update("eager_cache_size", 3)
    try:
        x = np.full((3, 17), 0.5, np.float32)  # a shape no other test uses
        for name in ("sine", "cosine", "tanh", "exponential", "log"):
            bind1(name, x)
        assert len(eval_trace.cache) <= 3
        assert [k[0] for k in eval_trace.cache][-3:] == ["tanh", "exponential", "log"]
        for f in (jnp.sin, jnp.cos, jnp.tanh, jnp.exp, jnp.log):
            f(x)
        assert len(eager_fn._programs) <= 3
        before = eval_trace.compiles
        np.testing.assert_allclose(bind1("sine", x), np.sin(x), rtol=1e-6)  # evicted
        assert eval_trace.compiles == before + 1
    finally:
        config.update("eager_cache_size", old)


def test_unhashable_attributes_key_by_their_printed_form():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = bind1("transpose", x, permutation=[1, 0])
    b = bind1("transpose", x, permutation=[1, 0], regions=[])  # an empty list of regions
    np.testing.assert_array_equal(a, x.T)
    np.testing.assert_array_equal(b, x.T)


def test_fast_eager_compiles_are_not_written_to_the_persistent_cache(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    old = config.read("cache_dir")
    config.update("cache_dir", str(folder))
    try:
        writes = compile_cache.counters.writes
        np.testing.assert_allclose(jnp.sinh(np.full((5, 19), 0.5, np.float32)), np.sinh(0.5))
        assert compile_cache.counters.writes == writes  # compiled in far under 1 s
        assert not any(n.endswith(".pjx") for n in os.listdir(folder))
        config.update("persistent_cache_min_compile_time_secs", 0.0)
        np.testing.assert_allclose(jnp.cosh(np.full((5, 19), 0.5, np.float32)), np.cosh(0.5))
        assert compile_cache.counters.writes == writes + 1
    finally:
        config.update("cache_dir", old)
        config.update("persistent_cache_min_compile_time_secs", 1.0)


def test_jax_option_name_sets_the_minimum_compile_time():
    config.update("jax_persistent_cache_min_compile_time_secs", 2.5)
    try:
        assert config.read("persistent_cache_min_compile_time_secs") == 2.5
    finally:
        config.update("persistent_cache_min_compile_time_secs", 1.0)
