"""The everyday utilities and the rest of lax against JAX: block_until_ready, device_get,
eval_shape, ShapeDtypeStruct, typeof, make_jaxpr, jit(f).trace().lower(), config with JAX's
option names, Precision, select_n, gather/scatter, associative_scan, cumlogsumexp, sort."""

import jax
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax
from jnp_compare import assert_same

import purejit
import purejit.numpy as pnp
from purejit import lax as plax

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 5)).astype(np.float32)


def test_block_until_ready_device_get_typeof():
    tree = {"a": pnp.arange(3) * 2, "b": [pnp.ones(2), 7]}
    assert purejit.block_until_ready(tree) is tree
    host = purejit.device_get(tree)
    assert type(host["a"]) is np.ndarray and host["b"][1] == 7
    np.testing.assert_array_equal(host["a"], np.arange(3) * 2)
    t = purejit.typeof(pnp.ones((2, 3), np.float16))
    assert (t.shape, t.dtype, t.weak_type) == ((2, 3), np.float16, False)
    assert purejit.typeof(1.0).weak_type and jax.typeof(1.0).weak_type


def test_eval_shape_and_shape_dtype_struct():
    def f(x, y):
        return {"s": x @ y, "n": (x.sum(), x.astype(np.int32))}

    spec = (purejit.ShapeDtypeStruct((4, 5), np.float32), jax.ShapeDtypeStruct((5, 2), np.float32))
    got = purejit.eval_shape(f, *spec)
    want = jax.eval_shape(f, jax.ShapeDtypeStruct((4, 5), np.float32), spec[1])
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
    assert purejit.ShapeDtypeStruct((2,), np.float32) == purejit.ShapeDtypeStruct([2], "float32")
    assert "ShapeDtypeStruct(shape=(2,), dtype=float32)" == repr(
        purejit.ShapeDtypeStruct((2,), np.float32)
    )


def test_make_jaxpr_and_aot_stages():
    def f(x):
        return pnp.sin(x) * 2.0

    jaxpr = purejit.make_jaxpr(f)(X)
    text = str(jaxpr)
    assert text.startswith("func @f(") and "sine(" in text and "multiply(" in text
    assert [a.shape for a in jaxpr.in_avals] == [(4, 5)] and len(jaxpr.eqns) >= 2
    _, shapes = purejit.make_jaxpr(f, return_shape=True)(X)
    assert shapes == purejit.ShapeDtypeStruct((4, 5), np.float32)
    traced = purejit.jit(f).trace(purejit.ShapeDtypeStruct((4, 5), np.float32))
    assert "sine(" in str(traced.jaxpr)
    assert traced.out_info.shape == (4, 5)
    lowered = traced.lower()
    assert "func.func public @main" in lowered.as_text()
    np.testing.assert_allclose(np.asarray(lowered.compile()(X)), np.sin(X) * 2, rtol=1e-6)
    assert purejit.jit(f).eval_shape(X).shape == (4, 5)


def test_config_takes_jax_names():
    cfg = purejit.config
    assert cfg.jax_enable_x64 is False and cfg.read("jax_enable_x64") is False
    try:
        cfg.update("jax_enable_x64", True)
        assert cfg.enable_x64 and pnp.arange(3).dtype == np.int64
    finally:
        cfg.update("jax_enable_x64", False)
    assert pnp.arange(3).dtype == np.int32
    cfg.update("jax_log_compiles", False)
    cfg.update("jax_explain_cache_misses", False)
    with pytest.raises(NotImplementedError, match="jax_default_prng_impl"):
        cfg.update("jax_default_prng_impl", "rbg")
    with pytest.raises(KeyError, match="unknown purejit option"):
        cfg.update("no_such_option", 1)
    try:
        cfg.update("jax_default_matmul_precision", "highest")
        text = purejit.jit(lambda a, b: plax.dot(a, b)).lower(X, X.T).as_text()
        assert "precision HIGHEST" in text
    finally:
        cfg.update("jax_default_matmul_precision", None)


