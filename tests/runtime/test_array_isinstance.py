"""`isinstance(x, purejit.Array)` as `isinstance(x, jax.Array)` in JAX: True for concrete
arrays, tracers (jit, grad, vmap) and typed PRNG keys, False for NumPy arrays and scalars;
`type(x) is purejit.Array` only for concrete arrays."""

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.random import PRNGKeyArray
from purejit.tracing import Tracer

Array = purejit.Array


def _seen_under(transform, f_of):
    """What `isinstance(v, Array)` and `type(v) is Array` say for the value a transformation
    passes to the function."""
    seen = []

    def f(v):
        seen.append((isinstance(v, Array), type(v) is Array, isinstance(v, jnp.ndarray)))
        return f_of(v)

    transform(f)(jnp.arange(3.0))
    return seen


def test_concrete_arrays_are_exactly_array():
    x = jnp.arange(3.0)
    y = purejit.jit(lambda v: v * 2)(x)
    for a in (x, y, purejit.grad(lambda v: (v * v).sum())(x)):
        assert isinstance(a, Array) and type(a) is Array


@pytest.mark.parametrize(
    "transform, f_of",
    [
        (purejit.jit, lambda v: v * 2),
        (purejit.grad, lambda v: (v * v).sum()),
        (purejit.vmap, lambda v: v * 2),
        (lambda f: purejit.jit(purejit.vmap(purejit.grad(f))), lambda v: v * v),
    ],
    ids=["jit", "grad", "vmap", "jit-vmap-grad"],
)
def test_tracers_are_instances(transform, f_of):
    seen = _seen_under(transform, f_of)
    assert seen and all(s == (True, False, True) for s in seen), seen


def test_typed_keys_are_instances_eager_and_traced():
    key = purejit.random.key(0)
    assert isinstance(key, Array) and type(key) is PRNGKeyArray
    seen = []

    def f(k):
        seen.append(isinstance(k, Array))
        return purejit.random.normal(k, (2,))

    purejit.jit(f)(key)
    purejit.vmap(f)(purejit.random.split(key, 3))
    assert seen == [True, True]


@pytest.mark.parametrize(
    "x",
    [np.ones(3), np.float32(1.0), np.int32(2), 1, 1.5, True, 1j, [1.0], (2,), None, "a"],
)
def test_numpy_and_scalars_are_not_instances(x):
    assert not isinstance(x, Array)
    assert not isinstance(x, jnp.ndarray)


def test_issubclass_agrees():
    assert issubclass(Array, Array)
    assert issubclass(Tracer, Array) and issubclass(PRNGKeyArray, Array)
    for t in (np.ndarray, np.float32, int, float, object):
        assert not issubclass(t, Array)
    # the typing class drop-in mode gives libraries as jax.Array says the same
    assert issubclass(Array, purejit.typing.ArrayValue)
    assert issubclass(Tracer, purejit.typing.ArrayValue)


def test_typed_keys_keep_their_operators():
    """`x + key` still reaches the key's own error (x's operator defers to it), although
    the key now counts as an Array."""
    x = jnp.ones(2, dtype=jnp.uint32)
    key = purejit.random.key(0)
    with pytest.raises(TypeError, match="radd is not defined on typed PRNG keys"):
        x + key
    with pytest.raises(TypeError, match="add is not defined on typed PRNG keys"):
        key + x
