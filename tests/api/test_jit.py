"""purejit.jit: the compile cache, static arguments, keyword arguments, inputs of every kind,
nested jit and closures. Numbers are compared with NumPy and with jax.jit."""

import functools

import jax
import jax.numpy as jjnp
import numpy as np

import purejit
import purejit.numpy as jnp


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_cache_hits_and_misses_are_counted():
    f = purejit.jit(lambda x, y: x * y + 1.0)
    x, y = _f32(3), _f32(3, seed=1)
    np.testing.assert_allclose(f(x, y), x * y + 1.0, rtol=1e-6)
    assert (f.stats.misses, f.stats.hits, f.stats.compiles, f.stats.traces) == (1, 0, 1, 1)
    f(x, y)
    f(_f32(3, seed=2), _f32(3, seed=3))  # new values, same signature: a hit
    assert (f.stats.misses, f.stats.hits, f.stats.compiles) == (1, 2, 1)
    f(_f32(4), _f32(4))  # new shape: a miss
    f(x.astype(np.int32), y.astype(np.int32))  # new dtype: a miss
    assert (f.stats.misses, f.stats.hits, f.stats.compiles) == (3, 2, 3)


def test_cache_hit_through_fast_path_with_purejit_arrays():
    f = purejit.jit(lambda x: x - 1.0)
    x = jnp.asarray(_f32(5))
    first = f(x)
    second = f(first)  # a purejit.Array result fed back in
    assert (f.stats.misses, f.stats.hits) == (1, 1)
    np.testing.assert_allclose(second, np.asarray(x) - 2.0, rtol=1e-6)


def test_weak_and_strong_scalars_are_different_signatures():
    f = purejit.jit(lambda x: x * 2)
    assert f(3.0).weak_type  # Python float: weak, as in JAX
    assert not f(np.float32(3.0)).weak_type
    assert f.stats.misses == 2
    assert jax.jit(lambda x: x * 2)(3.0).weak_type  # the reference agrees


def test_clear_cache_recompiles():
    f = purejit.jit(lambda x: x + 1)
    f(_f32(2))
    f.clear_cache()
    f(_f32(2))
    assert f.stats.compiles == 2


def test_static_argnums_recompile_per_value():
    def power(x, n):
        out = x
        for _ in range(n - 1):  # a Python loop over a static int
            out = out * x
        return out

    f = purejit.jit(power, static_argnums=1)
    x = _f32(4)
    np.testing.assert_allclose(f(x, 3), x**3, rtol=1e-5)
    np.testing.assert_allclose(f(x, 3), x**3, rtol=1e-5)
    np.testing.assert_allclose(f(x, 2), x**2, rtol=1e-5)
    assert (f.stats.misses, f.stats.hits) == (2, 1)
    # passed by keyword, static_argnums implies static_argnames
    np.testing.assert_allclose(f(x, n=4), x**4, rtol=1e-5)
    assert "n" in f.static_argnames


def test_static_argnames_and_negative_argnums():
    f = purejit.jit(lambda x, *, axis: jnp.sum(x, axis=axis), static_argnames="axis")
    x = _f32(3, 4)
    np.testing.assert_allclose(f(x, axis=0), x.sum(0), rtol=1e-5)
    np.testing.assert_allclose(f(x, axis=1), x.sum(1), rtol=1e-5)
    assert f.stats.misses == 2

    g = purejit.jit(lambda x, scale: x * scale, static_argnums=-1)
    np.testing.assert_allclose(g(x, 2.0), x * 2, rtol=1e-6)
    g(x, 2.0)
    g(x, 3.0)
    assert (g.stats.misses, g.stats.hits) == (2, 1)


def test_static_argument_by_position_shows_up_in_the_ir():
    f = purejit.jit(lambda x, k: x * k, static_argnums=1)
    lowered = f.lower(np.float32(1), 7)
    assert len(lowered.fn.params) == 1  # k is not a parameter ...
    assert "7.0" in lowered.ir() or "7]" in lowered.ir()  # ... but a constant


