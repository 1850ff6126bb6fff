"""jax.nn's log1mexp, logmeanexp and block-scaled matmuls against JAX.

JAX has no CPU lowering for scaled_matmul (cuDNN only), so the reference is JAX's own
definition: its quantizers (`jax._src.cudnn.scaled_matmul_stablehlo`) with the matmul its
docstring states (scales repeated over their blocks, one float32 einsum) patched in for the
cuDNN call; JAX's custom VJP then runs as written.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.nn as nn
import purejit.numpy as jnp
from jax._src.cudnn import scaled_matmul_stablehlo as jax_scaled

RNG = np.random.default_rng(0)


def test_log1mexp_values_grad_and_dtypes():
    x = np.array([1e-7, 1e-3, 0.1, 0.69, 0.7, 1.0, 5.0, 30.0, 100.0], np.float32)
    np.testing.assert_array_equal(np.asarray(nn.log1mexp(x)), np.asarray(jax.nn.log1mexp(x)))
    got = purejit.jit(purejit.grad(lambda x: nn.log1mexp(x).sum()))(x)
    ref = jax.grad(lambda x: jax.nn.log1mexp(x).sum())(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6)
    for a in (np.arange(1, 4), np.float16(2.0), 3.0):
        got, ref = nn.log1mexp(a), jax.nn.log1mexp(a)
        assert got.dtype == ref.dtype and got.weak_type == ref.weak_type
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-3)
    ref = jax.vmap(jax.nn.log1mexp)(x.reshape(3, 3))
    np.testing.assert_array_equal(np.asarray(purejit.vmap(nn.log1mexp)(x.reshape(3, 3))), ref)


@pytest.mark.parametrize(
    "kw", [{}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"axis": 1, "where": True}]
)
def test_logmeanexp_matches_jax(kw):
    x = RNG.normal(size=(3, 4, 2)).astype(np.float32)
    if kw.get("where") is True:
        kw = dict(kw, where=x > -0.5)
    got = purejit.jit(lambda x: nn.logmeanexp(x, **kw))(x)
    ref = jax.nn.logmeanexp(x, **kw)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6, atol=1e-6)
    g = purejit.grad(lambda x: nn.logmeanexp(x, **kw).sum())(x)
    r = jax.grad(lambda x: jax.nn.logmeanexp(x, **kw).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-7)


def _jax_matmul(a, b, sa, sb, preferred_element_type=np.float32):
    """scaled_matmul as JAX's docstring defines it (what cuDNN computes)."""
    a = a.astype(np.float32) * jjnp.repeat(sa.astype(np.float32), a.shape[-1] // sa.shape[-1], -1)
    b = b.astype(np.float32) * jjnp.repeat(sb.astype(np.float32), b.shape[-1] // sb.shape[-1], -1)
    return jjnp.einsum("BMK,BNK->BMN", a, b).astype(preferred_element_type)


@pytest.fixture
def jax_on_cpu(monkeypatch):
    monkeypatch.setattr(jax_scaled, "scaled_matmul_wrapper", _jax_matmul)


def _configs(mod, xnp, mode):
    gs = xnp.array([0.5], np.float32) if mode == "nvfp4" else None
    return [mod.get_scaled_dot_general_config(mode, gs)] * 3


def test_get_config_fields_match_jax():
    for mode in ("mxfp8", "nvfp4"):
        got, ref = (
            nn.get_scaled_dot_general_config(mode),
            jax.nn.get_scaled_dot_general_config(mode),
        )
        for f in ("mode", "block_size", "data_type", "scale_type", "infer_only"):
            assert getattr(got, f) == getattr(ref, f)
    with pytest.raises(ValueError, match="Unsupported mode: int8"):
        nn.get_scaled_dot_general_config("int8")


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_scaled_matmul_on_quantized_operands(mode):
    a = RNG.normal(size=(2, 4, 64)).astype(np.float32)
    b = RNG.normal(size=(2, 3, 64)).astype(np.float32)
    (cfg,) = _configs(jax.nn, jjnp, mode)[:1]
    qa, sa, qb, sb = jax.jit(
        lambda a, b: (*jax_scaled.quantize(a, cfg), *jax_scaled.quantize(b, cfg))
    )(a, b)
    ref = jax.jit(_jax_matmul)(qa, qb, sa, sb)
    args = [np.asarray(v) for v in (qa, qb, sa, sb)]
    got = purejit.jit(nn.scaled_matmul)(*args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    with pytest.raises(ValueError, match="3-dimensional"):
        nn.scaled_matmul(args[0][0], *args[1:])
    with pytest.raises(ValueError, match="matching batch"):
        nn.scaled_matmul(args[0], args[1][:1], *args[2:])


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_scaled_dot_general_forward_and_grad_match_jax(jax_on_cpu, mode):
    lhs = RNG.normal(size=(3, 8, 64)).astype(np.float32)
    rhs = RNG.normal(size=(3, 64, 5)).astype(np.float32)
    dn = (((2,), (1,)), ((0,), (0,)))
    jc, pc = _configs(jax.nn, jjnp, mode), _configs(nn, jnp, mode)
    ref = jax.jit(lambda x, y: jax.nn.scaled_dot_general(x, y, dn, configs=jc))(lhs, rhs)
    got = purejit.jit(lambda x, y: nn.scaled_dot_general(x, y, dn, configs=pc))(lhs, rhs)
    assert got.shape == ref.shape == (3, 8, 5)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6, atol=1e-6)

    def loss(m, c):
        return lambda x, y: (m.scaled_dot_general(x, y, dn, configs=c) ** 2).sum()

    # cotangents of 64-wide contractions: block sizes 32 / 16 divide every kept dim used
    lhs2 = RNG.normal(size=(2, 32, 64)).astype(np.float32)
    rhs2 = RNG.normal(size=(2, 64, 32)).astype(np.float32)
    ref = jax.jit(jax.grad(loss(jax.nn, jc), argnums=(0, 1)))(lhs2, rhs2)
    got = purejit.jit(purejit.grad(loss(nn, pc), argnums=(0, 1)))(lhs2, rhs2)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-4)


def test_scaled_dot_general_without_configs_and_unbatched(jax_on_cpu):
    x = RNG.normal(size=(4, 32)).astype(np.float32)
    y = RNG.normal(size=(32, 6)).astype(np.float32)
    dn = (((1,), (0,)), ((), ()))
    np.testing.assert_allclose(
        np.asarray(nn.scaled_dot_general(x, y, dn)),
        np.asarray(jax.nn.scaled_dot_general(x, y, dn)),
        rtol=1e-6,
    )
    jc, pc = _configs(jax.nn, jjnp, "mxfp8"), _configs(nn, jnp, "mxfp8")
    got = purejit.jit(lambda x, y: nn.scaled_dot_general(x, y, dn, configs=pc))(x, y)
    ref = jax.jit(lambda x, y: jax.nn.scaled_dot_general(x, y, dn, configs=jc))(x, y)
    assert got.shape == ref.shape == (4, 6)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="preferred_element_type"):
        nn.scaled_dot_general(x, y, dn, preferred_element_type=np.int32, configs=pc)
