"""purejit.example_libraries.stax: the layer combinators of `jax.example_libraries.stax`.

A layer is a pair `(init_fun, apply_fun)`: `init_fun(rng, input_shape)` returns
`(output_shape, params)`, `apply_fun(params, inputs, **kwargs)` the outputs (a `rng=`
keyword reaches each sub-layer of `serial`/`parallel` split per layer). Here: `Dense`,
`Flatten`, `elementwise` and the activation layers, `Identity`, `FanOut`, `FanInSum`,
`FanInConcat`, `serial`, `parallel`, `shape_dependent`, and the functions JAX's module
re-exports (the activations of `nn`, the initializers `glorot`, `randn`, `ones`, `zeros`).
Not ported (an AttributeError in drop-in mode): `Conv`, `GeneralConv`, `ConvTranspose`,
`BatchNorm`, `Dropout`, the pooling layers.
"""

from __future__ import annotations

import math

from purejit import nn, random
from purejit import numpy as jnp
from purejit.nn import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from purejit.nn.initializers import glorot_normal, normal, ones, zeros

# JAX's stax names these initializers and activations too
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

__all__ = [
    "Dense",
    "Elu",
    "Exp",
    "FanInConcat",
    "FanInSum",
    "FanOut",
    "Flatten",
    "Gelu",
    "Identity",
    "LeakyRelu",
    "LogSoftmax",
    "Relu",
    "Selu",
    "Sigmoid",
    "Softmax",
    "Softplus",
    "Tanh",
    "elementwise",
    "elu",
    "gelu",
    "glorot",
    "glorot_normal",
    "leaky_relu",
    "log_softmax",
    "logsoftmax",
    "normal",
    "ones",
    "parallel",
    "randn",
    "relu",
    "selu",
    "serial",
    "shape_dependent",
    "sigmoid",
    "softmax",
    "softplus",
    "standardize",
    "zeros",
]


def Dense(out_dim: int, W_init=glorot_normal(), b_init=normal()):  # noqa: N802, N803
    """A fully connected layer `inputs @ W + b` over the last axis."""

    def init_fun(rng, input_shape):
        k_w, k_b = random.split(rng)
        w = W_init(k_w, (input_shape[-1], out_dim))
        b = b_init(k_b, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), (w, b)

    def apply_fun(params, inputs, **kwargs):
        w, b = params
        return jnp.dot(inputs, w) + b

    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying `fun(inputs, **fun_kwargs)`."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(nn.relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(nn.log_softmax, axis=-1)
Softmax = elementwise(nn.softmax, axis=-1)
Softplus = elementwise(nn.softplus)
Sigmoid = elementwise(nn.sigmoid)
Elu = elementwise(nn.elu)
LeakyRelu = elementwise(nn.leaky_relu)
Selu = elementwise(nn.selu)
Gelu = elementwise(nn.gelu)


def _flatten():
    def init_fun(rng, input_shape):
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()  # every axis but the first into one
Identity = elementwise(lambda x: x)


def FanOut(num: int):  # noqa: N802
    """A layer giving `num` copies of its input (a list)."""

    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum():
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs[1:], inputs[0])

    return init_fun, apply_fun


FanInSum = _fan_in_sum()  # the sum of its list of inputs


def FanInConcat(axis: int = -1):  # noqa: N802
    """A layer concatenating its list of inputs along `axis`."""

    def init_fun(rng, input_shape):
        first = tuple(input_shape[0])
        ax = axis % len(first)
        size = sum(shape[ax] for shape in input_shape)
        return first[:ax] + (size,) + first[ax + 1 :], ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def _layer_rngs(kwargs: dict, n: int):
    rng = kwargs.pop("rng", None)
    return random.split(rng, n) if rng is not None else (None,) * n


def serial(*layers):
    """The layers one after the other (their params a list, one entry per layer)."""
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        for fun, param, rng in zip(apply_funs, params, _layer_rngs(kwargs, len(apply_funs))):
            inputs = fun(param, inputs, rng=rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """Each layer on its own entry of a list of inputs (a list of outputs)."""
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = random.split(rng, len(init_funs))
        shapes, params = [], []
        for init, layer_rng, shape in zip(init_funs, rngs, input_shape):
            out_shape, param = init(layer_rng, shape)
            shapes.append(out_shape)
            params.append(param)
        return tuple(shapes), tuple(params)

    def apply_fun(params, inputs, **kwargs):
        rngs = _layer_rngs(kwargs, len(apply_funs))
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built per input shape: `make_layer(shape)` gives the `(init_fun, apply_fun)`
    used for inputs of that shape."""

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
