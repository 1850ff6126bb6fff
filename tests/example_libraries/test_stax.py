"""purejit.example_libraries.stax against jax.example_libraries.stax: the names JAX's module
re-exports are purejit's functions, and `shape_dependent` builds a layer per input shape with
the same outputs as JAX's."""

from __future__ import annotations

import numpy as np
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