def test_precision_reaches_stablehlo_and_matches_jax():
    def f(L, a, b):
        return [
            L.dot(a, b, precision=L.Precision.HIGHEST),
            L.dot_general(
                a, b, (((1,), (0,)), ((), ())), precision=(L.Precision.HIGH, L.Precision.HIGHEST)
            ),
            L.dot(a, b, precision="float32"),
        ]

    refs = jax.jit(lambda a, b: f(jlax, a, b))(X, X.T)
    lowered = purejit.jit(lambda a, b: f(plax, a, b)).lower(X, X.T)
    text = lowered.as_text()
    assert (
        "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]" in text
    )
    assert "#stablehlo<precision HIGH>, #stablehlo<precision HIGHEST>" in text
    for r, g in zip(refs, lowered.compile()(X, X.T)):
        assert_same(r, g, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="precision"):
        plax.dot(X, X.T, precision="double")


def test_rest_of_lax_matches_jax():
    xi = RNG.integers(-3, 3, (4, 5)).astype(np.int32)
    which = RNG.integers(0, 3, (4, 5)).astype(np.int32)
    idx = np.array([[0, 1], [3, 4], [2, 2], [7, 0]], np.int32)  # the last one is out of bounds
    upd = RNG.standard_normal((4, 2)).astype(np.float32)

    def f(L, x, xi, which, idx, upd):
        gdn = L.GatherDimensionNumbers(
            offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1)
        )
        sdn = L.ScatterDimensionNumbers(
            update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0, 1)
        )
        return [
            L.select_n(which, x, x * 2, x * 3),
            L.select_n(x > 0, x, -x),
            L.gather(x, idx, gdn, (1, 2), mode="clip"),
            L.gather(x, idx, gdn, (1, 2), mode="fill", fill_value=-1.0),
            L.gather(x, idx, gdn, (1, 2)),
            L.scatter_add(x, idx, upd, sdn, mode="clip"),
            L.scatter(x, idx, upd, sdn),
            L.scatter_max(x, idx, upd, sdn, mode="promise_in_bounds"),
            L.scatter_mul(x, idx[:3], upd[:3], sdn),
            L.associative_scan(L.add, x, axis=1),
            L.associative_scan(L.max, x, reverse=True),
            L.associative_scan(lambda a, b: (a[0] + b[0], a[1] * b[1]), (x, xi), axis=1),
            L.cumlogsumexp(x, axis=1),
            L.cumlogsumexp(x, axis=0, reverse=True),
            L.sort((xi, x), dimension=1, num_keys=1),
            L.sort((xi, x), dimension=0, num_keys=2),
        ]  # fmt: skip

    args = (X, xi, which, idx, upd)
    refs = jax.jit(lambda *a: f(jlax, *a))(*args)
    outs = purejit.jit(lambda *a: f(plax, *a))(*args)
    for k, (r, g) in enumerate(zip(jax.tree.leaves(refs), jax.tree.leaves(outs))):
        assert_same(r, g, rtol=2e-6, atol=2e-6, weak=False, where=f"case {k}")


def test_numpy_products_pass_precision_and_preferred_type():
    """jnp's products hand `precision=` and `preferred_element_type=` to their dot_general (on
    GPU, float32 products at the default precision run in TF32, so dropping HIGHEST changes
    results by about 1e-3: lstsq and polyfit did)."""
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    products = {
        "dot": lambda m, x, **k: m.dot(x, x.T, **k),
        "matmul": lambda m, x, **k: m.matmul(x[None], x.T, **k),
        "einsum": lambda m, x, **k: m.einsum("ij,kj->ik", x, x, **k),
        "tensordot": lambda m, x, **k: m.tensordot(x, x, ((1,), (1,)), **k),
        "inner": lambda m, x, **k: m.inner(x, x, **k),
        "vdot": lambda m, x, **k: m.vdot(x, x, **k),
    }
    for name, f in products.items():
        text = purejit.jit(lambda x, f=f: f(pnp, x, precision="highest")).lower(a).as_text()
        assert "HIGHEST" in text, name
    bf = a.astype(ml_dtypes.bfloat16)
    for name in ("dot", "matmul", "einsum", "tensordot"):
        f = products[name]
        got = purejit.jit(lambda x, f=f: f(pnp, x, preferred_element_type=np.float32))(bf)
        want = jax.jit(lambda x, f=f: f(jax.numpy, x, preferred_element_type=np.float32))(bf)
        assert got.dtype == want.dtype == np.float32, name
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-2, err_msg=name)
    c = (a + 1j * a[::-1]).astype(np.complex64)
    want = jax.numpy.vdot(c, c[::-1])
    np.testing.assert_allclose(np.asarray(pnp.vdot(c, c[::-1])), np.asarray(want), rtol=1e-6)
