"""The Array API standard (2024.12) in purejit.numpy, against jax.numpy: inspection, the
standard's names, Array attributes, error types, scalar types, asarray's copy/device, and
Python lists refused where jax.numpy refuses them."""

import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from jnp_compare import assert_same, check_cases

import purejit
import purejit.numpy as jnp

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
INTS = RNG.integers(-5, 6, (3, 4)).astype(np.int32)
Z = (RNG.standard_normal((4,)) + 1j * RNG.standard_normal((4,))).astype(np.complex64)


def test_version_and_namespace():
    # the standard this namespace implements (jax 0.11 moved to 2025.12; 0.10 has 2024.12)
    assert jnp.__array_api_version__ == "2024.12"
    assert jjnp.__array_api_version__ in ("2024.12", "2025.12")
    x = jnp.asarray(X)
    assert x.__array_namespace__() is jnp
    assert x.__array_namespace__(api_version="2024.12") is jnp
    with pytest.raises(ValueError, match="2023.12"):
        x.__array_namespace__(api_version="2023.12")


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "complex64"])
def test_finfo(dt):
    ref, got = jjnp.finfo(dt), jnp.finfo(dt)
    for attr in ("bits", "eps", "max", "min", "smallest_normal", "dtype"):
        assert getattr(got, attr) == getattr(ref, attr), attr
    assert jnp.finfo(jnp.ones(2, dt)).eps == ref.eps  # an array's dtype


@pytest.mark.parametrize("dt", ["int8", "uint16", "int32", "uint32"])
def test_iinfo(dt):
    ref, got = jjnp.iinfo(dt), jnp.iinfo(jnp.zeros(1, dt))
    assert (got.bits, got.min, got.max, got.dtype) == (ref.bits, ref.min, ref.max, ref.dtype)


KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric", ("bool", "complex floating"), np.int32]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_isdtype(kind):
    for dt in ("bool", "int8", "uint32", "int32", "float16", "bfloat16", "float32", "complex64"):
        dt = np.dtype(dt)
        assert jnp.isdtype(dt, kind) == jjnp.isdtype(dt, kind), (dt, kind)


def test_isdtype_errors_and_can_cast():
    with pytest.raises(ValueError):
        jnp.isdtype(np.float32, "floaty")
    with pytest.raises(TypeError):
        jnp.isdtype(np.float32, 3.5)
    for a in ("int8", "int32", "uint8", "float32", "bool"):
        for b in ("int16", "float32", "float64", "uint32", "complex64"):
            assert jnp.can_cast(a, b) == jjnp.can_cast(a, b), (a, b)
    assert jnp.can_cast(jnp.ones(2, jnp.int8), jnp.int16)


def test_namespace_info():
    info, ref = jnp.__array_namespace_info__(), jjnp.__array_namespace_info__()
    assert info.capabilities() == ref.capabilities()
    assert info.default_device() is None
    assert info.devices()[0] is None and info.devices()[1:] == purejit.devices()
    assert info.default_dtypes() == ref.default_dtypes()
    for kind in (None, "bool", "integral", "real floating", ("bool", "complex floating")):
        assert info.dtypes(kind=kind) == ref.dtypes(kind=kind), kind


def test_standard_names():
    cases = {
        "acos": lambda m, x, i, z: m.acos(m.clip(x, -1, 1)),
        "asinh": lambda m, x, i, z: m.asinh(x),
        "atan2": lambda m, x, i, z: m.atan2(x, x[::-1]),
        "bitwise": lambda m, x, i, z: (
            m.bitwise_invert(i),
            m.bitwise_left_shift(i, 2),
            m.bitwise_right_shift(i, 1),
        ),  # fmt: skip
        "concat": lambda m, x, i, z: (m.concat([x, x], axis=1), m.concat([x, x], axis=None)),
        "matrix_transpose": lambda m, x, i, z: m.matrix_transpose(m.stack([x, x])),
        "unstack": lambda m, x, i, z: m.unstack(x, axis=1),
        "vecdot": lambda m, x, i, z: (
            m.vecdot(x, x),
            m.vecdot(x, x[0], axis=-1),
            m.vecdot(z, z[::-1]),
        ),  # fmt: skip
        "cumulative_sum": lambda m, x, i, z: (
            m.cumulative_sum(x, axis=1),
            m.cumulative_sum(i.astype(m.int8), axis=0, include_initial=True),
            m.cumulative_sum(i[0] > 0),
        ),  # fmt: skip
        "cumulative_prod": lambda m, x, i, z: m.cumulative_prod(x, axis=0, include_initial=True),
        "count_nonzero": lambda m, x, i, z: (
            m.count_nonzero(i),
            m.count_nonzero(i, axis=1, keepdims=True),
        ),
        "diff": lambda m, x, i, z: (
            m.diff(x),
            m.diff(x, n=2, axis=0),
            m.diff(i > 0),
            m.diff(x, prepend=0.5, append=x[:, :1]),
        ),  # fmt: skip
        "nextafter": lambda m, x, i, z: (m.nextafter(x, 0.0), m.nextafter(x, m.inf)),
        "conj": lambda m, x, i, z: (m.conj(z), m.conj(x), m.conjugate(z)),
    }
    check_cases(cases, X, INTS, Z, eager=["unstack", "vecdot", "diff", "nextafter", "conj"])


