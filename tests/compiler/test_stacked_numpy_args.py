"""NumPy arguments of a program with stacks: the signature borrows a writeable NumPy leaf (no
private copy), a leaf that goes into a stack is copied once, straight into it, and is then a
row of that stack; every other borrowed leaf gets its copy before the call runs, and none is
borrowed when the call returns (a caller's array mutated afterwards changes nothing)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit.backend import row_views
from purejit.compiler import stacked_dispatch as sd
from purejit.compiler.signature import ArgSpec
from tests.compiler.test_stacked_params import D, _model
from tests.passes.roll_layers_util import ROLL, mlp_params

pytestmark = pytest.mark.skipif(not row_views.available(), reason="no DLPack import here")


def test_the_signature_borrows_writeable_numpy_leaves_and_own_ends_it():
    spec = ArgSpec(lambda a, b, c, d: None, "f")
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    ro = np.ones(3, np.float32)
    ro.flags.writeable = False
    wide = np.arange(3, dtype=np.float64)  # canonicalised: a converted copy of its own
    args = (w, ro, wide, 2.0)
    plain, sig = spec.signature(args, {}), spec.signature(args, {}, borrow=True)
    # the abstract values (shape, dtype, weak type) are the copying signature's
    assert sig.avals == plain.avals and [a.weak_type for a in sig.avals] == [0, 0, 0, 1]
    assert [i for i, _ in sig.borrowed] == [0] and sig.leaves[0]._host is w
    assert plain.leaves[0]._host is not w and not plain.borrowed
    sig.leaves[0].buffer  # a buffer made from the caller's memory meanwhile
    sig.own({0})
    assert sig.leaves[0]._host is w and len(sig.borrowed) == 1
    sig.own()
    a = sig.leaves[0]
    assert not sig.borrowed and a._host is not w and not np.shares_memory(a._host, w)
    assert a._buf is None  # dropped: jaxlib's CPU client may share the caller's memory
    w[:] = -1
    np.testing.assert_array_equal(np.asarray(a), np.arange(6).reshape(2, 3))


def test_bad_leaves_are_named_as_before():
    spec = ArgSpec(lambda ps: None, "f")
    with pytest.raises(TypeError, match=r"f: argument ps\[1\] of type str is not a valid array"):
        spec.signature(([np.ones(2, np.float32), "x"],), {}, borrow=True)


def test_a_numpy_layer_is_copied_once_straight_into_its_stack(monkeypatch):
    ps, x = mlp_params(4, D), np.random.default_rng(1).standard_normal((2, D), np.float32)
    model = _model()
    want = np.asarray(purejit.jit(model)(ps, x))
    rolled = purejit.jit(model, compiler_options=ROLL)
    mine = {id(a) for a in jax.tree.leaves(ps)}
    laid, build = [], sd.build_on_host

    def spy(g, arrays, device):
        laid.extend(arrays)
        # what the stack is copied from: the caller's arrays themselves, no copy before it
        assert all(id(a._host) in mine for a in arrays)
        return build(g, arrays, device)

    monkeypatch.setattr(sd, "build_on_host", spy)
    y = np.asarray(rolled(ps, x))  # the first call: through the signature
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    assert len(laid) == 8
    # after the call the signature's wraps are rows of the stacks, no longer the caller's
    assert all(a._host is None and sd.stack_of(a) is not None for a in laid)
    before = [np.array(a) for a in laid]
    for p in jax.tree.leaves(ps):  # the caller's arrays mutated after the call
        p *= 2
    for a, b in zip(laid, before):
        np.testing.assert_array_equal(np.asarray(a), b)
    # the next call reads the mutated arrays (laid into a stack again)
    want2 = np.asarray(purejit.jit(model)(ps, x))
    np.testing.assert_allclose(np.asarray(rolled(ps, x)), want2, rtol=1e-6, atol=1e-6)
    assert not np.allclose(want2, want)


def test_a_leaf_outside_the_stacks_is_copied_before_the_call():
    # x is no stack's: its borrowed wrap gets a copy of its own before the program runs, so
    # an output that is x itself (which the CPU client may alias) keeps its values when the
    # caller then writes into x
    ps = mlp_params(4, D)
    # 64-byte aligned, as jaxlib's CPU client transfers without a copy
    x = sd._aligned_empty(2 * D, np.dtype(np.float32)).reshape(2, D)
    x[:] = np.random.default_rng(1).standard_normal((2, D), np.float32)
    model = _model()
    rolled = purejit.jit(lambda ps, x: (model(ps, x), x + 0, x), compiler_options=ROLL)
    keep = x.copy()
    y, x1, x2 = rolled(ps, x)
    x[:] = 7
    np.testing.assert_array_equal(np.asarray(x1), keep)
    np.testing.assert_array_equal(np.asarray(x2), keep)


def test_a_failed_call_leaves_nothing_borrowed(monkeypatch):
    ps, x = mlp_params(4, D), np.random.default_rng(1).standard_normal((2, D), np.float32)
    rolled = purejit.jit(_model(), compiler_options=ROLL)
    seen = []

    def fail(compiled, arrays, borrowed=frozenset()):
        seen.extend(arrays)
        raise RuntimeError("execute failed")

    monkeypatch.setattr(sd, "execute", fail)
    with pytest.raises(RuntimeError, match="execute failed"):
        rolled(ps, x)
    mine = [id(a) for a in jax.tree.leaves(ps)] + [id(x)]
    assert seen and not any(id(a._host) in mine for a in seen)
    p0 = jax.tree.leaves(ps)[0].copy()
    jax.tree.leaves(ps)[0][...] = 5
    np.testing.assert_array_equal(np.asarray(seen[0]), p0)


def test_numpy_leaves_of_a_program_without_stacks_are_still_copied():
    f = purejit.jit(lambda a: (a, a * 2))
    a = np.arange(4, dtype=np.float32)
    y, z = f(a)
    a[:] = 0
    np.testing.assert_array_equal(np.asarray(y), np.arange(4))
    np.testing.assert_array_equal(np.asarray(z), 2 * np.arange(4))
    assert pnp.sum(y) == 6


def test_non_contiguous_numpy_layers_are_laid_out_right():
    # a transposed view (`as_array` copied it C-contiguous): borrowed, read as its values
    ps, x = mlp_params(4, D), np.random.default_rng(1).standard_normal((2, D), np.float32)
    ps = [{"w": np.ascontiguousarray(p["w"].T).T, "b": p["b"]} for p in ps]
    assert not ps[0]["w"].flags.c_contiguous
    model = _model()
    want = np.asarray(purejit.jit(model)(ps, x))
    got = np.asarray(purejit.jit(model, compiler_options=ROLL)(ps, x))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
