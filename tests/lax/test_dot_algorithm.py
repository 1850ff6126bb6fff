"""precision= as a dot algorithm (lax.DotAlgorithm / DotAlgorithmPreset, or a preset's name):
the results of jax.lax.dot_general with the same algorithm (bit for bit on CPU, which runs
the presets below and rejects the others as JAX does), StableHLO's `algorithm` attribute in
the emitted module, the algorithm kept by vmap and by the backward products of grad, and
the IR text of the attribute read back."""

import jax
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax

import purejit
from purejit import lax as plax
from purejit.ir import parse, print_function, verify

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 8)).astype(np.float32)
B = RNG.standard_normal((8, 3)).astype(np.float32)
CPU_PRESETS = ["DEFAULT", "F16_F16_F16", "F32_F32_F32", "BF16_BF16_F32", "BF16_BF16_F32_X3"]


def _cpu():
    if purejit.default_backend() != "cpu":
        pytest.skip("the presets and their rejection are CPU's")


@pytest.mark.parametrize("name", CPU_PRESETS)
def test_presets_match_jax(name):
    _cpu()
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16):
        a, b = A.astype(dt), B.astype(dt)
        want = jax.jit(lambda x, y: jlax.dot(x, y, precision=name))(a, b)
        for precision in (name, getattr(plax.DotAlgorithmPreset, name)):
            got = purejit.jit(lambda x, y: plax.dot(x, y, precision=precision))(a, b)
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_the_attribute_is_emitted_and_read_back():
    f = purejit.jit(lambda x, y: plax.dot(x, y, precision=plax.DotAlgorithmPreset.BF16_BF16_F32_X3))
    text = f.lower(A, B).as_text()
    assert (
        "algorithm = #stablehlo.dot_algorithm<lhs_precision_type = bf16, rhs_precision_type = "
        "bf16, accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, "
        "num_primitive_operations = 3, allow_imprecise_accumulation = false>"
    ) in text
    ir = str(purejit.make_jaxpr(lambda x, y: plax.dot(x, y, precision="BF16_BF16_F32_X3"))(A, B))
    assert 'algorithm=["bf16", "bf16", "f32", 1, 1, 3, false]' in ir
    fn = parse(ir)
    verify(fn)
    assert print_function(fn) == ir
    # DEFAULT is no attribute at all
    assert (
        "algorithm"
        not in purejit.jit(lambda x, y: plax.dot(x, y, precision="DEFAULT")).lower(A, B).as_text()
    )


def test_conversions_and_result_dtype():
    # F16_F16_F32 takes float16 operands (float32 ones are converted) and accumulates in
    # float32, the call's result dtype here, as JAX's
    ir = str(purejit.make_jaxpr(lambda x, y: plax.dot(x, y, precision="F16_F16_F32"))(A, B))
    assert ir.count("convert(") == 2 and "-> (f32[4,3])" in ir
    assert "dot_general(%2, %3)" in ir and "preferred_element_type=f32" in ir
    custom = plax.DotAlgorithm(np.float32, np.float32, np.float32)
    assert custom._attr(np.float32, np.float32) == ("f32", "f32", "f32", 1, 1, 1, False)


def test_cpu_rejects_what_it_cannot_run():
    _cpu()
    for bad in ("F16_F16_F32", plax.DotAlgorithmPreset.TF32_TF32_F32):
        with pytest.raises(ValueError, match=f"precision '{bad}' is not supported by dot_gen"):
            purejit.jit(lambda x, y: plax.dot(x, y, precision=bad))(A, B)
        with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
            jax.jit(lambda x, y: jlax.dot(x, y, precision=str(bad)))(A, B)
    with pytest.raises(ValueError, match="requires both inputs to have float8"):
        plax.dot(A, B, precision="ANY_F8_ANY_F8_F32")


def test_vmap_and_grad_keep_the_algorithm():
    alg = plax.DotAlgorithmPreset.BF16_BF16_F32_X3
    batched = purejit.make_jaxpr(purejit.vmap(lambda x: plax.dot(x, B, precision=alg)))(
        np.stack([A, A])
    )
    assert str(batched).count("algorithm=") == 1
    grads = purejit.make_jaxpr(
        purejit.grad(lambda x, y: plax.dot(x, y, precision=alg).sum(), argnums=(0, 1))
    )(A, B)
    assert str(grads).count("algorithm=") == 3  # the forward and both backward products
    _cpu()
    got = purejit.jit(
        purejit.grad(lambda x, y: plax.dot(x, y, precision=alg).sum(), argnums=(0, 1))
    )(A, B)
    want = jax.jit(jax.grad(lambda x, y: jlax.dot(x, y, precision=str(alg)).sum(), argnums=(0, 1)))(
        A, B
    )
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize(
    "dtype, out, alg",
    [
        (ml_dtypes.bfloat16, np.float32, "BF16_BF16_F32"),
        (ml_dtypes.bfloat16, np.float32, None),
        (np.float32, ml_dtypes.bfloat16, None),
    ],
)
def test_grad_of_a_mixed_precision_dot_takes_the_cotangent_as_jax_does(dtype, out, alg):
    # bf16 operands with a float32 result: JAX's backward products take the float32
    # cotangent unrounded. Without an algorithm its lowering converts the other operand to
    # float32; BF16_BF16_F32 (what JAX's attention asks for) takes float32 as it is and
    # leaves the rounding to the algorithm (a GPU rounds to bf16; XLA's CPU backend
    # contracts in float32). A bf16 result of float32 operands: both products in bf16.
    # F16_F16_F32 takes float16 operands only, so there the cotangent is rounded first.
    r = np.random.default_rng(1)
    a, b = (r.standard_normal(s).astype(dtype) for s in ((16, 64), (64, 8)))
    w = r.standard_normal((16, 8)).astype(np.float32)

    def loss(lax_mod, alg, out=out):
        def f(x, y):
            res = lax_mod.dot(x, y, precision=alg, preferred_element_type=out)
            return (res.astype(np.float32) * w).sum()

        return f

    f = loss(plax, alg)
    ir = str(purejit.make_jaxpr(purejit.grad(f, argnums=(0, 1)))(a, b))
    assert ir.count("algorithm=") == (3 if alg else 0)
    if out == np.float32:
        assert "bf16[16,8]" not in ir  # the [16, 8] cotangent is never rounded to bf16
        assert ir.count("{dtype=f32} : (f32[") == 2  # the operands go up to float32 instead
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    f16 = str(purejit.make_jaxpr(purejit.grad(loss(plax, "F16_F16_F32", np.float32)))(a16, b16))
    assert ": (f16[16,8])" in f16  # the cotangent rounded to float16 for the algorithm
    _cpu()
    got = purejit.jit(purejit.grad(f, argnums=(0, 1)))(a, b)
    want = jax.jit(jax.grad(loss(jlax, alg and getattr(jlax.DotAlgorithmPreset, alg)),
                            argnums=(0, 1)))(a, b)  # fmt: skip
    for g, x in zip(got, want):
        assert np.asarray(g).dtype == np.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(g, np.float32), np.asarray(x, np.float32))
