"""Buffer donation: `jit(f, donate_argnums=..., donate_argnames=...)`, as in JAX.

Donated inputs are paired with outputs of the same type and marked `tf.aliasing_output`;
the donated purejit.Array is deleted after the call and using it again names the argument;
a donation no output can reuse warns. XLA's memory analysis shows the aliasing."""

import warnings

import jax
import numpy as np
import pytest
from purejit.ir import TensorType

import purejit
import purejit.numpy as jnp
from purejit.runtime.array import DeletedArrayError
from purejit.compiler.donation import plan_donation


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _device(x):
    return purejit.jit(lambda a: a + 0)(x)  # a purejit.Array on the device


def sgd(params, grads, lr):
    return {k: params[k] - lr * grads[k] for k in params}


def test_aliasing_attribute_pairs_donated_leaves_with_outputs():
    p = {"b": _f32(4), "w": _f32(3, 4)}
    text = purejit.jit(sgd, donate_argnums=0).lower(p, p, 0.1).as_text()
    main = next(line for line in text.splitlines() if "func.func public @main" in line)
    # leaves are flattened in sorted key order: params b, w -> outputs 0, 1
    assert "%arg0: tensor<4xf32> {tf.aliasing_output = 0 : i32}" in main
    assert "%arg1: tensor<3x4xf32> {tf.aliasing_output = 1 : i32}" in main
    assert main.count("tf.aliasing_output") == 2  # grads and lr are not donated


def test_donated_array_is_deleted_and_reuse_names_argument_and_function():
    w, g = _device(_f32(8)), _device(_f32(8, seed=1))
    expected = np.asarray(w) - 0.5 * np.asarray(g)
    step = purejit.jit(lambda w, g: w - 0.5 * g, donate_argnums=0)
    out = step(w, g)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert w.is_deleted() and not g.is_deleted()
    with pytest.raises(DeletedArrayError, match=r"argument w of the jitted function <lambda>"):
        w + 1
    with pytest.raises(DeletedArrayError, match="donated as argument w"):
        step(w, g)
    assert repr(w) == "Array(<deleted>)"


def test_donate_argnames_and_pytree_paths():
    params = {"w": _device(_f32(5)), "b": _device(_f32(5, seed=2))}
    grads = {"w": _f32(5, seed=3), "b": _f32(5, seed=4)}
    f = purejit.jit(sgd, donate_argnames="params")
    out = f(params=params, grads=grads, lr=0.1)
    np.testing.assert_allclose(out["w"], _f32(5) - 0.1 * grads["w"], rtol=1e-6)
    assert params["w"].is_deleted() and params["b"].is_deleted()
    with pytest.raises(DeletedArrayError, match=r"params\['w'\] of the jitted function sgd"):
        np.asarray(params["w"])


def test_numpy_and_jax_inputs_may_be_donated():
    x = _f32(6)
    keep = x.copy()
    f = purejit.jit(lambda a: a * 3.0, donate_argnums=0)
    np.testing.assert_allclose(f(x), keep * 3.0, rtol=1e-6)
    np.testing.assert_array_equal(x, keep)  # only the device copy was donated
    jx = jax.device_put(keep)
    np.testing.assert_allclose(f(jx), keep * 3.0, rtol=1e-6)
    assert jx.is_deleted()  # PJRT took the jax.Array's buffer


def test_unusable_donation_warns_and_keeps_the_array():
    x, y = _device(_f32(3)), _device(_f32(4))
    f = purejit.jit(lambda x, y: (x.sum(), y + 1.0), donate_argnums=(0, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s, _ = f(x, y)
    msgs = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(msgs) == 1 and "not usable" in msgs[0] and "x: f32[3]" in msgs[0]
    assert caught[0].filename == __file__  # points at the caller's line
    assert not x.is_deleted() and y.is_deleted()
    np.testing.assert_allclose(s, np.asarray(x).sum(), rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(x, _device(_f32(4)))  # cached: warned once, at compile time


def test_same_buffer_twice_with_donation_is_refused():
    x = _device(_f32(4))
    f = purejit.jit(lambda a, b: a + b, donate_argnums=0)
    with pytest.raises(ValueError, match="argument b and argument a are the same buffer"):
        f(x, x)
    assert not x.is_deleted()


def test_static_and_donated_argument_clash():
    with pytest.raises(ValueError, match="overlap"):
        purejit.jit(lambda x, n: x * n, static_argnums=1, donate_argnums=1)


def test_plan_donation_pairs_in_order_and_reports_unusable():
    def f32(*s):
        return TensorType(s, np.float32)

    plan = plan_donation(
        [f32(4), f32(4), f32(2), f32(3)], [True, True, False, True], [f32(4), f32(2), f32(4)]
    )
    assert plan.aliases == {0: 0, 1: 2} and plan.unusable == (3,)
    assert plan.alias_bytes == 32
    assert plan.arg_attrs() == [
        "{tf.aliasing_output = 0 : i32}",
        "{tf.aliasing_output = 2 : i32}",
        "",
        "",
    ]


def test_memory_analysis_of_in_place_sgd_step():
    n = 1 << 18  # 1 MiB per array
    params = {k: _f32(n, seed=i) for i, k in enumerate("abcd")}
    grads = {k: _f32(n, seed=9 + i) for i, k in enumerate("abcd")}
    plain = purejit.jit(sgd).lower(params, grads, 0.01).compile().memory_analysis()
    donated = purejit.jit(sgd, donate_argnums=0).lower(params, grads, 0.01).compile()
    m = donated.memory_analysis()
    param_bytes = sum(v.nbytes for v in params.values())
    assert plain.alias_size_in_bytes == 0
    assert m.alias_size_in_bytes == param_bytes
    assert m.peak_memory_in_bytes <= plain.peak_memory_in_bytes - param_bytes
    out = donated({k: _device(v) for k, v in params.items()}, grads, 0.01)
    for k, p in params.items():
        np.testing.assert_allclose(out[k], p - 0.01 * grads[k], rtol=1e-6, atol=1e-6)


def test_donation_ignored_under_disable_jit():
    x = jnp.asarray(_f32(3))
    f = purejit.jit(lambda a: a * 2.0, donate_argnums=0)
    with purejit.disable_jit():
        out = f(x)
    assert not x.is_deleted()
    np.testing.assert_allclose(out, np.asarray(x) * 2.0, rtol=1e-6)
