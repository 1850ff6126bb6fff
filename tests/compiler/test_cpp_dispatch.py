"""jaxlib's C++ jit dispatch: a jitted call whose signature was seen runs without Python,
and every check the Python path makes still holds on it (dtypes, shapes, weak types,
donation, deleted arrays, the recompile guard's counters, transformations, disable_jit,
x64), with a clean fallback where jaxlib lacks the path."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import api
from purejit.backend import cpp_jit
from purejit.compiler import RecompilationError, cpp_dispatch
from purejit.runtime.array import DeletedArrayError

pytestmark = pytest.mark.skipif(
    not cpp_dispatch.available(), reason=f"no C++ dispatch: {cpp_jit.why_unavailable()}"
)


def test_seen_signature_skips_python(python_calls):
    f = purejit.jit(lambda x, y: x * y + 1.0)
    x = jnp.arange(4.0) + 0  # on the device
    for _ in range(5):
        out = f(x, x)
    np.testing.assert_allclose(np.asarray(out), np.arange(4.0) ** 2 + 1)
    assert len(python_calls) == 1
    assert type(out) is purejit.Array and out.dtype == np.float32 and not out.weak_type
    assert (f.stats.misses, f.stats.hits, f.stats.compiles) == (1, 4, 1)


def test_numpy_and_scalar_arguments_skip_python(python_calls):
    f = purejit.jit(lambda x, s: x * s)
    x = np.arange(3, dtype=np.float32)
    for s in (2.0, 3.0, 4.0):
        out = f(x, s)
    np.testing.assert_allclose(np.asarray(out), x * 4.0)
    assert len(python_calls) == 1 and f.stats.hits == 2


def test_new_shape_or_dtype_recompiles_and_counts(python_calls):
    f = purejit.jit(lambda x: x + 1)
    a32, a3, i32 = np.ones(2, np.float32), np.ones(3, np.float32), np.ones(2, np.int32)
    outs = [f(a32), f(a32), f(a3), f(a3), f(i32), f(i32)]
    assert [o.shape for o in outs] == [(2,), (2,), (3,), (3,), (2,), (2,)]
    assert [o.dtype for o in outs[::2]] == [np.float32, np.float32, np.int32]
    assert (f.stats.misses, f.stats.compiles, f.stats.hits) == (3, 3, 3)
    assert len(python_calls) == 3


def test_weak_type_is_part_of_the_key():
    g = purejit.jit(lambda x: x + jnp.ones(3, jnp.bfloat16))
    strong = jnp.asarray(np.float32(1.0)) + 0
    weak = purejit.jit(lambda x: x * 2)(1.0)
    assert weak.weak_type and not strong.weak_type
    for _ in range(3):
        assert g(weak).dtype == jnp.bfloat16  # weak float keeps bfloat16
        assert g(strong).dtype == np.float32  # float32 promotes it
    assert g.stats.compiles == 2


def test_donation_still_deletes_and_refuses_reuse(python_calls):
    f = purejit.jit(lambda x: x * 2, donate_argnums=0)
    for i in range(3):
        x = jnp.ones(4) + i
        out = f(x)
        np.testing.assert_allclose(np.asarray(out), 2.0 * (1 + i))
        assert x.is_deleted()
        with pytest.raises(DeletedArrayError):
            f(x)
    # the first call and the first reuse (of an Array the Python path deleted) miss; later
    # calls run in C++, and each reuse C++ refuses is sent to Python for purejit's error
    assert len(python_calls) == 4 and f.stats.hits == 2  # a refused call is no hit


def test_deleted_array_gets_purejits_error():
    f = purejit.jit(lambda x: x + 1)
    x = jnp.ones(3) + 0
    f(x)
    f(x)
    x.delete()
    with pytest.raises(DeletedArrayError):
        f(x)


def test_host_only_array_then_device(python_calls):
    f = purejit.jit(lambda x: x - 1)
    x = jnp.asarray(np.full(3, 5.0, np.float32))  # still on the host
    for _ in range(4):
        np.testing.assert_allclose(np.asarray(f(x)), 4.0)
    # the first call moved x to the device; the calls after that run in C++
    assert len(python_calls) <= 2


def test_recompile_guard_counts_cpp_misses():
    f = purejit.jit(lambda x: x * 2, recompile_warn_after=2, recompile_raise=True)
    f(np.ones(1, np.float32))
    f(np.ones(1, np.float32))
    f(np.ones(2, np.float32))
    f(np.ones(2, np.float32))
    assert (f.stats.misses, f.stats.hits, f.stats.recompiles) == (2, 2, 1)
    with pytest.raises(RecompilationError):
        f(np.ones(3, np.float32))
    assert f(np.ones(1, np.float32)).shape == (1,)  # a seen signature still runs


def test_transformations_and_disable_jit_take_the_python_path():
    seen = []

    def fun(x):
        seen.append(type(x).__name__)
        return jnp.sin(x) * 2

    f = purejit.jit(fun)
    x = jnp.arange(3.0) + 0
    f(x)
    f(x)
    assert seen == ["JitTracer"]  # traced once; the second call ran in C++
    g = purejit.grad(lambda v: f(v).sum())(x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.cos(np.arange(3.0)), rtol=1e-6)
    v = purejit.vmap(f)(jnp.ones((2, 3)))
    assert v.shape == (2, 3)
    with purejit.disable_jit():
        seen.clear()
        f(x)
        assert seen == ["Array"]  # ran op by op
    seen.clear()
    f(x)
    assert seen == []  # back on the C++ path


def test_x64_change_misses(python_calls):
    f = purejit.jit(lambda x: x * 2)
    x = np.ones(2, np.float64)
    assert f(x).dtype == np.float32 and f(x).dtype == np.float32
    purejit.config.update("enable_x64", True)
    try:
        assert f(x).dtype == np.float64 and f(x).dtype == np.float64
    finally:
        purejit.config.update("enable_x64", False)
    assert f(x).dtype == np.float32  # the first entry again: a C++ hit
    assert len(python_calls) == 2


def test_pytree_arguments_keep_their_order(python_calls):
    f = purejit.jit(lambda d, t: d["b"] - d["a"] + t[1] * t[0].sum())
    d = {"b": np.full(2, 10.0, np.float32), "a": np.ones(2, np.float32)}
    t = (jnp.arange(3.0) + 0, np.float32(2.0))
    for _ in range(3):
        out = f(d, t)
    np.testing.assert_allclose(np.asarray(out), 9.0 + 2.0 * 3.0)
    assert len(python_calls) == 1


def test_pytree_outputs_rebuilt_as_purejit_arrays():
    f = purejit.jit(lambda x: {"y": (x, x * 2), "z": [x.sum()]})
    x = jnp.ones(2) + 0
    f(x)
    out = f(x)
    assert sorted(out) == ["y", "z"] and isinstance(out["y"], tuple)
    leaves = [*out["y"], *out["z"]]
    assert all(type(a) is purejit.Array for a in leaves)
    assert [float(np.asarray(a).sum()) for a in leaves] == [2.0, 4.0, 2.0]
    assert f.stats.hits == 1  # counted once per call, not once per output


def test_keyword_and_static_arguments_stay_correct(python_calls):
    f = purejit.jit(lambda x, scale=2.0: x * scale)
    x = jnp.ones(2) + 0
    assert float(f(x, scale=3.0)[0]) == 3.0 and float(f(x, scale=4.0)[0]) == 4.0
    g = purejit.jit(lambda x, n: x * n, static_argnums=1)
    assert g._cpp is None  # static arguments keep purejit's own checks and messages
    assert float(g(x, 2)[0]) == 2.0 and float(g(x, 5)[0]) == 5.0


def test_jax_array_arguments(python_calls):
    jax = pytest.importorskip("jax")
    f = purejit.jit(lambda x: x + 1)
    xj = jax.device_put(np.arange(3, dtype=np.float32))
    for _ in range(3):
        out = f(xj)
    assert type(out) is purejit.Array
    np.testing.assert_allclose(np.asarray(out), np.arange(3) + 1)
    assert len(python_calls) == 1


def test_clear_cache_clears_the_cpp_cache(python_calls):
    f = purejit.jit(lambda x: x + 1)
    x = jnp.ones(2) + 0
    f(x)
    f(x)
    f.clear_cache()
    f(x)
    assert len(python_calls) == 2 and f.stats.compiles == 2


def test_fallback_without_the_cpp_path(monkeypatch, python_calls):
    monkeypatch.setattr(cpp_jit, "_api", lambda: "simulated: this jaxlib has no _jax.pjit")
    assert not cpp_dispatch.available()
    f = purejit.jit(lambda x: x * 3)
    assert f._cpp is None and type(f) is api.Jitted
    x = jnp.ones(2) + 0
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(f(x)), 3.0)
    assert len(python_calls) == 3 and (f.stats.compiles, f.stats.hits) == (1, 2)
