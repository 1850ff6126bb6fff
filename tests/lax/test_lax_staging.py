"""lax.composite, lax.platform_dependent and lax.dce_sink (purejit/lax/staging.py) against
JAX."""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
import pytest

import purejit
from purejit import lax as plax

X = np.linspace(-1, 1, 5).astype(np.float32)


def test_composite_means_its_decomposition():
    def make(lax):
        tangent = lax.composite(lambda x: lax.sin(x) / lax.cos(x), name="my.tangent")

        @partial(lax.composite, name="my.scale")
        def scale(x, /, *, k):
            return x * k

        return lambda x: (tangent(x), scale(x, k=3.0), tangent(scale(x, k=0.5)))

    for got, want in zip(purejit.jit(make(plax))(X), jax.jit(make(jax.lax))(X)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    f, g = make(plax), make(jax.lax)
    # JAX's composite has no JVP rule; purejit's differentiates the decomposition
    np.testing.assert_allclose(
        purejit.grad(lambda x: f(x)[2].sum())(X),
        jax.grad(lambda x: jax.numpy.tan(x * 0.5).sum())(X),
        rtol=1e-6,
    )
    np.testing.assert_allclose(purejit.vmap(lambda x: f(x)[0])(X), g(X)[0], rtol=1e-6)
    fn = purejit.jit(f).trace(X).jaxpr
    assert any(op.name == "call" and op.attrs["callee"] == "my.tangent" for op in fn.eqns)


def test_composite_attributes_must_be_static():
    scale = plax.composite(lambda x, *, k: x * k, name="my.scale")
    with pytest.raises(purejit.errors.UnexpectedTracerError, match="attribute 'k'"):
        purejit.jit(lambda x: scale(x, k=x))(X)


def test_platform_dependent_picks_this_platform():
    plat = {"gpu": "cuda"}.get(jax.default_backend(), jax.default_backend())

    def make(lax):
        return lambda x: lax.platform_dependent(x, **{plat: lambda v: v + 1}, default=lambda v: v)

    np.testing.assert_array_equal(purejit.jit(make(plax))(X), jax.jit(make(jax.lax))(X))
    with pytest.raises(NotImplementedError, match="no branch"):
        plax.platform_dependent(X, tpu=lambda v: v) if plat != "tpu" else None.foo
    with pytest.raises(ValueError, match="Unsupported platforms"):
        plax.platform_dependent(X, vax=lambda v: v, default=lambda v: v)


def test_dce_sink_changes_nothing():
    def make(lax):
        def f(x):
            lax.dce_sink({"a": x * 2})
            return x + 1

        return f

    np.testing.assert_array_equal(purejit.jit(make(plax))(X), jax.jit(make(jax.lax))(X))
    assert plax.dce_sink(X) is None
    with pytest.raises(NotImplementedError, match="FFI"):
        plax.dce_sink(X, prevent_mlir_dce=True)
