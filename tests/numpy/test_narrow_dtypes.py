"""The narrow dtypes (float8_*, float4_e2m1fn, int4/uint4/int2/uint2) against JAX on CPU:
conversions both ways, arithmetic in the type and after an upcast, reductions, `dot` with
`preferred_element_type`, JAX's promotion (no implicit path to other types), grad and vmap.
float6_* and int1/uint1 exist as dtypes, but XLA cannot compute on them (nor can JAX)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import dtypes as pdt
from purejit.ir import dtypes as irdt

FLOAT8 = [
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3",
    "float8_e3m4",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3b11fnuz",
    "float8_e8m0fnu",
]
NARROW_FLOATS = [*FLOAT8, "float4_e2m1fn"]
NARROW_INTS = ["int4", "uint4", "int2", "uint2"]

X = np.array([-300.0, -3.3, -1.0, -0.26, 0.0, 0.3, 1.0, 1.7, 2.5, 11.0, 500.0], np.float32)


def _same(got, ref):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    # bit for bit: both are XLA's conversions and XLA's arithmetic
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), ref.reshape(-1).view(np.uint8))


def _check_all(f, names, *args):
    """`f(numpy_module, name, *args)` for every dtype name, all in one jitted program (one
    compile per library), compared bit for bit with JAX."""
    ref = jax.jit(lambda *a: {n: f(jjnp, n, *a) for n in names})(*args)
    got = purejit.jit(lambda *a: {n: f(jnp, n, *a) for n in names})(*args)
    for n in names:
        for g, r in zip(got[n], ref[n]):
            _same(g, r)
    return got


def test_astype_round_trip_matches_jax():
    def f(m, name, x):
        y = x.astype(getattr(m, name))
        return y, y.astype(m.float32)

    _check_all(f, NARROW_FLOATS + NARROW_INTS, X)
    ref = jax.jit(lambda x: [f(jjnp, n, x) for n in NARROW_FLOATS + NARROW_INTS])(X)
    for name, r in zip(NARROW_FLOATS + NARROW_INTS, ref):  # eager: the host's conversions
        for g, rr in zip(f(jnp, name, jnp.asarray(X)), r):
            _same(g, rr)


def test_arithmetic_in_the_type_and_after_upcast():
    def f(m, name, x):
        y = x.astype(getattr(m, name))
        # weak Python scalars keep the narrow type; the upcast computes in float32
        return y * 2 + 1, y - y, y.astype(m.float32) * 0.1, m.maximum(y, y * 3)

    _check_all(f, NARROW_FLOATS + NARROW_INTS, X)


def test_reductions_of_narrow_floats():
    def f(m, name, x):
        y = x.astype(getattr(m, name))
        # types without infinities (e4m3fn, fnuz) start max/argmax at their finite extremes
        return (y.sum(), y.max(), y.min(), m.sum(y, dtype=m.float32), m.argmax(y),
                m.argmin(y), m.cumsum(y))  # fmt: skip

    _check_all(f, NARROW_FLOATS, X)


def test_dot_with_preferred_element_type():
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    b = np.linspace(1, -1, 8, dtype=np.float32).reshape(4, 2)

    def f(m, name, a, b):
        t = getattr(m, name)
        return (m.dot(a.astype(t), b.astype(t), preferred_element_type=m.float32),)

    got = _check_all(f, FLOAT8, a, b)
    assert all(got[n][0].dtype == np.float32 for n in FLOAT8)


@pytest.mark.parametrize("name", NARROW_FLOATS + NARROW_INTS)
def test_promotion_follows_jax(name):
    t = np.dtype(getattr(ml_dtypes, name))
    others = [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.int32, np.uint8, np.bool_]
    for o in [*others, *(getattr(ml_dtypes, n) for n in NARROW_FLOATS + NARROW_INTS)]:
        try:
            ref = jjnp.promote_types(t, o)
        except jax.errors.JaxRuntimeError:  # pragma: no cover - not raised by promote_types
            raise
        except Exception as e:
            with pytest.raises(pdt.TypePromotionError) as got:
                jnp.promote_types(t, o)
            assert str(got.value) == str(e)
            continue
        assert jnp.promote_types(t, o) == ref
    # weak Python scalars: a float8 takes 2 and 2.5, an int4 takes 2 and refuses 2.5
    for s in (2, 2.5):
        try:
            ref = jjnp.result_type(t, s)
        except jax.errors.JaxRuntimeError:  # pragma: no cover - not raised by result_type
            raise
        except Exception:
            with pytest.raises(pdt.TypePromotionError):
                jnp.result_type(t, s)
            continue
        assert jnp.result_type(t, s) == ref == t


def test_mixing_a_float8_with_float32_raises_like_jax():
    x = jnp.ones(3, jnp.float8_e4m3fn)
    with pytest.raises(pdt.TypePromotionError, match="8-bit floats do not support implicit"):
        x + jnp.ones(3, jnp.float32)
    with pytest.raises(pdt.TypePromotionError, match="4-bit integers do not support implicit"):
        jnp.ones(3, jnp.int4) + jnp.ones(3, jnp.int8)


def test_scalar_types_dtype_queries_and_limits():
    for name in NARROW_FLOATS:
        t = getattr(jnp, name)
        assert t.dtype == np.dtype(getattr(ml_dtypes, name)) == getattr(jjnp, name).dtype
        assert jnp.issubdtype(t, jnp.floating) and jnp.issubdtype(t, jnp.inexact)
        assert not jnp.issubdtype(t, jnp.integer)
        assert jnp.isdtype(t, "real floating") and not jnp.isdtype(t, "integral")
        assert float(jnp.finfo(t).max) == float(jjnp.finfo(getattr(jjnp, name)).max)
        got = t(1.5)
        assert got.dtype == t.dtype and float(got) == float(getattr(jjnp, name)(1.5))
    for name in NARROW_INTS:
        t = getattr(jnp, name)
        assert jnp.issubdtype(t, jnp.integer) and not jnp.issubdtype(t, jnp.floating)
        assert jnp.isdtype(t, "integral") and not jnp.isdtype(t, "real floating")
        signed = jnp.issubdtype(t, jnp.signedinteger)
        assert signed == jjnp.issubdtype(getattr(jjnp, name), jjnp.signedinteger)
        assert int(jnp.iinfo(t).max) == int(jjnp.iinfo(getattr(jjnp, name)).max)
    z = jnp.zeros((2, 3), jnp.float8_e5m2)
    assert z.dtype == jjnp.float8_e5m2 and np.asarray(z).dtype == np.dtype(ml_dtypes.float8_e5m2)
    assert jnp.array([1, 2], dtype="float8_e4m3fn").dtype == jnp.float8_e4m3fn.dtype


def test_grad_and_vmap_through_a_float8_cast():
    # quantise-dequantise: the cast's tangent is cast too (JAX's convert_element_type rule)
    def f(m, x):
        return (x.astype(m.float8_e4m3fn).astype(m.float32) * x).sum()

    x = np.linspace(-2, 2, 5, dtype=np.float32)
    ref = jax.grad(lambda x: f(jjnp, x))(x)
    got = purejit.grad(lambda x: f(jnp, x))(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    xs = np.stack([x, 2 * x])
    ref = jax.vmap(lambda x: x.astype(jjnp.float8_e5m2) * 2)(xs)
    got = purejit.vmap(lambda x: x.astype(jnp.float8_e5m2) * 2)(xs)
    _same(got, ref)


@pytest.mark.parametrize("name", ["float6_e2m3fn", "float6_e3m2fn", "int1", "uint1"])
def test_types_xla_cannot_compute_on_raise_clearly(name):
    t = getattr(jnp, name)
    assert t.dtype == np.dtype(getattr(ml_dtypes, name))
    assert irdt.dtype_name(t.dtype)  # an IR type: programs over it trace and print
    with pytest.raises(NotImplementedError, match=f"{name}.*XLA has no kernels"):
        purejit.jit(lambda x: x.astype(t))(np.ones(2, np.float32))
