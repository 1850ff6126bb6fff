"""purejit.example_libraries.stax against jax.example_libraries.stax: each layer's init_fun
(output shape and parameters from the same key) and apply_fun (jitted on both sides, and
eager) give JAX's results bit for bit on CPU."""

from __future__ import annotations

import numpy as np
import pytest

import jax
from jax.example_libraries import stax as jstax

import purejit
from purejit.example_libraries import stax as pstax

X4 = np.random.default_rng(0).normal(size=(2, 9, 8, 3)).astype(np.float32)  # NHWC
X3 = np.random.default_rng(1).normal(size=(2, 7, 3)).astype(np.float32)  # NHC

# name -> (the layer built from a stax module, the input)
LAYERS = {
    "conv": (lambda s: s.Conv(4, (3, 3)), X4),
    "conv_strided_same": (lambda s: s.Conv(5, (3, 2), strides=(2, 1), padding="SAME"), X4),
    "general_conv_nchw": (
        lambda s: s.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (2, 3), padding="SAME"),
        X4.transpose(0, 3, 1, 2),
    ),
    "general_conv_1d": (lambda s: s.GeneralConv(("NHC", "HIO", "NHC"), 2, (3,)), X3),
    "conv_transpose": (lambda s: s.ConvTranspose(3, (2, 2), strides=(2, 2)), X4),
    "conv1d_transpose": (lambda s: s.Conv1DTranspose(4, (3,), padding="SAME"), X3),
    "batchnorm": (lambda s: s.BatchNorm(), X4),
    "batchnorm_axis0_noscale": (lambda s: s.BatchNorm(axis=0, scale=False), X3),
    "batchnorm_nocenter": (lambda s: s.BatchNorm(axis=(0, 1), center=False), X3),
    "maxpool": (lambda s: s.MaxPool((2, 2)), X4),
    "maxpool_strided_same": (lambda s: s.MaxPool((3, 3), (2, 2), "SAME"), X4),
    "sumpool": (lambda s: s.SumPool((2, 3), (1, 2)), X4),
    "avgpool": (lambda s: s.AvgPool((2, 2), (2, 2)), X4),
    "avgpool_same": (lambda s: s.AvgPool((3, 3), padding="SAME"), X4),
    "avgpool_spec": (lambda s: s.AvgPool((2,), spec="NCH"), X3.transpose(0, 2, 1)),
    "flatten": (lambda s: s.Flatten, X4),
    "shape_dependent": (lambda s: s.shape_dependent(lambda shape: s.Dense(shape[-1] + 1)), X3),
    "cnn": (
        lambda s: s.serial(
            s.Conv(4, (3, 3), padding="SAME"),
            s.BatchNorm(),
            s.Relu,
            s.MaxPool((2, 2)),
            s.AvgPool((2, 2)),
            s.Flatten,
            s.Dense(5),
            s.LogSoftmax,
        ),  # fmt: skip
        X4,
    ),
}

# apply_fun run eagerly too (each eager op compiles on its own: a few layers only)
EAGER = ("conv", "batchnorm", "avgpool_same", "maxpool")


def _init_both(make, shape):
    p_shape, p_params = make(pstax)[0](purejit.random.PRNGKey(3), shape)
    j_shape, j_params = make(jstax)[0](jax.random.PRNGKey(3), shape)
    assert tuple(p_shape) == tuple(j_shape)
    p_leaves, j_leaves = jax.tree.leaves(p_params), jax.tree.leaves(j_params)
    assert [np.shape(a) for a in p_leaves] == [np.shape(a) for a in j_leaves]
    for a, b in zip(p_leaves, j_leaves):  # the same initializers and key splits
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    return p_shape, p_params, j_params


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_stax_layer_matches_jax_bit_for_bit(name):
    make, x = LAYERS[name]
    p_shape, p_params, j_params = _init_both(make, x.shape)
    p_apply, j_apply = make(pstax)[1], make(jstax)[1]
    got = np.asarray(purejit.jit(p_apply)(p_params, x))
    want = np.asarray(jax.jit(j_apply)(j_params, x))
    assert got.shape == want.shape == tuple(p_shape)
    np.testing.assert_array_equal(got, want)
    if name not in EAGER:
        return
    # eager within an ulp: JAX's eager broadcast-divide (the mean in BatchNorm, AvgPool's count
    # at a padded border) multiplies by the reciprocal on XLA CPU; purejit's divides exactly
    got_eager, want_eager = np.asarray(p_apply(p_params, x)), np.asarray(j_apply(j_params, x))
    np.testing.assert_allclose(got_eager, want_eager, rtol=2e-7, atol=1e-7)


@pytest.mark.parametrize("mode", ["train", "test"])
def test_stax_dropout_matches_jax(mode):
    p_init, p_apply = pstax.Dropout(0.7, mode)
    j_init, j_apply = jstax.Dropout(0.7, mode)
    assert tuple(p_init(purejit.random.PRNGKey(0), X4.shape)[0]) == X4.shape
    got = np.asarray(purejit.jit(p_apply)((), X4, rng=purejit.random.PRNGKey(5)))
    want = np.asarray(jax.jit(j_apply)((), X4, rng=jax.random.PRNGKey(5)))
    np.testing.assert_array_equal(got, want)
    if mode == "train":  # `rate` is the keep probability, as in JAX's stax
        assert 0.5 < np.mean(got != 0) < 0.9
    with pytest.raises(ValueError, match="rng="):
        p_apply((), X4)


def test_stax_dropout_inside_serial_gets_a_key_per_layer():
    def net(s):
        return s.serial(s.Dense(6), s.Dropout(0.5), s.Relu, s.Dense(2), s.Dropout(0.8))

    x = X3[:, 0, :]
    _, p_params, j_params = _init_both(net, x.shape)
    got = purejit.jit(net(pstax)[1])(p_params, x, rng=purejit.random.PRNGKey(9))
    want = jax.jit(net(jstax)[1])(j_params, x, rng=jax.random.PRNGKey(9))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_reexported_names_are_purejits():
    from purejit import nn
    from purejit.nn import initializers

    assert pstax.relu is nn.relu and pstax.softplus is nn.softplus
    assert pstax.logsoftmax is nn.log_softmax and pstax.standardize is nn.standardize
    assert pstax.glorot is initializers.glorot_normal and pstax.randn is initializers.normal
    assert pstax.ones is initializers.ones and pstax.zeros is initializers.zeros


def _by_width(shape, lib):
    # a Dense layer as wide as the input's last axis, then the library's Relu
    return lib.serial(lib.Dense(shape[-1]), lib.Relu)


def test_shape_dependent_matches_jax():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    init, apply = pstax.shape_dependent(lambda s: _by_width(s, pstax))
    out_shape, params = init(purejit.random.key(0), x.shape)
    jinit, _ = jstax.shape_dependent(lambda s: _by_width(s, jstax))
    jout_shape, _ = jinit(jax.random.PRNGKey(0), x.shape)
    assert tuple(out_shape) == tuple(jout_shape) == (3, 4)
    _, japply = jstax.shape_dependent(lambda s: _by_width(s, jstax))
    # the same parameters through both: the layer's computation, not its initialisation
    host = [tuple(np.asarray(p) for p in layer) for layer in params]
    got = purejit.jit(apply)(params, x)
    want = japply(host, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