def test_keyword_arguments_and_defaults():
    def f(x, y=2.0, *, z):
        return x * y + z

    jf = purejit.jit(f)
    x, z = _f32(3), _f32(3, seed=1)
    np.testing.assert_allclose(jf(x, z=z), x * 2.0 + z, rtol=1e-6)
    np.testing.assert_allclose(jf(x, 3.0, z=z), x * 3.0 + z, rtol=1e-6)
    np.testing.assert_allclose(jf(x=x, y=np.float32(0.5), z=z), x * 0.5 + z, rtol=1e-6)


def test_python_scalars_numpy_and_jax_arrays_as_inputs():
    f = purejit.jit(lambda a, b, c, d: a * b + c - d)
    b, c = _f32(3), jjnp.arange(3, dtype=jjnp.float32)
    out = f(2, b, c, np.float32(0.5))
    ref = jax.jit(lambda a, b, c, d: a * b + c - d)(2, b, c, np.float32(0.5))
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    assert out.dtype == ref.dtype == np.float32
    # integer and boolean inputs keep their dtypes
    g = purejit.jit(lambda i, m: jnp.where(m, i, -i))
    i = np.arange(4, dtype=np.int16)
    m = np.array([True, False, True, False])
    res = g(i, m)
    assert res.dtype == np.int16
    np.testing.assert_array_equal(res, np.where(m, i, -i))


def test_x64_is_off_by_default():
    f = purejit.jit(lambda x: x + 1)
    out = f(np.arange(3, dtype=np.int64))
    assert out.dtype == np.int32  # canonicalised, as JAX does without enable_x64
    assert f(np.ones(2, np.float64)).dtype == np.float32


def test_nested_jit_inlines_into_the_outer_trace():
    inner = purejit.jit(lambda y: jnp.tanh(y) * 2)
    outer = purejit.jit(lambda x: inner(x) + inner(x * 3))
    x = _f32(5)
    np.testing.assert_allclose(outer(x), np.tanh(x) * 2 + np.tanh(x * 3) * 2, rtol=1e-5)
    assert outer.stats.compiles == 1
    assert inner.stats.compiles == 0  # traced inline, never compiled by itself
    assert "tanh" in outer.lower(x).ir()


def test_closures_over_arrays_become_constants():
    w = jnp.asarray(_f32(3, 3, seed=5))
    b = np.arange(3, dtype=np.float32)
    f = purejit.jit(lambda x: x @ w + b)
    x = _f32(2, 3)
    np.testing.assert_allclose(f(x), x @ np.asarray(w) + b, rtol=1e-5)
    assert "constant" in f.lower(x).ir()


def test_jit_of_partial_and_callable_object():
    def affine(a, x):
        return a * x + 1

    f = purejit.jit(functools.partial(affine, 3.0))
    np.testing.assert_allclose(f(_f32(2)), 3.0 * _f32(2) + 1, rtol=1e-6)
    assert f.__name__ == "affine"

    class Scale:
        def __call__(self, x):
            return x * 4

    g = purejit.jit(Scale())
    np.testing.assert_allclose(g(_f32(2)), 4 * _f32(2), rtol=1e-6)
    assert "Scale" in repr(g)


def test_decorator_form_with_options():
    @purejit.jit(static_argnames=("n",))
    def rep(x, n):
        return jnp.concatenate([x] * n)

    assert rep(_f32(2), n=3).shape == (6,)


def test_matches_jax_on_a_small_model():
    def model(np_, params, x):
        h = np_.tanh(x @ params["w1"] + params["b1"])
        return np_.sum(h * h, axis=-1)

    params = {"w1": _f32(8, 16), "b1": _f32(16, seed=1)}
    x = _f32(4, 8, seed=2)
    ours = purejit.jit(functools.partial(model, jnp))(params, x)
    ref = jax.jit(functools.partial(model, jjnp))(params, x)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


def test_results_are_purejit_arrays():
    out = purejit.jit(lambda x: (x + 1, x.sum()))(_f32(3))
    assert all(isinstance(o, purejit.Array) for o in out)
    assert out[0].shape == (3,) and out[1].shape == ()
    # operators on results run through purejit's eager path, not JAX's
    assert isinstance(out[0] * 2, purejit.Array)
