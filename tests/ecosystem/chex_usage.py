"""chex as a JAX user's code uses it, run by `python -m purejit run` (tests/ecosystem/
test_chex_dropin.py): asserts, chexify'd value assertions under jit, dataclasses through jit,
variants (pmap among them) and restrict_backends. Prints CHEX-OK at the end."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
from chex._src.restrict_backends import RestrictedBackendError

import purejit

assert isinstance(jax.jit(len), purejit.api.Jitted) and jax.pmap is purejit.pmap

# static asserts
x = jnp.ones((2, 3))
chex.assert_shape(x, (2, 3))
chex.assert_rank([x, jnp.zeros(4)], [2, 1])
chex.assert_type(x, float)
chex.assert_trees_all_close({"a": x}, {"a": x + 1e-7})
try:
    chex.assert_shape(x, (3, 2))
    raise SystemExit("assert_shape did not fail")
except AssertionError as e:
    assert "(3, 2)" in str(e), e


# value assertions functionalised by chexify (purejit.checkify underneath)
@functools.partial(chex.chexify, async_check=False)
@jax.jit
def positive_log(v):
    chex.assert_tree_all_finite(v)
    chex.assert_scalar_positive(float(1.0))
    return jnp.log(v)


np.testing.assert_allclose(positive_log(jnp.array([1.0, 2.0])), np.log([1.0, 2.0]))
try:
    positive_log(jnp.array([1.0, jnp.inf]))
    raise SystemExit("chexify did not report a non-finite input")
except AssertionError as e:
    assert "finite" in str(e).lower(), e


# dataclasses are pytrees that go through jit and tree_map
@chex.dataclass
class Params:
    w: chex.Array
    b: chex.Array


p = Params(w=jnp.ones((2, 2)), b=jnp.zeros(2))
q = jax.jit(lambda p: jax.tree.map(lambda t: t * 2, p))(p)
assert isinstance(q, Params) and float(q.w.sum()) == 8.0
assert q.replace(b=jnp.ones(2)).b.sum() == 2.0


# variants: the same test body with and without jit, and under pmap
class Variants(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_pmap=True)
    def test_square(self):
        f = self.variant(lambda v: v * v)
        out = f(jnp.ones((1, 3)) * 3) if self.variant.type == "with_pmap" else f(jnp.ones(3) * 3)
        np.testing.assert_array_equal(np.asarray(out).ravel(), [9.0, 9.0, 9.0])


import unittest  # noqa: E402

result = unittest.TextTestRunner(verbosity=0).run(unittest.makeSuite(Variants))
assert result.wasSuccessful() and result.testsRun == 3, result

# restrict_backends: compiling for a forbidden platform raises, others compile
with chex.restrict_backends(allowed=["cpu"]):
    jax.jit(lambda v: v + 1)(1.0)
try:
    with chex.restrict_backends(forbidden=["cpu"]):
        jax.jit(lambda v: v - 7)(np.float32(2.0))
    raise SystemExit("restrict_backends did not stop a CPU compile")
except RestrictedBackendError:
    pass
jax.jit(lambda v: v - 7)(np.float32(2.0))  # allowed again afterwards
print("CHEX-OK")
