"""Cache-miss reasons, counters and the recompilation trap guard."""

import logging
import warnings

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.compiler.stats import RecompilationError, RecompilationWarning, suggest_buckets


def _x(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


def test_counters_traces_compiles_hits():
    f = purejit.jit(lambda x: x * 2)
    f(_x(3))
    f(_x(3))
    f(_x(3))
    s = purejit.cache_stats(f)
    assert (s.traces, s.compiles, s.hits, s.misses, s.recompiles) == (1, 1, 2, 1, 0)
    assert s.miss_reasons == []


def test_miss_reason_names_argument_shapes_and_call_site(caplog):
    def f(x, w):
        return x @ w

    jf = purejit.jit(f)
    w = _x(512, 4)
    with caplog.at_level(logging.INFO, logger="purejit"):
        jf(_x(32, 512), w)
        jf(_x(64, 512), w)  # the line the reason must name
    line = __import__("inspect").currentframe().f_lineno - 1
    (reason,) = purejit.cache_stats(jf).miss_reasons
    assert [str(c) for c in reason.changes] == ["x: f32[32,512] -> f32[64,512]"]
    assert reason.changes[0].axes == (0,)
    assert reason.location == f"test_recompile.py:{line}"
    logged = [r.getMessage() for r in caplog.records if r.name == "purejit"]
    assert any("x: f32[32,512] -> f32[64,512]" in m and f":{line}" in m for m in logged)


def test_miss_reason_static_argument_and_dtype():
    def f(x, n):
        return x * n

    jf = purejit.jit(f, static_argnums=1)
    jf(_x(4), 3)
    jf(_x(4), 4)
    jf(_x(4, dtype=np.int32), 4)
    r1, r2 = purejit.cache_stats(jf).miss_reasons
    assert [str(c) for c in r1.changes] == ["static n: 3 -> 4"]
    assert [str(c) for c in r2.changes] == ["x: f32[4] -> s32[4]"]


def test_miss_reason_compares_with_the_closest_signature():
    jf = purejit.jit(lambda x, y: x + y)
    jf(_x(8), _x(8))
    jf(_x(2), _x(2))
    jf(_x(8), _x(8, dtype=np.int32).astype(np.float32))  # hit
    jf(_x(2, dtype=np.int32), _x(2))  # closest: (f32[2], f32[2]); one change
    reasons = purejit.cache_stats(jf).miss_reasons
    assert [str(c) for c in reasons[-1].changes] == ["x: f32[2] -> s32[2]"]
    assert purejit.cache_stats(jf).hits == 1


def test_miss_reason_pytree_leaf_names():
    def f(params, x):
        return x @ params["w"] + params["b"]

    jf = purejit.jit(f)
    jf({"w": _x(3, 2), "b": _x(2)}, _x(1, 3))
    jf({"w": _x(3, 2), "b": _x(1, 2)}, _x(1, 3))
    (reason,) = purejit.cache_stats(jf).miss_reasons
    assert [str(c) for c in reason.changes] == ["params['b']: f32[2] -> f32[1,2]"]
    assert reason.changes[0].arg == "params"


def test_trap_guard_warns_once_naming_the_churning_dimension():
    jf = purejit.jit(lambda x, w: x @ w, recompile_warn_after=3)
    w = _x(5, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 8):
            jf(_x(n, 5), w)
    hits = [w for w in caught if issubclass(w.category, RecompilationWarning)]
    assert len(hits) == 1
    msg = str(hits[0].message)
    assert "recompiled 3 times" in msg
    assert "Dimension 0 of x" in msg and "sizes seen: 1, 2, 3, 4" in msg
    assert "buckets={'x': {0: [1, 2, 4]}}" in msg
    assert hits[0].filename.endswith("test_recompile.py")  # points at the user's call
    assert purejit.cache_stats(jf).warned


def test_trap_guard_global_default_and_per_function_disable():
    assert purejit.config.read("recompile_warn_after") == 8
    old = purejit.config.read("recompile_warn_after")
    purejit.config.update(recompile_warn_after=2)
    try:
        jf = purejit.jit(lambda x: x + 1, recompile_warn_after=0)  # overrides the global
        with warnings.catch_warnings():
            warnings.simplefilter("error", RecompilationWarning)
            for n in range(1, 5):
                jf(_x(n))
        jg = purejit.jit(lambda x: x + 1)
        jg(_x(1))
        jg(_x(2))
        with pytest.warns(RecompilationWarning, match="Dimension 0 of x"):
            jg(_x(3))
    finally:
        purejit.config.update("recompile_warn_after", old)


def test_trap_guard_can_raise_and_names_static_churn():
    jf = purejit.jit(
        lambda x, k: x * k, static_argnames="k", recompile_warn_after=2, recompile_raise=True
    )
    jf(_x(2), k=1)
    jf(_x(2), k=2)
    with pytest.raises(RecompilationError, match="static argument k changed in 2"):
        jf(_x(2), k=3)
    assert purejit.cache_stats(jf).compiles == 2  # raised instead of compiling a third time


def test_cache_stats_rejects_plain_functions():
    with pytest.raises(TypeError, match="purejit.jit"):
        purejit.cache_stats(lambda x: x)


def test_cache_stats_is_a_snapshot():
    jf = purejit.jit(lambda x: -x)
    jf(_x(2))
    s = purejit.cache_stats(jf)
    jf(_x(2))
    assert s.hits == 0 and purejit.cache_stats(jf).hits == 1


def test_suggest_buckets():
    assert suggest_buckets([3, 17, 100]) == [4, 8, 16, 32, 64, 128]
    assert suggest_buckets([1, 512]) == [4, 8, 16, 32, 64, 128, 256, 512]
    assert suggest_buckets([64]) == [64]


def test_results_unchanged_by_tracking():
    jf = purejit.jit(lambda x: jnp.tanh(x) * 3)
    for n in (2, 3):
        x = np.linspace(-1, 1, n).astype(np.float32)
        np.testing.assert_allclose(np.asarray(jf(x)), np.tanh(x) * 3, rtol=1e-6)


def test_trap_guard_names_dtype_churn_and_ignores_bucketed_axes():
    jf = purejit.jit(lambda x: x * 2, recompile_warn_after=2)
    jf(_x(2))
    jf(_x(2, dtype=np.int32))
    with pytest.warns(RecompilationWarning, match=r"The type of x changed in 2 .*s32\[2\]"):
        jf(_x(2, dtype=np.int8))
    # bucket compiles are planned: 3 buckets, warn after 2, no warning
    jb = purejit.jit(lambda x: x + 1, buckets={"x": {0: [2, 4, 8]}}, recompile_warn_after=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompilationWarning)
        for n in (1, 3, 7):
            jb(_x(n))
    assert purejit.cache_stats(jb).compiles == 3
