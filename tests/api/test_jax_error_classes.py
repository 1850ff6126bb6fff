"""purejit's errors are instances of the classes `jax.errors` names where JAX raises them, and
`Lowered.args_info` / `Compiled.args_info` describe the arguments as `jax.stages.ArgInfo`."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import errors, stages


def test_class_hierarchy_mirrors_jax():
    for name in ("ConcretizationTypeError", "TracerArrayConversionError",
                 "TracerBoolConversionError", "UnexpectedTracerError"):  # fmt: skip
        assert issubclass(getattr(errors, name), errors.JAXTypeError), name
        assert issubclass(getattr(jax.errors, name), jax.errors.JAXTypeError), name
    assert issubclass(errors.JAXTypeError, TypeError)
    assert issubclass(errors.JAXIndexError, IndexError)
    assert issubclass(errors.NonConcreteBooleanIndexError, errors.JAXIndexError)
    assert issubclass(errors.UnexpectedTracerError, RuntimeError)  # as purejit's always was


def test_traced_boolean_mask_raises_non_concrete_boolean_index_error():
    x = np.arange(5.0, dtype=np.float32)
    with pytest.raises(jax.errors.NonConcreteBooleanIndexError):
        jax.jit(lambda x: x[x > 2])(x)
    with pytest.raises(errors.NonConcreteBooleanIndexError, match="purejit.numpy.where"):
        purejit.jit(lambda x: x[x > 2])(x)
    # a concrete mask still selects, eagerly
    np.testing.assert_array_equal(jnp.asarray(x)[x > 2], x[x > 2])


def test_concretization_is_a_jax_type_error():
    def f(x):
        return 1.0 if x > 0 else 2.0

    with pytest.raises(jax.errors.JAXTypeError):
        jax.jit(f)(1.0)
    with pytest.raises(errors.JAXTypeError):
        purejit.jit(f)(1.0)


def test_args_info_matches_jax():
    x, y = np.zeros(3, np.float32), {"a": 1.0}

    def f(x, y):
        return x * 2 + y["a"]

    want = jax.jit(f, donate_argnums=0).lower(x, y).args_info
    lowered = purejit.jit(f, donate_argnums=0).lower(x, y)
    for got in (lowered.args_info, lowered.compile().args_info):
        g, w = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
        assert jax.tree_util.tree_structure(want).num_leaves == len(g)
        for gi, wi in zip(g, w):
            assert isinstance(gi, stages.ArgInfo)
            assert (gi.shape, gi.dtype, gi.donated) == (wi.shape, wi.dtype, wi.donated)
