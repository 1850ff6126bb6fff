"""purejit.example_libraries.stax: the layer combinators of `jax.example_libraries.stax`.

A layer is a pair `(init_fun, apply_fun)`: `init_fun(rng, input_shape)` returns
`(output_shape, params)`, `apply_fun(params, inputs, **kwargs)` the outputs (a `rng=`
keyword reaches each sub-layer of `serial`/`parallel` split per layer). Every layer of
JAX's module: `Dense`, `GeneralConv`/`Conv`, `GeneralConvTranspose`/`ConvTranspose`/
`Conv1DTranspose`, `BatchNorm`, `MaxPool`/`SumPool`/`AvgPool`, `Flatten`, `Dropout`,
`elementwise` and the activation layers, `Identity`, `FanOut`, `FanInSum`, `FanInConcat`,
`serial`, `parallel`, `shape_dependent`. Each draws its initial parameters from the same keys
in the same order as JAX's, so `init_fun` gives JAX's parameters bit for bit.
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
    "randn",
    "relu",
    "selu",
    "sigmoid",
    "softmax",
    "softplus",
    "standardize",
    "zeros",
    "parallel",
    "serial",
    "shape_dependent",
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


def _conv_kernel_shape(rhs_spec: str, lhs_spec: str, input_shape, out_chan, filter_shape):
    """The kernel's shape in `rhs_spec`'s axis order: 'O' the output channels, 'I' the
    input's channels, the spatial letters `filter_shape` in order."""
    spatial = iter(filter_shape)
    return [
        out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(spatial)
        for c in rhs_spec
    ]


def _conv_layer(transpose: bool):
    def make(
        dimension_numbers,
        out_chan: int,
        filter_shape,
        strides=None,
        padding="VALID",
        W_init=None,  # noqa: N803
        b_init=normal(1e-6),
    ):
        lhs_spec, rhs_spec, out_spec = dimension_numbers
        one = (1,) * len(filter_shape)
        strides = strides or one
        W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806

        def init_fun(rng, input_shape):
            kernel_shape = _conv_kernel_shape(
                rhs_spec, lhs_spec, input_shape, out_chan, filter_shape
            )
            shape_of = lax.conv_transpose_shape_tuple if transpose else lax.conv_general_shape_tuple
            output_shape = shape_of(input_shape, kernel_shape, strides, padding, dimension_numbers)
            bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
            k_w, k_b = random.split(rng)
            return output_shape, (W_init(k_w, kernel_shape), b_init(k_b, bias_shape))

        def apply_fun(params, inputs, **kwargs):
            w, b = params
            if transpose:
                out = lax.conv_transpose(
                    inputs, w, strides, padding, dimension_numbers=dimension_numbers
                )
            else:
                out = lax.conv_general_dilated(
                    inputs, w, strides, padding, one, one, dimension_numbers=dimension_numbers
                )
            return out + b

        return init_fun, apply_fun

    return make


GeneralConv = _conv_layer(transpose=False)
GeneralConv.__name__ = GeneralConv.__qualname__ = "GeneralConv"
GeneralConv.__doc__ = """A convolution layer over inputs laid out as `dimension_numbers`
(`(lhs_spec, rhs_spec, out_spec)`, e.g. `("NHWC", "HWIO", "NHWC")`), plus a bias."""
Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
GeneralConvTranspose = _conv_layer(transpose=True)
GeneralConvTranspose.__name__ = GeneralConvTranspose.__qualname__ = "GeneralConvTranspose"
GeneralConvTranspose.__doc__ = """A transposed convolution layer (`lax.conv_transpose`) over
inputs laid out as `dimension_numbers`, plus a bias."""
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(  # noqa: N802
    axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros, gamma_init=ones
):
    """Standardises its input over `axis` (the batch's own statistics, no running
    averages), then scales by gamma and shifts by beta (each shaped as the other axes)."""
    axis = (axis,) if isinstance(axis, int) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k_beta, k_gamma = random.split(rng)
        beta = beta_init(k_beta, shape) if center else ()
        gamma = gamma_init(k_gamma, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        kept = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = nn.standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[kept] * z
        return z + beta[kept] if center else z

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


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):  # noqa: N802
        """A pooling layer over the spatial axes (those of `spec` other than 'N' and 'C';
        without `spec` the input is laid out N, spatial..., C)."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        non_spatial = (0, len(window_shape) + 1) if spec is None else _batch_channel(spec)
        window, steps = tuple(window_shape), tuple(strides)
        for i in sorted(non_spatial):
            window, steps = window[:i] + (1,) + window[i:], steps[:i] + (1,) + steps[i:]

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window, steps, padding)
            ones_ = (1,) * len(window)
            return lax.reduce_window_shape_tuple(input_shape, window, steps, pads, ones_, ones_), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window, steps, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    return PoolingLayer


def _batch_channel(spec: str) -> tuple[int, int]:
    return spec.index("N"), spec.index("C")


def _divide_by_window_size(window_shape, strides, padding):
    """AvgPool's rescaling: each output divided by how many inputs its window covered
    (fewer at a padded border)."""

    def rescale(outputs, inputs, spec):
        non_spatial = (0, inputs.ndim - 1) if spec is None else _batch_channel(spec)
        spatial = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
        one = jnp.ones(spatial, dtype=inputs.dtype)
        sizes = lax.reduce_window(one, 0.0, lax.add, window_shape, strides, padding)
        for i in sorted(non_spatial):
            sizes = jnp.expand_dims(sizes, i)
        return outputs / sizes

    return rescale


MaxPool = _pooling_layer(lax.max, -math.inf)
SumPool = _pooling_layer(lax.add, 0.0)
AvgPool = _pooling_layer(lax.add, 0.0, _divide_by_window_size)


def _flatten():
    def init_fun(rng, input_shape):
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()  # every axis but the first into one
Identity = elementwise(lambda x: x)


def Dropout(rate: float, mode: str = "train"):  # noqa: N802
    """In mode "train", keeps each input with probability `rate` (JAX's stax reads `rate`
    as the keep probability) and divides the kept ones by `rate`; any other mode passes the
    input on. apply_fun needs `rng=`."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError(
                "stax.Dropout's apply_fun needs a PRNG key: call it as "
                "apply_fun(params, inputs, rng=key) (serial and parallel pass theirs on)"
            )
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


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
    """A layer built by `make_layer(input_shape)` once the input's shape is known (at
    init from `input_shape`, at apply from `inputs.shape`)."""

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
