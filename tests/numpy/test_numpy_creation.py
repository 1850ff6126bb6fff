"""Array creation against jax.numpy: values, shapes, dtypes and weak types, eager (where the
static cases are computed on the host) and under jit (where they are built from iota and
broadcasts)."""

import numpy as np
import pytest
from jnp_compare import check_cases

import purejit
import purejit.numpy as jnp

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_filled():
    cases = {
        "zeros": lambda m, x: m.zeros((2, 3)),
        "zeros int": lambda m, x: m.zeros(4, m.int32),
        "ones bool": lambda m, x: m.ones((2,), dtype=bool),
        "empty": lambda m, x: m.empty((2, 0, 3)),
        "full int (weak)": lambda m, x: m.full((2,), 3),
        "full float (weak)": lambda m, x: m.full((2, 2), 3.0),
        "full f16": lambda m, x: m.full((2, 2), 3.0, m.float16),
        "full from array": lambda m, x: m.full((3, 4), x[0, 0]),
        "full scalar array": lambda m, x: m.full((), x[1, 2, 3]),
        "zeros_like": lambda m, x: m.zeros_like(x),
        "ones_like int": lambda m, x: m.ones_like(x, dtype=m.int32),
        "full_like shape": lambda m, x: m.full_like(x, 7, shape=(3,)),
        "full_like weak": lambda m, x: m.full_like(2.5, 7),
        # empty_like's contents are undefined (uninitialised since jax 0.11): compare only
        # its shape, dtype and weak type
        "empty_like": lambda m, x: m.zeros_like(m.empty_like(x[0])),
        "empty_like weak": lambda m, x: m.zeros_like(m.empty_like(2.5)),
    }
    check_cases(cases, X, eager=True)


def test_ranges():
    cases = {
        "arange(5)": lambda m: m.arange(5),
        "arange(5.5)": lambda m: m.arange(5.5),
        "arange(2, 9, 3)": lambda m: m.arange(2, 9, 3),
        "arange(0, 1, 0.1)": lambda m: m.arange(0, 1, 0.1),
        "arange dtype": lambda m: m.arange(3, dtype=m.float32),
        "arange negative step": lambda m: m.arange(5, -3, -2),
        "arange empty": lambda m: m.arange(3, 1),
        "linspace": lambda m: m.linspace(0, 1, 7),
        "linspace no endpoint + step": lambda m: m.linspace(2, 5, 4, endpoint=False, retstep=True),
        "linspace int": lambda m: m.linspace(0, 10, 5, dtype=int),
        "linspace one": lambda m: m.linspace(0, 1, 1),
        "linspace empty": lambda m: m.linspace(0, 1, 0),
    }
    check_cases(cases, eager=True)


def test_linspace_array_bounds():
    cases = {
        "axis -1": lambda m, a, b: m.linspace(a, b, 3, axis=-1),
        "axis 0": lambda m, a, b: m.linspace(a, b[:, None], 4),
    }
    check_cases(cases, np.zeros(2, np.float32), np.arange(1, 3, dtype=np.float32), eager=True)


def test_matrices():
    cases = {
        "eye": lambda m, x: m.eye(3, 4, k=1),
        "eye int k<0": lambda m, x: m.eye(3, dtype=m.int32, k=-1),
        "identity": lambda m, x: m.identity(4),
        "tri": lambda m, x: m.tri(3, 5, k=1),
        "tri bool": lambda m, x: m.tri(4, dtype=bool, k=-2),
        "tril": lambda m, x: m.tril(x),
        "triu k=1": lambda m, x: m.triu(x, k=1),
        "tril k=-1 2-D": lambda m, x: m.tril(x[0], -1),
        "triu int": lambda m, x: m.triu(x.astype(m.int32), -1),
    }
    check_cases(cases, X, eager=True)


def test_meshgrid():
    cases = {
        "xy": lambda m, a, b, c: m.meshgrid(a, b),
        "ij 3-D": lambda m, a, b, c: m.meshgrid(a, b, c, indexing="ij"),
        "xy 3-D sparse": lambda m, a, b, c: m.meshgrid(a, b, c, sparse=True),
        "one": lambda m, a, b, c: m.meshgrid(c),
    }
    args = np.arange(3), np.arange(4.0, dtype=np.float32), np.arange(2)
    check_cases(cases, *args, eager=True)


def test_jit_builds_no_large_constants():
    """Under jit a big zeros/eye is a broadcast or an iota comparison, not a literal array."""
    low = purejit.jit(lambda: (jnp.zeros((512, 512)), jnp.eye(512), jnp.arange(10_000))).lower()
    text = low.ir()
    assert len(text) < 4000
    assert "iota" in text and "broadcast_in_dim" in text


def test_errors():
    with pytest.raises(ValueError, match="negative dimensions"):
        jnp.zeros((2, -1))
    with pytest.raises(TypeError, match="static integers"):
        purejit.jit(lambda n: jnp.zeros(n))(3)
    with pytest.raises(purejit.ConcretizationTypeError, match="arange"):
        purejit.jit(lambda n: jnp.arange(n))(3)
    with pytest.raises(ValueError, match="non-negative"):
        jnp.linspace(0, 1, -1)
