"""purejit.nn against jax.nn: activations, softmax family, logsumexp, one_hot, standardize."""

import jax
import jax.nn as jnn
import numpy as np
import pytest
from jnp_compare import assert_same

import purejit
import purejit.nn as pnn

RNG = np.random.default_rng(0)
X = (RNG.normal(size=(3, 6)) * 3).astype(np.float32)
X[0, 0] = -np.inf
X[1, 1] = 40.0  # large: the stable forms must not overflow
MASK = RNG.normal(size=(3, 6)) > -0.3

ELEMENTWISE = [
    "relu", "relu6", "gelu", "silu", "swish", "sigmoid", "softplus", "log_sigmoid", "elu",
    "leaky_relu", "celu", "selu", "hard_tanh", "hard_sigmoid", "hard_silu", "hard_swish",
    "mish", "soft_sign", "squareplus", "tanh", "identity",
]  # fmt: skip

CALLS = {name: (name, {}) for name in ELEMENTWISE}
CALLS.update({
    "gelu exact": ("gelu", dict(approximate=False)),
    "elu alpha": ("elu", dict(alpha=0.5)),
    "leaky_relu slope": ("leaky_relu", dict(negative_slope=0.2)),
    "softmax": ("softmax", {}),
    "softmax axis 0": ("softmax", dict(axis=0)),
    "softmax where": ("softmax", dict(where=MASK)),
    "log_softmax": ("log_softmax", {}),
    "log_softmax two axes": ("log_softmax", dict(axis=(0, 1))),
    "log_softmax where": ("log_softmax", dict(where=MASK)),
    "logsumexp": ("logsumexp", {}),
    "logsumexp keepdims": ("logsumexp", dict(axis=1, keepdims=True)),
    "logsumexp b": ("logsumexp", dict(axis=0, b=RNG.normal(size=(3, 6)).astype(np.float32))),
    "logsumexp sign": ("logsumexp", dict(axis=1, return_sign=True, b=-np.ones((1, 6), np.float32))),
    "logsumexp where": ("logsumexp", dict(axis=-1, where=MASK)),
    "standardize": ("standardize", {}),
    "standardize axis 0": ("standardize", dict(axis=0, epsilon=1e-3)),
    "glu": ("glu", {}),
})  # fmt: skip
EAGER = ["gelu", "gelu exact", "softmax", "log_softmax where", "logsumexp b", "one_hot"]


def _inputs(name):
    x = X
    if name.startswith(("standardize", "glu")):
        x = np.where(np.isfinite(X), X, 1.0).astype(np.float32)
    return x


def _call(mod, name, x):
    fn, kw = CALLS[name]
    return getattr(mod, fn)(x, **kw)


def _leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


def test_nn_matches_jax():
    names = list(CALLS)
    refs = jax.jit(lambda *xs: [_call(jnn, n, x) for n, x in zip(names, xs)])(
        *[_inputs(n) for n in names])  # fmt: skip
    outs = purejit.jit(lambda *xs: [_call(pnn, n, x) for n, x in zip(names, xs)])(
        *[_inputs(n) for n in names])  # fmt: skip
    for n, r, g in zip(names, refs, outs):
        for i, (rr, gg) in enumerate(zip(_leaves(r), _leaves(g))):
            assert_same(rr, gg, rtol=5e-6, atol=1e-6, where=f"jit {n} output {i}")
    for n in EAGER:
        if n in CALLS:
            g = _call(pnn, n, purejit.numpy.asarray(_inputs(n)))
            for i, (rr, gg) in enumerate(zip(_leaves(refs[names.index(n)]), _leaves(g))):
                assert_same(rr, gg, rtol=5e-6, atol=1e-6, where=f"eager {n} output {i}")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "int32"])
def test_dtypes(dtype):
    x = (RNG.normal(size=(8,)) * 4).astype(dtype)
    names = ["relu", "gelu", "softmax", "logsumexp"]
    if dtype != "int32":  # JAX's sigmoid rejects integers; purejit promotes them to float
        names += ["sigmoid", "silu", "log_softmax"]
    refs = jax.jit(lambda a: [getattr(jnn, n)(a) for n in names])(x)
    outs = purejit.jit(lambda a: [getattr(pnn, n)(a) for n in names])(x)
    for n, r, g in zip(names, refs, outs):
        assert_same(r, g, where=f"{n}({dtype})")


