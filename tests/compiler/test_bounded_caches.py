"""Bounded in-memory caches: process-wide bounds (purejit.config), evictions counted in the
statistics, entries weakly keyed on the jitted function, and nothing (verifier memo, tracing
tables) keeping a dead function's IR or executable alive."""

import gc
import weakref

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import api
from purejit.compiler.stats import cache_info
from purejit.ir import Function, Op, lru


@pytest.fixture
def small_bounds():
    old = purejit.config.read("jit_cache_size"), purejit.config.read("dispatch_cache_size")
    purejit.config.update(jit_cache_size=3, dispatch_cache_size=4)
    yield
    purejit.config.update(jit_cache_size=old[0], dispatch_cache_size=old[1])


def test_lru_table_evicts_least_recently_used_across_owners():
    evicted = []
    table = lru.LRU("test table", 3)
    a = table.partition(lambda k, v: evicted.append(("a", k)))
    b = table.partition(lambda k, v: evicted.append(("b", k)))
    a[1], a[2], b[1] = "a1", "a2", "b1"
    assert a.get(1) == "a1"  # a[1] is now the most recent: a[2] goes first
    b[2] = "b2"
    assert evicted == [("a", 2)] and table.evictions == 1
    assert list(a) == [1] and 2 not in a and len(table) == 3
    assert dict(b.items()) == {1: "b1", 2: "b2"}
    b.clear()  # deleting its own entries is not an eviction
    assert len(table) == 1 and table.evictions == 1 and not b
    del a
    gc.collect()
    assert len(table) == 0  # a dead owner's entries leave the table
    assert table.info() == {"entries": 0, "maxsize": 3, "evictions": 1}


def test_maxsize_follows_a_callable_bound():
    bound = [2]
    table = lru.LRU("callable bound", lambda: bound[0])
    p = table.partition()
    for k in range(4):
        p[k] = k
    assert list(p) == [2, 3]
    bound[0] = 0
    p[9] = 9
    assert len(table) == 0 and table.evictions == 5


def test_jit_cache_bounded_process_wide_and_evictions_counted(small_bounds):
    f = purejit.jit(lambda x: x * 2)
    g = purejit.jit(lambda x: x + 1)
    for n in range(1, 6):
        f(np.ones(n, np.float32))
    assert len(f.cache) == 3  # 2,500 shapes would keep 2,048 (the default), not 2,501
    assert f.stats.evictions == 2 and purejit.cache_stats(f).evictions == 2
    g(np.ones(1, np.float32))  # the bound is process-wide: g's entry evicts f's oldest
    assert len(f.cache) == 2 and f.stats.evictions == 3
    assert len(api.PROGRAMS) <= 3 and len(api.DISPATCH) <= 4
    # an evicted signature runs again (from jaxlib's own bounded C++ cache, or compiled)
    np.testing.assert_allclose(np.asarray(f(np.ones(1, np.float32))), [2.0])
    info = cache_info()
    assert info["jit compiled programs"]["maxsize"] == 3
    assert info["jit compiled programs"]["evictions"] >= 3


def test_fast_path_entries_follow_their_evicted_program(small_bounds):
    f = purejit.jit(lambda x: x - 1)
    for n in range(1, 6):
        f(np.ones(n, np.float32))
    alive = {id(c) for c in f.cache.values()}
    assert all(id(c) in alive for c in f._fast.values())


def _unique_name_for_gc_test(x):
    return jnp.sin(x) * 3 + _MARK


_MARK = 1.2345678


def _marked_ops() -> int:
    """Live IR ops holding the constant `_MARK` (made only by the function above)."""

    def marked(v):
        return isinstance(v, np.ndarray) and v.size == 1 and np.isclose(v.item(), _MARK)

    ops = [o for o in gc.get_objects() if isinstance(o, Op)]
    return sum(any(marked(v) for v in o.attrs.values()) for o in ops)


def test_dropped_jitted_function_frees_its_ir_and_executable():
    f = purejit.jit(_unique_name_for_gc_test)
    f(np.ones(7, np.float32))
    (compiled,) = f.cache.values()
    refs = [weakref.ref(compiled), weakref.ref(compiled.exe)]
    purejit.ir.verify(compiled.lowered.fn)  # the verifier's memo must not keep it either
    assert _marked_ops() > 0
    del compiled, f
    gc.collect()
    assert [r() for r in refs] == [None, None]
    names = [o.name for o in gc.get_objects() if isinstance(o, Function)]
    assert not [n for n in names if "_unique_name_for_gc_test" in n]
    assert _marked_ops() == 0
