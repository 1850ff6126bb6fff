"""JAX's configuration context managers (`enable_x64`, `default_matmul_precision`,
`log_compiles`, `explain_cache_misses`): the option holds inside the block, is restored
after it, and a jitted function is traced again under a new x64 or precision setting."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp


def test_enable_x64_block_and_decorator_match_jax_and_retrace():
    f = purejit.jit(lambda x: x + pnp.arange(3))
    fj = jax.jit(lambda x: x + jjnp.arange(3))
    x = np.int32(1)
    assert f(x).dtype == fj(x).dtype == np.int32
    with purejit.enable_x64(), jax.enable_x64(True):
        assert pnp.arange(3).dtype == jjnp.arange(3).dtype == np.int64
        assert f(x).dtype == fj(x).dtype == np.int64  # traced again, not the int32 program
        assert purejit.config.enable_x64
    assert not purejit.config.enable_x64
    assert f(x).dtype == np.int32  # the first program again

    @purejit.enable_x64(True)
    def g():
        return pnp.ones(2).dtype

    assert g() == np.float64 and not purejit.config.enable_x64


def test_default_matmul_precision_block():
    x = np.ones((4, 4), np.float32)
    f = purejit.jit(lambda a: purejit.lax.dot(a, a))
    assert "HIGHEST" not in f.lower(x).as_text()
    with purejit.default_matmul_precision("highest"):
        assert "precision HIGHEST" in f.lower(x).as_text()
        np.testing.assert_allclose(np.asarray(f(x)), x @ x)
    assert purejit.config.read("jax_default_matmul_precision") is None
    assert "HIGHEST" not in f.lower(x).as_text()  # restored: the default program again


def test_log_compiles_and_explain_cache_misses_blocks(caplog):
    x = np.ones(3, np.float32)
    with caplog.at_level(logging.WARNING, logger="purejit"):
        with purejit.log_compiles():
            purejit.jit(lambda a: a * 3.0 + 1.5)(x)
        assert any("compiled by XLA" in r.getMessage() for r in caplog.records)
        caplog.clear()
        purejit.jit(lambda a: a * 5.0 - 1.5)(x)
        assert not any("compiled by XLA" in r.getMessage() for r in caplog.records)
        with purejit.explain_cache_misses():
            assert purejit.config.read("jax_explain_cache_misses") is True
        assert purejit.config.read("jax_explain_cache_misses") is False


def test_numpy_dtype_promotion_standard_only():
    import jax

    x = np.ones(2, np.float32)
    with purejit.numpy_dtype_promotion("standard"), jax.numpy_dtype_promotion("standard"):
        got = purejit.numpy.asarray(x) + np.int32(1)
        assert got.dtype == (jax.numpy.asarray(x) + np.int32(1)).dtype
    with pytest.raises(NotImplementedError, match="'standard' type promotion"):
        purejit.numpy_dtype_promotion("strict")
    with pytest.raises(ValueError):
        purejit.numpy_dtype_promotion("loose")


def test_parse_flags_with_absl_applies_jax_flags_of_the_command_line():
    cfg = purejit.config
    saved = (cfg.read("enable_x64"), cfg.read("numpy_rank_promotion"))
    try:
        cfg.parse_flags_with_absl(
            ["-q", "--jax_enable_x64", "--jax_numpy_rank_promotion=warn", "--other=1", "--",
             "--jax_debug_nans"]
        )  # fmt: skip
        assert cfg.read("enable_x64") is True
        assert cfg.read("numpy_rank_promotion") == "warn"
        assert cfg.read("debug_nans") is False  # after the lone "--"
        cfg.parse_flags_with_absl(["--nojax_enable_x64", "--jax_numpy_rank_promotion=allow"])
        assert cfg.read("enable_x64") is False
        cfg.parse_flags_with_absl(["--jax_enable_x64=true"])
        assert cfg.read("enable_x64") is True
        cfg.parse_flags_with_absl()  # pytest's own command line: no --jax flags
        with pytest.raises(NotImplementedError, match="jax_default_prng_impl"):
            cfg.parse_flags_with_absl(["--jax_default_prng_impl=rbg"])
    finally:
        cfg.update(enable_x64=saved[0], numpy_rank_promotion=saved[1])
