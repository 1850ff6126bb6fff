"""The dispatch fast path of `purejit.jit` (`Compiled.fast_key_for` / `call_fast`).

A call whose positional arguments are purejit Arrays or NumPy arrays (alone or in plain
tuples, lists, dicts and Nones), with exactly the tree, shapes, dtypes and weak types of a
compiled signature, skips the signature; everything that
makes the slow path safe must still hold: dtypes are never reinterpreted, weak types and
64-bit canonicalisation pick their own programs, donation deletes its input, cache counters
count, and the transfer falls back to `jax.device_put` where jaxlib lacks the C++ one.
"""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit.backend import dispatch
from purejit.config import config
from purejit.runtime import Array, DeletedArrayError


def _add1():
    return purejit.jit(lambda x: x + 1)


def test_numpy_arguments_take_the_fast_path_and_count_hits():
    f = _add1()
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(f(x)), x + 1)
    assert list(f._fast) == [((x.shape, x.dtype),)]
    hits = f.stats.hits
    for k in range(3):
        np.testing.assert_array_equal(np.asarray(f(x + k)), x + k + 1)
    assert f.stats.hits == hits + 3 and f.stats.compiles == 1


def test_a_new_dtype_or_shape_compiles_instead_of_reinterpreting():
    f = _add1()
    f(np.zeros(4, np.float32))
    out = f(np.arange(4, dtype=np.int32))  # same bytes per element, other dtype
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), [1, 2, 3, 4])
    out = f(np.zeros((2, 2), np.float32))
    assert out.shape == (2, 2)
    assert f.stats.compiles == 3 and len(f._fast) == 3


def test_64_bit_numpy_is_canonicalised_on_every_call():
    f = _add1()
    x = np.arange(3, dtype=np.float64)
    for _ in range(2):
        out = f(x)
        assert out.dtype == (np.float64 if config.enable_x64 else np.float32)
    assert not f._fast  # the key would not say which program x64 chose
    np.testing.assert_array_equal(np.asarray(out), x + 1)


def test_weak_and_strong_arrays_keep_their_own_programs():
    f = purejit.jit(lambda x: x + np.float16(1))
    strong = Array(host=np.array(2.0, np.float32))
    weak = Array(host=np.array(2.0, np.float32), weak_type=True)
    assert f(strong).dtype == np.float32
    assert f(weak).dtype == np.float16  # a weak float meets float16: float16
    assert f(strong).dtype == np.float32 and f(weak).dtype == np.float16
    assert f.stats.compiles == 2


def test_python_scalars_and_pytrees_go_through_the_signature():
    f = _add1()
    assert float(f(2.0)) == 3.0 and float(f(2.0)) == 3.0
    g = purejit.jit(lambda d: d["a"] + 1)
    assert float(g({"a": np.float32(1)})) == 2.0
    assert not f._fast and not g._fast


def test_donation_on_the_fast_path_deletes_the_input():
    f = purejit.jit(lambda x: x * 2, donate_argnums=0)
    for _ in range(3):  # the first call compiles, then the fast path runs
        x = pnp.asarray(np.ones(8, np.float32)) + 0
        out = f(x)
        assert x.is_deleted()
        np.testing.assert_array_equal(np.asarray(out), np.full(8, 2, np.float32))
        with pytest.raises(DeletedArrayError):
            f(x)
    f(np.ones(8, np.float32))  # NumPy input: nothing of the caller's to donate


def test_donating_program_takes_numpy_arguments_on_the_fast_path():
    # a training step: donated parameters (purejit Arrays) and a NumPy batch, every call
    f = purejit.jit(lambda p, x: (p * 2, (x * p).sum()), donate_argnums=0)
    p = pnp.asarray(np.ones(8, np.float32)) + 0
    x = np.arange(8, dtype=np.float32)
    for k in range(4):
        old = p
        p, v = f(p, x)
        assert old.is_deleted()
        assert float(v) == 2**k * x.sum()
    np.testing.assert_array_equal(np.asarray(p), np.full(8, 16, np.float32))
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))  # the caller's, intact
    assert f.stats.compiles == 1 and len(f._fast) == 1
    hits = f.stats.hits
    f(pnp.asarray(np.ones(8, np.float32)) + 0, x)
    assert f.stats.hits == hits + 1
    # a NumPy array at the donated position goes through the signature (which copies it:
    # the transfer may share its memory, which donation would hand to the output)
    q = np.ones(8, np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(f(q, x)[0]), np.full(8, 2, np.float32))
    np.testing.assert_array_equal(q, np.ones(8, np.float32))
    assert len(f._fast) == 1


def test_deleted_array_raises_on_the_fast_path():
    f = _add1()
    x = pnp.asarray(np.ones(3, np.float32)) + 0
    f(x)
    f(x)
    x.delete()
    with pytest.raises(DeletedArrayError):
        f(x)


