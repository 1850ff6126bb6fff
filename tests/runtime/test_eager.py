"""Eager mode: purejit functions outside jit run op by op, each primitive compiled once per
abstract signature; `purejit.disable_jit()` runs jitted functions eagerly."""

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.runtime.eager import eval_trace


def _model(x, w):
    h = jnp.tanh(x @ w)
    return jnp.sum(jnp.exp(-h * h), axis=-1) / 3.0 + jnp.maximum(h, 0.1).mean()


def _model_np(x, w):
    h = np.tanh(x @ w)
    return np.sum(np.exp(-h * h), axis=-1) / 3.0 + np.maximum(h, 0.1).mean()


def test_eager_matches_jit_and_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    w = rng.standard_normal((5, 7)).astype(np.float32)
    eager = _model(x, w)
    jitted = purejit.jit(_model)(x, w)
    assert isinstance(eager, purejit.Array)
    np.testing.assert_allclose(eager, jitted, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eager, _model_np(x, w), rtol=1e-5, atol=1e-6)
    assert eager.dtype == jitted.dtype == np.float32 and eager.shape == (6,)


def test_each_primitive_compiles_once_per_signature():
    x = np.full((7, 13), 0.25, np.float32)  # a shape no other test uses
    before = eval_trace.compiles
    a = jnp.sin(x)
    after_first = eval_trace.compiles
    assert after_first - before == 1  # one op: `sine` on f32[7,13]
    b = jnp.sin(x * 0 + 1)  # sine again: cached; the multiply/add are new signatures
    mid = eval_trace.compiles
    jnp.sin(np.ones((7, 13), np.float32))
    assert eval_trace.compiles == mid  # same abstract signature, different values: no compile
    jnp.sin(np.ones((13, 7), np.float32))
    assert eval_trace.compiles == mid + 1  # new shape: one compile
    jnp.sin(np.ones((7, 13), np.float16))
    assert eval_trace.compiles == mid + 2  # new dtype: one compile
    np.testing.assert_allclose(a, np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(b, np.sin(np.ones((7, 13))), rtol=1e-6)


def test_eager_cache_key_includes_attributes():
    x = np.arange(2 * 9 * 5, dtype=np.float32).reshape(2, 9, 5)
    before = eval_trace.compiles
    s0, s1 = jnp.sum(x, axis=0), jnp.sum(x, axis=1)
    np.testing.assert_allclose(s0, x.sum(0))
    np.testing.assert_allclose(s1, x.sum(1))
    grew = eval_trace.compiles - before
    jnp.sum(x + 1, axis=0), jnp.sum(x + 1, axis=1)
    assert grew >= 2  # two reductions over different axes are two programs
    assert eval_trace.compiles - before <= grew + 1  # the second round adds only the `add`


def test_array_operators_run_eagerly():
    x = jnp.asarray(np.arange(4, dtype=np.float32))
    y = (x * 2 - 1) ** 2 / (x + 1)
    ref = (np.arange(4) * 2 - 1) ** 2 / (np.arange(4) + 1)
    assert isinstance(y, purejit.Array)
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    assert bool((x > 1).any()) and int(x.sum()) == 6


def test_disable_jit_runs_python_control_flow():
    def relu_or_neg(x):
        if x.sum() > 0:  # data-dependent Python `if`: only possible without jit
            return jnp.maximum(x, 0)
        return -x

    f = purejit.jit(relu_or_neg)
    x = np.array([1.0, -0.5], np.float32)
    with pytest.raises(purejit.ConcretizationTypeError):
        f(x)
    with purejit.disable_jit():
        np.testing.assert_array_equal(f(x), [1.0, 0.0])
        np.testing.assert_array_equal(f(-x), x)  # sum < 0: the other branch, -(-x)
    assert f.stats.compiles == 0
    assert not purejit.config.jit_disabled


def test_disable_jit_restores_on_exception_and_nests():
    with pytest.raises(RuntimeError), purejit.disable_jit():
        assert purejit.config.jit_disabled
        with purejit.disable_jit(False):
            assert not purejit.config.jit_disabled
        assert purejit.config.jit_disabled
        raise RuntimeError("boom")
    assert not purejit.config.jit_disabled
    f = purejit.jit(lambda x: x + 1)
    f(np.float32(1))
    assert f.stats.compiles == 1


def test_disable_jit_gives_the_same_numbers():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    f = purejit.jit(_model)
    with purejit.disable_jit():
        eager = f(x, w)
    np.testing.assert_allclose(eager, f(x, w), rtol=1e-5, atol=1e-6)
