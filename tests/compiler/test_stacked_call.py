"""Per-call dispatch of a program with stacks (purejit's Python fast path): the cache key
of a call's Arrays hashes and compares in C (no abstract value's Python-level hash or
equality per leaf), yet tells weak types and aval classes apart; what `stacked_dispatch`
reads of the program is worked out once; the checks stay (a deleted row, a donated leaf
passed twice)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

import purejit
from purejit.backend import row_views
from purejit.compiler.compiled import fast_flatten
from purejit.runtime.array import Array, DeletedArrayError
from purejit.tracing import ShapedArray
from tests.compiler.test_stacked_params import D, _model, _on_device, _step
from tests.passes.roll_layers_util import ROLL, mlp_params

pytestmark = pytest.mark.skipif(not row_views.available(), reason="no DLPack import here")


def _donated_step(n=4):
    ps = mlp_params(n, D)
    x = np.random.default_rng(0).standard_normal((2, D), np.float32)
    step = purejit.jit(_step(_model()), donate_argnums=0, compiler_options=ROLL)
    state = step(_on_device(ps), x)
    state = step(state, x)  # the fast path registered by the first call
    return step, state, x


def test_a_stacked_call_hashes_no_abstract_value_in_python(monkeypatch):
    step, state, x = _donated_step()
    calls = []
    for name in ("__hash__", "__eq__"):
        real = getattr(ShapedArray, name)

        def counted(*a, _real=real, _name=name):
            calls.append(_name)
            return _real(*a)

        monkeypatch.setattr(ShapedArray, name, counted)
    hits = step.stats.hits
    state = step(state, x)
    assert step.stats.hits == hits + 1  # through the fast path
    assert calls == []
    monkeypatch.undo()
    assert all(np.isfinite(np.asarray(v)).all() for v in jax.tree.leaves(state))


def test_the_fast_key_tells_weak_types_and_aval_classes_apart():
    a = Array(host=np.ones(3, np.float32))
    weak = Array(host=np.ones(3, np.float32), weak_type=True)

    @dataclasses.dataclass(frozen=True)
    class Other(ShapedArray):
        pass

    other = Array.from_buffer(a.buffer, Other((3,), np.dtype(np.float32)))
    keys = [fast_flatten(([v],))[0] for v in (a, weak, other)]
    assert len(set(keys)) == 3
    assert fast_flatten(([a],))[0] == fast_flatten(([Array(host=np.zeros(3, np.float32))],))[0]
    # the key names the tree too: a dict of it is not a list of it
    assert fast_flatten(({"k": a},))[0] != keys[0]


def test_what_dispatch_reads_of_the_program_is_made_once():
    step, state, x = _donated_step()
    (compiled,) = step.cache.values()
    data = compiled.stack_call
    assert data is not None
    state = step(state, x)
    assert compiled.stack_call is data
    assert data.donating is not None and data.reasons


def test_the_checks_hold_on_the_fast_path():
    step, state, x = _donated_step()
    old = state
    state = step(state, x)
    # a donated (deleted) row passed again is refused, naming the function
    with pytest.raises(DeletedArrayError, match="donated"):
        step(old, x)
    # one row passed as two donated leaves: refused as the same buffer
    twice = [dict(p) for p in state]
    twice[1]["w"] = twice[0]["w"]
    with pytest.raises(ValueError, match="same buffer"):
        step(twice, x)
    # and the right values still come out of the state that was not donated
    assert all(np.isfinite(np.asarray(v)).all() for v in jax.tree.leaves(state))


def test_a_function_with_a_stacked_program_is_called_without_cpps_miss():
    from purejit.compiler import cpp_dispatch

    if not cpp_dispatch.available():
        pytest.skip("no C++ dispatch in this jaxlib")
    ps = mlp_params(4, D)
    x = np.random.default_rng(0).standard_normal((2, D), np.float32)
    model = _model()
    f = purejit.jit(model, compiler_options=ROLL)
    assert getattr(type(f), "_cpp_base", None) is not None  # C++ first
    want = np.asarray(purejit.jit(model)(ps, x))
    np.testing.assert_allclose(np.asarray(f(ps, x)), want, rtol=1e-6, atol=1e-6)
    # the stacked program is on the Python fast path: calls go there directly
    assert getattr(type(f), "_cpp_base", None) is None
    hits = f.stats.hits
    np.testing.assert_allclose(np.asarray(f(ps, x)), want, rtol=1e-6, atol=1e-6)
    assert f.stats.hits == hits + 1
    # another signature of it (one layer: nothing rolled, no stacks) runs right on Python's
    np.testing.assert_allclose(
        np.asarray(f(ps[:1], x)), np.asarray(model(ps[:1], x)), rtol=1e-6, atol=1e-6
    )
    f.clear_cache()  # no program with stacks: the C++ dispatch is back
    assert getattr(type(f), "_cpp_base", None) is not None
    np.testing.assert_allclose(np.asarray(f(ps, x)), want, rtol=1e-6, atol=1e-6)
