"""A masked cross entropy (log_softmax(x, where=m) summed with where=m) against JAX: values and
gradients, with a fully masked row (JAX's gradient there is 0, never NaN)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import purejit
import purejit.nn as pnn
import purejit.numpy as pnp


def _loss(nn, n):
    def loss(x, labels, m):
        logp = nn.log_softmax(x, axis=-1, where=m)
        onehot = labels[:, None] == n.arange(x.shape[-1])[None, :]
        return -n.sum(n.where(onehot, logp, 0.0), where=m)

    return loss


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    m = rng.random((4, 6)) > 0.4
    m[1] = False  # a row with every lane masked
    m[0, 2] = True
    labels = np.array([2, 0, 3, 5])
    m[np.arange(4)[m.any(1)], labels[m.any(1)]] = True
    return x, labels, m


@pytest.mark.parametrize("wrap", ["eager", "jit", "vmap"])
def test_masked_cross_entropy_gradient_is_zero_on_a_masked_row(wrap):
    x, labels, m = _inputs()
    want_val = jax.jit(_loss(jax.nn, jnp))(x, labels, m)
    want = jax.grad(_loss(jax.nn, jnp))(x, labels, m)
    g = purejit.grad(_loss(pnn, pnp))
    if wrap == "jit":
        g = purejit.jit(g)
    if wrap == "vmap":
        got = purejit.vmap(g, in_axes=(0, None, None))(np.stack([x, 2 * x]), labels, m)
        want2 = jax.vmap(jax.grad(_loss(jax.nn, jnp)), in_axes=(0, None, None))(
            np.stack([x, 2 * x]), labels, m
        )
        np.testing.assert_allclose(np.asarray(got), np.asarray(want2), rtol=1e-5, atol=1e-6)
        assert (np.asarray(got)[:, 1] == 0).all()
        return
    got = np.asarray(g(x, labels, m))
    assert np.isfinite(got).all()
    assert (got[1] == 0).all() and (np.asarray(want)[1] == 0).all()
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-6)
    val = _loss(pnn, pnp)(x, labels, m)
    np.testing.assert_allclose(float(val), float(want_val), rtol=1e-6)


def test_masked_log_softmax_and_softmax_values_match_jax():
    x, _, m = _inputs()
    np.testing.assert_array_equal(
        np.asarray(pnn.log_softmax(x, where=m)), np.asarray(jax.nn.log_softmax(x, where=m))
    )
    np.testing.assert_allclose(
        np.asarray(pnn.softmax(x, where=m)), np.asarray(jax.nn.softmax(x, where=m)), rtol=1e-6
    )
    gs = purejit.grad(lambda x: pnp.sum(pnn.softmax(x, where=m) * np.arange(6.0)))(x)
    gj = jax.grad(lambda x: jnp.sum(jax.nn.softmax(x, where=m) * np.arange(6.0)))(x)
    assert np.isfinite(np.asarray(gs)).all()
    np.testing.assert_allclose(np.asarray(gs), np.asarray(gj), rtol=1e-5, atol=1e-6)
