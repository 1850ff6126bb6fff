"""purejit.example_libraries.stax against jax.example_libraries.stax: the names JAX's module
re-exports are purejit's functions, and `shape_dependent` builds a layer per input shape with
the same outputs as JAX's."""

from __future__ import annotations

import numpy as np
import pytest
from jax import random as jrandom
from jax.example_libraries import stax as jstax

import purejit
from purejit import nn, random
from purejit.example_libraries import stax
from purejit.nn import initializers


def test_reexported_names_are_purejits():
    assert stax.relu is nn.relu and stax.softplus is nn.softplus
    assert stax.logsoftmax is nn.log_softmax and stax.standardize is nn.standardize
    assert stax.glorot is initializers.glorot_normal and stax.randn is initializers.normal
    assert stax.ones is initializers.ones and stax.zeros is initializers.zeros


def _by_width(shape, lib):
    # a Dense layer as wide as the input's last axis, then the library's Relu
    return lib.serial(lib.Dense(shape[-1]), lib.Relu)


def test_shape_dependent_matches_jax():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    init, apply = stax.shape_dependent(lambda s: _by_width(s, stax))
    out_shape, params = init(random.key(0), x.shape)
    jinit, japply = jstax.shape_dependent(lambda s: _by_width(s, jstax))
    jout_shape, _ = jinit(jrandom.PRNGKey(0), x.shape)
    assert tuple(out_shape) == tuple(jout_shape) == (3, 4)
    # the same parameters through both: the layer's computation, not its initialisation
    host = [tuple(np.asarray(p) for p in layer) for layer in params]
    got = purejit.jit(apply)(params, x)
    want = japply(host, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


def _same_layer(make, input_shape, **apply_kwargs):
    """Build the layer in both libraries, initialise with purejit, apply both to the same
    parameters and input; the output shapes and values must agree."""
    x = np.asarray(np.random.default_rng(1).standard_normal(input_shape), dtype=np.float32)
    init, apply = make(stax)
    jinit, japply = make(jstax)
    out_shape, params = init(random.key(0), input_shape)
    jout_shape, _ = jinit(jrandom.PRNGKey(0), input_shape)
    assert tuple(out_shape) == tuple(jout_shape)
    host = jax_tree_map(np.asarray, params)
    got = np.asarray(purejit.jit(lambda p, v: apply(p, v, **apply_kwargs))(params, x))
    want = np.asarray(japply(host, x, **apply_kwargs))
    assert got.shape == tuple(out_shape)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def jax_tree_map(f, tree):
    from jax import tree_util

    return tree_util.tree_map(f, tree)


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda L: L.Conv(4, (3, 3), strides=(2, 1), padding="SAME"), (2, 7, 6, 3)),
        (lambda L: L.GeneralConv(("NCHW", "OIHW", "NCHW"), 5, (2, 3)), (2, 3, 6, 5)),
        (lambda L: L.ConvTranspose(3, (3, 3), strides=(2, 2), padding="SAME"), (1, 4, 5, 2)),
        (lambda L: L.Conv1DTranspose(2, (3,), padding="VALID"), (2, 6, 3)),
        (lambda L: L.BatchNorm(), (4, 3, 3, 2)),
        (lambda L: L.BatchNorm(axis=0, center=False), (5, 3)),
        (lambda L: L.MaxPool((2, 2), strides=(2, 2)), (2, 6, 5, 3)),
        (lambda L: L.SumPool((3, 2), padding="SAME"), (1, 5, 4, 2)),
        (lambda L: L.AvgPool((3, 3), strides=(2, 2), padding="SAME"), (2, 7, 6, 3)),
        (lambda L: L.AvgPool((2,), spec="NCW"), (2, 3, 6)),
    ],
    ids=["conv", "general_conv_nchw", "conv_transpose", "conv1d_transpose", "batchnorm",
         "batchnorm_scale_only", "maxpool", "sumpool_same", "avgpool_same", "avgpool_ncw"],
)  # fmt: skip
def test_layers_match_jax(make, shape):
    _same_layer(make, shape)


def test_dropout_keeps_with_probability_rate_and_needs_a_key():
    init, apply = stax.Dropout(0.75)
    x = np.ones((200, 50), np.float32)
    out = np.asarray(apply((), x, rng=random.key(3)))
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.75)
    assert abs(kept.mean() - 0.75) < 0.02
    _, test_apply = stax.Dropout(0.75, mode="test")
    np.testing.assert_array_equal(np.asarray(test_apply((), x, rng=random.key(3))), x)
    with pytest.raises(ValueError, match="needs a PRNG key"):
        apply((), x)
