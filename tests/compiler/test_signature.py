"""One `CallSignature` per call: arguments converted and checked once, the leaf -> argument
mapping derived once, and `jit` as a method decorator."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.compiler import ArgSpec, cpp_dispatch
from purejit.compiler import signature as signature_mod
from purejit.runtime import array as array_mod


def test_numpy_input_is_converted_once_per_call(monkeypatch):
    f = purejit.jit(lambda x, y: x * 2 + y)
    x = np.arange(4, dtype=np.float32)
    f(x, 1.0)  # compile first
    calls = []
    real = array_mod.as_array

    def counting(v):
        calls.append(type(v).__name__)
        return real(v)

    for mod in ("purejit.compiler.signature", "purejit.compiler.compiled"):
        monkeypatch.setattr(f"{mod}.as_array", counting)
    # the dispatch's signature converts a writeable NumPy array itself (borrowed until it is
    # copied, once: `CallSignature.own`, or into a stack)
    real_host_value = signature_mod.host_value

    def counting_host_value(v):
        calls.append(type(v).__name__)
        return real_host_value(v)

    monkeypatch.setattr(signature_mod, "host_value", counting_host_value)
    out = f._dispatch((x, 1.0), {})[0]  # purejit's Python dispatch
    np.testing.assert_allclose(np.asarray(out), x * 2 + 1)
    assert calls == ["ndarray", "float"], calls
    calls.clear()
    out = f(x, 1.0)  # jaxlib's C++ dispatch, where there is one, converts nothing in Python
    np.testing.assert_allclose(np.asarray(out), x * 2 + 1)
    assert calls == ([] if cpp_dispatch.available() else ["ndarray", "float"]), calls


def test_leaf_names_follow_parameter_names():
    def f(params, x, *rest, scale=1.0):
        return x

    spec = ArgSpec(f, "f")
    sig = spec.signature(({"w": np.ones(2), "b": np.ones(1)}, np.ones(3), np.ones(1)), {})
    assert sig.leaf_names == [
        ("params", "params['b']"),
        ("params", "params['w']"),
        ("x", "x"),
        ("rest[0]", "rest[0]"),
    ]
    assert [tuple(a.shape) for a in sig.avals] == [(1,), (2,), (3,), (1,)]
    assert sig.arg_mask(frozenset({0}), frozenset()) == (True, True, False, False)


def test_a_bad_leaf_is_named_by_its_path():
    f = purejit.jit(lambda params: params["w"])
    with pytest.raises(TypeError, match=r"argument params\['w'\] of type object"):
        f({"w": object()})


class Scaler:
    def __init__(self, k):
        self.k = k

    def __hash__(self):
        return hash(self.k)

    def __eq__(self, other):
        return isinstance(other, Scaler) and other.k == self.k

    @purejit.jit
    def plain(self, x):
        return x

    def scale(self, x):
        return x * self.k

    scale = purejit.jit(scale, static_argnums=0)


def test_jit_as_method_decorator():
    s = Scaler(3.0)
    x = jnp.arange(4.0)
    np.testing.assert_allclose(np.asarray(s.scale(x)), np.arange(4.0) * 3)
    np.testing.assert_allclose(np.asarray(Scaler(2.0).scale(x)), np.arange(4.0) * 2)
    assert isinstance(Scaler.__dict__["scale"], purejit.api.Jitted)
    # `self` is an ordinary argument, as in JAX: not an array, not static -> a clear error
    with pytest.raises(TypeError, match="argument self of type Scaler"):
        s.plain(x)
