"""jax 0.11's `custom_remat` (purejit/ad_checkpoint.py). With JAX's default checkpoint
implementation (jax_remat3 off; purejit has no other) JAX evaluates and differentiates the
wrapped `f` itself and never calls the rules; purejit does the same, so values and gradients
equal those of `f` under jax 0.10.2, which lacks the name (tools/check_jax011_names.py
compares with jax 0.11.2)."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp


def _never(*_):
    raise AssertionError("a custom_remat rule ran; JAX runs none without jax_remat3")


def _f(np_):
    return lambda x, n: np_.sin(x) ** n * np_.exp(x)


def test_values_and_gradients_are_fs():
    g = purejit.custom_remat(_f(pnp), _never, _never, _never, static_argnums=1)
    x = np.linspace(-1.0, 2.0, 7).astype(np.float32)
    want_f = _f(jjnp)

    def same(a, b):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), strict=True)

    same(g(x, 3), want_f(x, 3))
    same(purejit.jit(g, static_argnums=1)(x, 3), jax.jit(want_f, static_argnums=1)(x, 3))
    pg = purejit.grad(lambda v: g(v, 3).sum())(x)
    same(pg, jax.grad(lambda v: want_f(v, 3).sum())(x))
    pc = purejit.grad(purejit.checkpoint(lambda v: g(v, 3).sum()))(x)
    same(pc, jax.grad(jax.checkpoint(lambda v: want_f(v, 3).sum()))(x))
    # under jit: eagerly, purejit's jvp of sin(x)**2 * exp(x) differs from JAX's by an ulp
    # with or without custom_remat
    pj = purejit.jit(lambda v: purejit.jvp(lambda u: g(u, 2), (v,), (v,))[1])(x)
    same(pj, jax.jit(lambda v: jax.jvp(lambda u: want_f(u, 2), (v,), (v,))[1])(x))
    assert g.f_fwd is _never and g.static_argnums == (1,)


def test_rules_must_be_callable_and_remat3_is_refused():
    with pytest.raises(TypeError, match="f_rem must be callable"):
        purejit.custom_remat(_f(pnp), _never, None, _never)
    with pytest.raises(KeyError, match="jax_remat3"):
        purejit.config.update("jax_remat3", True)