def test_array_attributes():
    x = jnp.asarray(X)
    dev = purejit.devices()[0]
    assert x.device == dev
    y = x.to_device(dev)
    np.testing.assert_array_equal(np.asarray(y), X)
    np.testing.assert_array_equal(np.asarray(x.mT), X.T)
    c = x.copy()
    assert c is not x and c.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(c), X)
    np.testing.assert_array_equal(np.asarray(jnp.copy(x)), X)
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1.0
    assert jnp.asarray(X, device=dev).device == dev
    assert jnp.zeros(3, device=dev).device == dev


def test_error_types():
    with pytest.raises(ValueError):
        jnp.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError):
        jnp.broadcast_to(jnp.ones(2), (3,))
    with pytest.raises(ValueError):
        jnp.broadcast_arrays(jnp.ones(2), jnp.ones(3))
    with pytest.raises(TypeError):  # as jax.numpy: elementwise ops raise TypeError
        jnp.ones(2) + jnp.ones(3)
    for err in (IndexError, ValueError):  # an AxisError is both, as NumPy's
        with pytest.raises(err):
            jnp.expand_dims(jnp.ones(2), 3)
    assert jnp.broadcast_shapes((2, 1), (3,)) == (2, 3)


def test_scalar_types():
    for name in ("bool", "int8", "uint8", "int32", "float16", "float32", "bfloat16", "complex64"):
        t, ref = getattr(jnp, name), getattr(jjnp, name)
        assert t.dtype == ref.dtype
        assert t == ref.dtype.type and np.dtype(t) == ref.dtype
        assert hash(t) == hash(ref)
        got, want = t(3), ref(3)
        assert_same(want, got, where=name)
    assert jnp.bfloat16.dtype == np.dtype(ml_dtypes.bfloat16)
    assert jnp.bool_ is jnp.bool
    assert isinstance(np.float32(1), jnp.float32)
    assert jnp.zeros(2, jnp.float32).dtype == jnp.float32
    assert jnp.asarray([1.5], dtype=jnp.bfloat16).dtype == jnp.bfloat16


def test_asarray_copy_and_lists():
    a = np.arange(4, dtype=np.float32)
    x = jnp.asarray(a)
    assert jnp.asarray(x) is x
    assert jnp.asarray(x, copy=True) is not x
    assert jnp.asarray(a, copy=False).dtype == np.float32
    with pytest.raises(ValueError, match="copy=False"):
        jnp.asarray([1, 2], copy=False)
    for v in ([1, 2], [[1.0, 2], [3, 4]], [True, False], [1, 2.5j], [np.float32(1), 2]):
        assert_same(jjnp.asarray(v), jnp.asarray(v), where=str(v))
    assert_same(jjnp.array([1, 2], ndmin=3), jnp.array([1, 2], ndmin=3))
    for fn in (lambda m: m.sum([1, 2, 3]), lambda m: m.sin([1.0]), lambda m: m.add([1], 2)):
        with pytest.raises(TypeError):
            fn(jjnp)
        with pytest.raises(TypeError, match="asarray"):
            fn(jnp)


def test_signbit_reads_the_bits():
    x = np.array([-0.0, 0.0, np.nan, -np.nan, -1, 2, -np.inf], np.float32)
    cases = {
        "f32": lambda m, v: m.signbit(v),
        "f16": lambda m, v: m.signbit(v.astype(m.float16)),
        "bf16": lambda m, v: m.signbit(v.astype(m.bfloat16)),
        "int bool": lambda m, v: (m.signbit(v.astype(m.int32)), m.signbit(v > 0)),
    }
    check_cases(cases, x, eager=True)
