"""purejit.example_libraries.stax: the layer combinators of `jax.example_libraries.stax`.

A layer is a pair `(init_fun, apply_fun)`: `init_fun(rng, input_shape)` returns
`(output_shape, params)`, `apply_fun(params, inputs, **kwargs)` the outputs (a `rng=`
keyword reaches each sub-layer of `serial`/`parallel` split per layer). Every layer of JAX's
module: `Dense`, the convolutions (`GeneralConv`, `Conv`, `GeneralConvTranspose`,
`ConvTranspose`, `Conv1DTranspose`), `BatchNorm`, `Dropout`, the pooling layers (`MaxPool`,
`SumPool`, `AvgPool`), `Flatten`, `elementwise` and the activation layers, `Identity`,
`FanOut`, `FanInSum`, `FanInConcat`, `serial`, `parallel`, `shape_dependent`, and the
functions JAX's module re-exports (the activations of `nn`, the initializers `glorot`,
`randn`, `ones`, `zeros`).
"""

from __future__ import annotations

import functools
import math

from purejit import lax, nn, random
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
    "AvgPool",
    "BatchNorm",
    "Conv",
    "Conv1DTranspose",
    "ConvTranspose",
    "Dense",
    "Dropout",
    "GeneralConv",
    "GeneralConvTranspose",
    "MaxPool",
    "SumPool",
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


def _conv_layer(
    shape_rule,
    apply_rule,
    dimension_numbers,
    out_chan,
    filter_shape,
    strides,
    padding,
    W_init,
    b_init,
):  # noqa: N803
    """A (transposed) convolution layer: its kernel is laid out by `dimension_numbers`'s
    kernel spec ('O' the output channels, 'I' the input's, the rest `filter_shape`), its
    bias broadcasts over the output spec's channel axis."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    strides = tuple(strides) if strides else (1,) * len(filter_shape)
    if W_init is None:
        W_init = glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806

    def init_fun(rng, input_shape):
        spatial = iter(filter_shape)
        kernel_shape = [
            out_chan
            if c == "O"
            else input_shape[lhs_spec.index("C")]
            if c == "I"
            else next(spatial)
            for c in rhs_spec
        ]
        out_shape = shape_rule(input_shape, kernel_shape, strides, padding, dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k_w, k_b = random.split(rng)
        return tuple(out_shape), (W_init(k_w, kernel_shape), b_init(k_b, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        w, b = params
        return apply_rule(inputs, w, strides, padding, dimension_numbers) + b

    return init_fun, apply_fun


def GeneralConv(
    dimension_numbers,
    out_chan,
    filter_shape,
    strides=None,
    padding="VALID",  # noqa: N802
    W_init=None,
    b_init=normal(1e-6),
):  # noqa: N803
    """A convolution layer over `dimension_numbers` = (input, kernel, output) specs, such as
    ('NHWC', 'HWIO', 'NHWC')."""
    one = (1,) * len(filter_shape)

    def conv(x, w, strides, padding, dn):
        return lax.conv_general_dilated(x, w, strides, padding, one, one, dimension_numbers=dn)

    return _conv_layer(
        lax.conv_general_shape_tuple,
        conv,
        dimension_numbers,
        out_chan,
        filter_shape,
        strides,
        padding,
        W_init,
        b_init,
    )


def GeneralConvTranspose(
    dimension_numbers,
    out_chan,
    filter_shape,
    strides=None,  # noqa: N802
    padding="VALID",
    W_init=None,
    b_init=normal(1e-6),
):  # noqa: N803
    """A transposed-convolution layer over `dimension_numbers` (see `GeneralConv`)."""

    def conv(x, w, strides, padding, dn):
        return lax.conv_transpose(x, w, strides, padding, dimension_numbers=dn)

    return _conv_layer(
        lax.conv_transpose_shape_tuple,
        conv,
        dimension_numbers,
        out_chan,
        filter_shape,
        strides,
        padding,
        W_init,
        b_init,
    )


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(
    axis=(0, 1, 2),
    epsilon=1e-5,
    center=True,
    scale=True,  # noqa: N802
    beta_init=zeros,
    gamma_init=ones,
):
    """Normalise over `axis` (batch statistics of the inputs, no running averages), then
    scale by gamma and shift by beta, both shaped like the axes kept."""
    axis = (axis,) if isinstance(axis, int) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k_beta, k_gamma = random.split(rng)
        beta = beta_init(k_beta, shape) if center else ()
        gamma = gamma_init(k_gamma, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        # the parameters gain a unit axis at every normalised axis, to broadcast against x
        expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[expand] * z
        if center:
            z = z + beta[expand]
        return z

    return init_fun, apply_fun


def Dropout(rate, mode="train"):  # noqa: N802
    """In "train" mode keep each input with probability `rate` (JAX's stax: `rate` is the
    keeping probability), scaled by 1/rate; any other mode passes inputs through. Needs an
    `rng=` key when applied."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError(
                "Dropout: apply_fun needs a PRNG key; call apply_fun(params, inputs, rng=key)"
            )
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


def _pool_dims(window_shape, strides, spec):
    """Window and strides over every axis: 1 at the batch and channel axes (`spec`'s 'N' and
    'C', else the first and the last)."""
    strides = tuple(strides) if strides else (1,) * len(window_shape)
    window_shape = tuple(window_shape)
    batch_and_channel = (0, len(window_shape) + 1) if spec is None else (
        spec.index("N"), spec.index("C"))  # fmt: skip
    for i in sorted(batch_and_channel):
        window_shape = window_shape[:i] + (1,) + window_shape[i:]
        strides = strides[:i] + (1,) + strides[i:]
    return window_shape, strides, batch_and_channel


def _pooling_layer(reducer, init_value, average: bool = False):
    def layer(window_shape, strides=None, padding="VALID", spec=None):
        spatial_window, spatial_strides = tuple(window_shape), strides
        window, strides, batch_and_channel = _pool_dims(window_shape, strides, spec)

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window, strides, padding)
            ones_ = (1,) * len(window)
            out = lax.reduce_window_shape_tuple(input_shape, window, strides, pads, ones_, ones_)
            return tuple(out), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_value, reducer, window, strides, padding)
            if not average:
                return out
            # each output divided by how many inputs its window covered (padding excluded)
            spatial = tuple(d for i, d in enumerate(inputs.shape) if i not in batch_and_channel)
            sizes = lax.reduce_window(
                jnp.ones(spatial, inputs.dtype), 0.0, lax.add, spatial_window,
                spatial_strides or (1,) * len(spatial_window), padding,
            )  # fmt: skip
            for i in sorted(batch_and_channel):
                sizes = jnp.expand_dims(sizes, i)
            return out / sizes

        return init_fun, apply_fun

    return layer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.0)
AvgPool = _pooling_layer(lax.add, 0.0, average=True)


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