def test_transfer_falls_back_without_the_cpp_put(monkeypatch):
    f = _add1()
    x = np.arange(5, dtype=np.int32)
    monkeypatch.setattr(dispatch, "_batched_device_put", lambda: None)
    assert not dispatch.fast_put_available()
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(f(x)), x + 1)
    buf = dispatch.put(x, purejit.devices()[0], enable_x64=False)
    np.testing.assert_array_equal(np.asarray(buf), x)


def test_fast_put_matches_device_put():
    assert dispatch.fast_put_available()
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    buf = dispatch.put(x, purejit.devices()[0], enable_x64=False)
    assert buf.shape == (2, 3) and buf.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(buf), x)


def test_pytrees_of_arrays_take_the_fast_path_with_their_tree_in_the_key():
    f = purejit.jit(lambda p, x: (p["w"] @ x + p["b"][0], [x, None]))
    w = pnp.asarray(np.eye(3, dtype=np.float32)) + 0
    b = np.ones(3, np.float32)
    x = pnp.asarray(np.arange(3, dtype=np.float32)) + 0
    for _ in range(3):
        out, (same, none) = f({"w": w, "b": (b,)}, x)
        np.testing.assert_array_equal(np.asarray(out), np.arange(3) + 1)
        assert same.shape == (3,) and none is None
    assert f.stats.compiles == 1 and len(f._fast) == 1
    # the same leaves in another tree (a list for the tuple, other dict keys) compile anew
    np.testing.assert_array_equal(np.asarray(f({"w": w, "b": [b]}, x)[0]), np.arange(3) + 1)
    with pytest.raises(KeyError):
        f({"v": w, "b": (b,)}, x)
    assert f.stats.compiles == 2 and len(f._fast) == 2
    # a Python scalar in the tree goes through the signature
    g = purejit.jit(lambda t: t[0] + t[1])
    assert float(g((x, 1.0))[0]) == 1.0 and float(g((x, 1.0))[0]) == 1.0
    assert not g._fast


def test_fast_path_keeps_dict_leaves_in_sorted_key_order():
    f = purejit.jit(lambda d: d["a"] - d["b"])
    a = pnp.asarray(np.full(2, 5, np.float32)) + 0
    b = pnp.asarray(np.full(2, 1, np.float32)) + 0
    for d in ({"a": a, "b": b}, {"b": b, "a": a}, {"b": b, "a": a}):
        np.testing.assert_array_equal(np.asarray(f(d)), [4, 4])
    assert f.stats.compiles == 1 and len(f._fast) == 1


def test_registered_nodes_take_the_fast_path_keyed_by_type_and_aux():
    import collections

    import purejit.random as pr

    f = purejit.jit(lambda k: pr.key_data(pr.split(k, 3)))
    for s in (0, 0, 1):
        got = np.asarray(f(pr.key(s)))
        assert got.shape == (3, 2)
    assert f.stats.compiles == 1 and len(f._fast) == 1  # typed keys: their data is the leaf
    np.testing.assert_array_equal(np.asarray(f(pr.key(1))), got)
    # a namedtuple and a tuple with the same leaves are different trees
    Pair = collections.namedtuple("Pair", "a b")
    g = purejit.jit(lambda t: t[0] - t[1])
    x = pnp.asarray(np.ones(2, np.float32)) + 0
    for t in (Pair(x, x), Pair(x, x), (x, x)):
        np.testing.assert_array_equal(np.asarray(g(t)), [0, 0])
    assert g.stats.compiles == 2 and len(g._fast) == 2


def test_outputs_come_back_through_jaxlibs_cpp_result_handlers():
    """Every supported jaxlib has `array_result_handler` (0.11.2 without its `_skip_checks`
    keyword): a one-device program wraps its outputs in C++, not through `execute`'s lists."""
    from purejit.backend import pjrt

    f = purejit.jit(lambda x: (x + 1, x * 2))
    x = pnp.asarray(np.ones(3, np.float32)) + 0
    exe = f.lower(x).compile().exe
    handlers = pjrt._result_handlers(exe._exe, exe.result_types)
    assert len(handlers) == 2
    a, b = f(x)
    np.testing.assert_array_equal(np.asarray(a), [2, 2, 2])
    np.testing.assert_array_equal(np.asarray(b), [2, 2, 2])


def test_device_put_of_a_traced_value_is_the_value_as_in_jax():
    # JAX's device_put inside jit/grad/vmap: a device or None leaves the value as it is
    import purejit.numpy as pnp

    x = np.arange(3.0, dtype=np.float32)
    dev = purejit.devices()[0]
    np.testing.assert_array_equal(purejit.jit(lambda v: purejit.device_put(v) * 2)(x), x * 2)
    g = purejit.grad(lambda v: (purejit.device_put(v, dev) * v).sum())(x)
    np.testing.assert_array_equal(g, 2 * x)
    out = purejit.vmap(lambda v: purejit.device_put({"a": v})["a"] + 1)(pnp.ones((2, 3)))
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0, np.float32))