def test_python_scalars_keep_weak_type():
    for name in ["relu", "sigmoid", "gelu", "softplus"]:
        assert_same(getattr(jnn, name)(0.7), getattr(pnn, name)(0.7), where=name)


def test_one_hot():
    labels = np.array([[0, 2, 5], [-1, 1, 3]], np.int32)
    for kw in [{}, dict(axis=0), dict(dtype=np.int32), dict(axis=1, dtype=jax.numpy.bfloat16)]:
        ref = jnn.one_hot(labels, 4, **kw)
        assert_same(
            ref, purejit.jit(lambda a, kw=kw: pnn.one_hot(a, 4, **kw))(labels), where=str(kw)
        )
        assert_same(ref, pnn.one_hot(labels, 4, **kw), where=f"eager {kw}")


def test_softmax_is_stable_and_normalised():
    x = np.array([[1000.0, 1000.0, -1000.0]], np.float32)
    out = np.asarray(pnn.softmax(x))
    np.testing.assert_allclose(out, [[0.5, 0.5, 0.0]])
    np.testing.assert_allclose(np.asarray(pnn.logsumexp(x)), 1000 + np.log(2), rtol=1e-6)


# (function, keywords): written as jax.nn's (square, x ** 3, erfc, the clipped variance,
# logistic as 1 / (1 + exp(-x)), logaddexp's JVP), so values and reverse-mode derivatives
# round as JAX's
SAME_BITS = {
    "sigmoid": ("sigmoid", {}),
    "silu": ("silu", {}),
    "softplus": ("softplus", {}),  # jnp.logaddexp(x, 0) and its JVP rule
    "log_sigmoid": ("log_sigmoid", {}),
    "mish": ("mish", {}),
    "hard_sigmoid": ("hard_sigmoid", {}),
    "log_softmax": ("log_softmax", {}),
    "squareplus": ("squareplus", {}),
    "gelu": ("gelu", {}),
    "gelu exact": ("gelu", dict(approximate=False)),
    "standardize": ("standardize", {}),
    "standardize stable": ("standardize", dict(axis=0, algorithm="stable")),
    "standardize where": ("standardize", dict(where=MASK)),
}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_values_and_derivatives_are_jax_bits(dtype):
    from purejit.backend import pjrt

    x = np.where(np.isfinite(X), X, 1.0).astype(dtype)
    ct = RNG.normal(size=x.shape).astype(dtype)

    def forward(nn):
        return lambda x: [getattr(nn, f)(x, **kw) for f, kw in SAME_BITS.values()]

    def backward(nn, vjp):
        def f(x, ct):
            return [vjp(lambda x: getattr(nn, f)(x, **kw), x)[1](ct)[0]
                    for f, kw in SAME_BITS.values()]  # fmt: skip

        return f

    pairs = [
        (jax.jit(forward(jnn))(x), purejit.jit(forward(pnn))(x)),
        (jax.jit(backward(jnn, jax.vjp))(x, ct), purejit.jit(backward(pnn, purejit.vjp))(x, ct)),
    ]
    for kind, (refs, outs) in zip(("value", "vjp"), pairs):
        for name, r, g in zip(SAME_BITS, refs, outs):
            r, g = np.asarray(r, np.float32), np.asarray(g, np.float32)
            if pjrt.is_gpu():
                np.testing.assert_allclose(g, r, rtol=1e-2, atol=1e-2, err_msg=f"{kind} {name}")
            else:
                np.testing.assert_array_equal(g, r, err_msg=f"{kind} {name} ({dtype})")


def test_standardize_clips_a_variance_rounded_below_zero():
    # E[x^2] - E[x]^2 rounds below 0 on a near-constant row: JAX clips it (no NaN)
    x = np.full((2, 8), 3000.0, np.float32) + np.float32(1e-3) * np.arange(8, dtype=np.float32)
    ref, got = jnn.standardize(x), pnn.standardize(x)
    assert np.isfinite(np.asarray(got)).all()
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    with pytest.raises(ValueError, match="algorithm"):
        pnn.standardize(x, algorithm="exact")
