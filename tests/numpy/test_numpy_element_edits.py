"""append, delete, insert, block, choose, compress, extract, place, put, put_along_axis,
fill_diagonal, diagflat, apply_over_axes, argpartition, dsplit, resize, trim_zeros, rollaxis
and the index helpers against jax.numpy."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jnp_compare import assert_same, check_cases

import purejit
import purejit.numpy as jnp
from purejit import errors

A = np.arange(12, dtype=np.int32).reshape(3, 4)
F = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)

CASES = {
    "append": lambda m, a, f: (m.append(a, 1), m.append(a, m.ones((3, 1)), axis=1),
                               m.append(f, f[:1], axis=0)),
    "delete": lambda m, a, f: (m.delete(a, 1, axis=1), m.delete(a, -1),
                               m.delete(a, slice(0, 2), axis=0),
                               m.delete(f, np.array([0, 2]), axis=2),
                               m.delete(a, np.array([True, False, True]), axis=0)),
    "insert": lambda m, a, f: (m.insert(a, 1, 5, axis=1), m.insert(a, 2, 9.5),
                               m.insert(a, np.array([1, 3]), m.array([7, 8]), axis=1),
                               m.insert(f, slice(0, 2), 0.5, axis=1),
                               m.insert(a, 1, m.array([7, 8, 9]), axis=1),
                               m.insert(a[0], -1, m.array([5, 6]))),
    "block": lambda m, a, f: (m.block([[m.ones((2, 2)), m.zeros((2, 1))], [m.zeros((1, 3))]]),
                              m.block([a, a]), m.block([[a], [a]]), m.block(a)),
    "choose": lambda m, a, f: (m.choose(m.array([0, 5, -1]), [a[0, :3], a[1, :3]], mode="wrap"),
                               m.choose(m.array([0, 5, -1]), [a[0, :3], 20], mode="clip")),
    "compress": lambda m, a, f: (m.compress(m.array([1, 0, 1]), a, axis=0, size=2),
                                 m.compress(a[0] > 1, a, axis=1, size=3, fill_value=-1),
                                 m.extract(a > 4, a, size=9, fill_value=-1)),
    "place put": lambda m, a, f: (m.place(a, a > 4, m.array([0, 1]), inplace=False),
                                  m.put(a, m.array([0, 13, -1]), m.array([7, 8]), inplace=False),
                                  m.put(a, m.array([0, 13, -1]), m.array([7, 8]), mode="clip",
                                        inplace=False),
                                  m.put(f, m.array([0, 25]), 1.5, mode="wrap", inplace=False)),
    "put_along_axis": lambda m, a, f: (
        m.put_along_axis(a, m.array([[1], [2], [0]]), 99, axis=1, inplace=False),
        m.put_along_axis(f, m.argsort(f, axis=1)[:, :1], -5.0, axis=1, inplace=False),
        m.put_along_axis(a, m.array([3, -1]), m.array([1, 2]), axis=None, inplace=False)),
    "fill_diagonal": lambda m, a, f: (m.fill_diagonal(a, 9, inplace=False),
                                      m.fill_diagonal(m.zeros((3, 3, 3)), m.arange(2.0),
                                                      inplace=False)),
    "diagflat": lambda m, a, f: (m.diagflat(a[:2, :2], k=1), m.diagflat(f[0, 0], k=-2)),
    "apply_over_axes": lambda m, a, f: (m.apply_over_axes(m.sum, a, [0, 1]),
                                        m.apply_over_axes(m.max, f, (0, 2))),
    "argpartition": lambda m, a, f: (m.argpartition(m.array([3, 1, 2, 5, 4, 1]), 2),
                                     m.argpartition(f[::-1] * 1.0, 1, axis=1),
                                     m.argpartition(a.astype(m.uint8), 0)),
    "dsplit resize": lambda m, a, f: (m.dsplit(f, 2), m.dsplit(f, [1, 3]), m.resize(a, (2, 7)),
                                      m.resize(f[0, 0], 6), m.resize(a, 0)),
    "rollaxis": lambda m, a, f: (m.rollaxis(f, 2), m.rollaxis(f, 0, 3), m.rollaxis(f, -1, -2)),
    "indices": lambda m, a, f: (m.indices((2, 3)), m.indices((2, 3), sparse=True),
                                m.indices((3,), dtype=m.int8), m.ix_(a[0], a[1, :2]),
                                m.diag_indices(3), m.diag_indices_from(f[:, :2, :2]),
                                m.tril_indices(3), m.triu_indices(3, 1, 4),
                                m.tril_indices_from(a, -1), m.triu_indices_from(a),
                                m.mask_indices(3, m.triu, size=6)),
    "unravel ravel": lambda m, a, f: (m.unravel_index(m.array([0, 5, 11, 13, -1, -20]), (3, 4)),
                                      m.unravel_index(7, (2, 5)),
                                      m.ravel_multi_index((a[0], a[1]), (4, 6), mode="clip"),
                                      m.ravel_multi_index((a[0], a[1]), (4, 6), mode="wrap",
                                                          order="F")),
}  # fmt: skip


def test_against_jax():
    check_cases(CASES, A, F, eager=True)


def test_concrete_only_forms():
    """The forms whose result shape depends on values: eager only, as in JAX."""
    cases = {
        "delete array": lambda m: m.delete(m.asarray(A), m.array([0, 2]), axis=1),
        "choose raise": lambda m: m.choose(m.array([0, 1, 0]), [A[0, :3], A[1, :3]]),
        "compress": lambda m: m.compress(m.array([True, False, True]), m.asarray(A), axis=0),
        "extract": lambda m: m.extract(m.asarray(A) > 4, m.asarray(A)),
        "trim_zeros": lambda m: (m.trim_zeros(m.array([0, 0, 1, 2, 0])),
                                 m.trim_zeros(m.array([0, 0, 1, 2, 0]), "f"),
                                 m.trim_zeros(m.array([[0, 0], [0, 3]]))),
        "ravel_multi_index": lambda m: m.ravel_multi_index((m.array([1, 2]), m.array([0, 3])),
                                                           (3, 4)),
    }  # fmt: skip
    for name, fn in cases.items():
        ref, got = fn(jjnp), fn(jnp)
        for r, g in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(list(got)
                        if isinstance(got, tuple) else [got])):  # fmt: skip
            assert_same(r, g, where=name)
    traced = [
        lambda x: jnp.delete(x, x[0, :2]),
        lambda x: jnp.compress(x[0] > 1, x),
        lambda x: jnp.choose(x[0] % 2, [x[1], x[2]]),
        lambda x: jnp.trim_zeros(x[0]),
    ]
    for fn in traced:
        with pytest.raises(errors.ConcretizationTypeError):
            purejit.jit(fn)(A)


def test_delete_traced_unique():
    fn = lambda m, x, i: m.delete(x, i, axis=1, assume_unique_indices=True)  # noqa: E731
    want = fn(jjnp, A, jjnp.array([3, 0]))
    assert_same(want, purejit.jit(lambda x, i: fn(jnp, x, i))(A, np.array([3, 0])))


def test_immutable_and_errors():
    a = jnp.asarray(A)
    for fn in (lambda: jnp.place(a, a > 4, 0), lambda: jnp.put(a, 0, 1),
               lambda: jnp.put_along_axis(a, a[:, :1], 0, 1)):  # fmt: skip
        with pytest.raises(ValueError, match="inplace=False"):
            fn()
    with pytest.raises(NotImplementedError):
        jnp.fill_diagonal(a, 0)
    with pytest.raises(ValueError):
        jnp.choose(jnp.array([0, 5]), [1, 2])
    with pytest.raises(ValueError):
        jnp.block([])
    with pytest.raises(ValueError):
        jnp.dsplit(a, 2)
    with pytest.raises(TypeError):
        jnp.insert(a, [1, 2], 0)
