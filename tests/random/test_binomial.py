"""binomial beyond its bits (tests/random/test_bits.py): batching over keys, gradients and
argument errors, each against jax.random."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
import purejit.random as pr

_N = np.array([3.0, 40.0, 500.0], np.float32)


def test_vmap_over_keys_equals_loop_and_jax():
    keys = pr.split(pr.key(3), 4)
    draw = lambda k: pr.binomial(k, _N, 0.3, (3,))  # noqa: E731
    batched = np.asarray(purejit.vmap(draw)(keys))
    loop = np.stack([np.asarray(draw(keys[i])) for i in range(4)])
    jkeys = jax.random.split(jax.random.key(3), 4)
    want = np.asarray(jax.vmap(lambda k: jax.random.binomial(k, _N, 0.3, (3,)))(jkeys))
    np.testing.assert_array_equal(batched, loop)
    np.testing.assert_array_equal(batched, want)


def test_grad_is_zero_as_in_jax():
    k, jk = pr.key(0), jax.random.key(0)
    for argnum in (0, 1):

        def f(n, p):
            return pr.binomial(k, n, p, (4,)).sum()

        def g(n, p):
            return jax.random.binomial(jk, n, p, (4,)).sum()

        got = purejit.jit(purejit.grad(f, argnums=argnum))(60.0, 0.3)
        want = jax.grad(g, argnums=argnum)(60.0, 0.3)
        assert float(got) == float(want) == 0.0


def test_bad_arguments():
    with pytest.raises(ValueError, match="binomial.*float"):
        pr.binomial(pr.key(0), 5.0, 0.5, dtype=np.int32)
    with pytest.raises(TypeError, match="binomial"):
        pr.binomial(pr.key(0), [5.0], 0.5)
    with pytest.raises(ValueError, match="broadcast"):
        pr.binomial(pr.key(0), np.ones(3, np.float32), 0.5, shape=(2,))
