"""Scalar-type aliases, dtype helpers, index tricks, windows, trapezoid, unwrap, logspace,
geomspace, fromfunction, matvec/vecmat and polynomial arithmetic against jax.numpy."""

import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from jnp_compare import assert_same, check_cases

import purejit.numpy as jnp

X = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
P = np.array([1.0, -3.0, 2.0, 5.0], np.float32)

CASES = {
    "windows": lambda m, x, p: (m.bartlett(5), m.blackman(6), m.hamming(7), m.hanning(4),
                                m.kaiser(5, 2.0), m.kaiser(1, 3.0), m.hanning(0)),
    "trapezoid": lambda m, x, p: (m.trapezoid(x), m.trapezoid(x, dx=0.5, axis=0),
                                  m.trapezoid(x, x=p), m.trapezoid(x, x=x, axis=0),
                                  m.trapezoid(m.arange(4))),
    "unwrap": lambda m, x, p: (m.unwrap(x * 3), m.unwrap(x * 3, axis=0, discont=4.0),
                               m.unwrap(m.array([0, 7, 1, 9]), period=6)),
    "spaces": lambda m, x, p: (m.logspace(0, 2, 3), m.logspace(0.0, 1.0, 4, base=2.0,
                                                                endpoint=False),
                               m.geomspace(1, 8, 4), m.geomspace(-1, -8, 4, dtype=int),
                               m.geomspace(m.array([1.0, 2.0]), 32.0, 3, axis=1)),
    "fromfunction": lambda m, x, p: (m.fromfunction(lambda i, j: i + j, (2, 3), dtype=int),
                                     m.fromfunction(lambda i: i * 0.5, (4,))),
    "matvec": lambda m, x, p: (m.matvec(x, p), m.vecmat(x[:, 0], x),
                               m.vecmat(x[:, 0] * 1j, x * (1 + 1j)),
                               m.matvec(m.stack([x, x]), p)),
    "index tricks": lambda m, x, p: (m.r_[1:4, 0, m.array([7, 8])], m.c_[x[0], x[1]],
                                     m.r_["0,2", p, p], m.r_["r", p], m.c_[1:3, 5:7],
                                     m.mgrid[0:2, 0:3], m.ogrid[0:1:3j, 0:2], m.mgrid[0:4],
                                     x[m.s_[1:, ::2]], x[m.index_exp[0]]),
    "poly": lambda m, x, p: (m.poly(p), m.poly(m.array([1, 2])), m.polyadd(p, p[:2]),
                             m.polyadd(m.array([1, 2]), m.array([1.0, 2, 3])),
                             m.polysub(p[:2], p), m.polymul(p, p[:3]),
                             m.polydiv(p, p[1:3]), m.polyder(p), m.polyder(p, 2),
                             m.polyint(p), m.polyint(p, 2, k=m.array([1.0, 2.0])),
                             m.polyint(m.array([1, 2]), k=3)),
}  # fmt: skip


def test_against_jax():
    check_cases(CASES, X, P, eager=["windows", "poly", "index tricks"], rtol=2e-5, atol=2e-5)


def test_scalar_types_and_dtype_helpers():
    for name in ["single", "double", "csingle", "cdouble", "complex_", "float_", "int_", "uint"]:
        assert np.dtype(getattr(jnp, name)) == np.dtype(getattr(jjnp, name)), name
        assert getattr(jnp, name).dtype == getattr(jjnp, name).dtype, name
    for name in ["generic", "number", "inexact", "floating", "complexfloating", "integer",
                 "signedinteger", "unsignedinteger"]:  # fmt: skip
        assert getattr(jnp, name) is getattr(jjnp, name), name
    assert jnp.euler_gamma == jjnp.euler_gamma
    assert_same(jjnp.float_(2.5), jnp.float_(2.5))
    types = [jnp.float32, "bfloat16", ml_dtypes.bfloat16, np.int8, "uint16", bool, int, float,
             complex, np.complex64, jnp.float16]  # fmt: skip
    jtypes = [jjnp.float32 if t is jnp.float32 else jjnp.float16 if t is jnp.float16 else t
              for t in types]  # fmt: skip
    for a, ja in zip(types, jtypes):
        for b, jb in zip(types, jtypes):
            assert jnp.promote_types(a, b) == jjnp.promote_types(ja, jb), (a, b)
    kinds = [np.floating, np.inexact, np.integer, np.signedinteger, np.unsignedinteger,
             np.number, np.generic, np.complexfloating, float, np.float32, "bfloat16"]  # fmt: skip
    for a, ja in zip(types, jtypes):
        for k in kinds:
            assert jnp.issubdtype(a, k) == jjnp.issubdtype(ja, k), (a, k)
    assert jnp.issubdtype(jnp.floating, jnp.inexact) and not jnp.issubdtype(jnp.inexact, float)
    x = jnp.asarray(X)
    for v, jv in [(x, jjnp.asarray(X)), (3.0, 3.0), (np.ones((2, 3)), np.ones((2, 3)))]:
        assert jnp.ndim(v) == jjnp.ndim(jv) and jnp.shape(v) == jjnp.shape(jv)
        assert jnp.size(v) == jjnp.size(jv)
    assert jnp.size(x, axis=1) == 4 and jnp.size(x, axis=(0, 1)) == 12
    assert jnp.isscalar(1.0) and jnp.isscalar(np.float32(1)) and jnp.isscalar(x[0, 0])
    assert not jnp.isscalar(x) and not jnp.isscalar([1])
    assert jnp.iterable([1]) and not jnp.iterable(3)


def test_errors():
    with pytest.raises(ValueError):
        jnp.r_["x,y", P]
    with pytest.raises(ValueError):
        jnp.polyder(P, -1)
    with pytest.raises(ValueError):
        jnp.unwrap(jnp.asarray(P) * 1j)
    with pytest.raises(ValueError):
        jnp.matvec(jnp.asarray(P), jnp.asarray(P))
