"""Python ints convert in the requested dtype's range, as jax.numpy converts them (NumPy's
conversion: uint32(2**32 - 1) is exact, int8(128) an OverflowError), never in the weak int32
range of a Python int; `full` casts its fill value as jax.lax.full does; a Python int beyond
the weak range combined with an array raises OverflowError, as in JAX."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp

CONVERT = {
    "uint32 max": lambda n: n.uint32(2**32 - 1),
    "array uint32 max": lambda n: n.array(2**32 - 1, dtype=n.uint32),
    "asarray uint32": lambda n: n.asarray(2**31, dtype=n.uint32),
    "full golden ratio": lambda n: n.full(2, 0x9E3779B9, dtype=n.uint32),
    "full_like uint32": lambda n: n.full_like(n.zeros(2, n.uint32), 2**32 - 1),
    "full_like wraps": lambda n: n.full_like(n.zeros(2, n.uint32), 2**32),
    "full int8 wraps": lambda n: n.full(3, 200, dtype=n.int8),
    "full -1 uint32": lambda n: n.full(2, -1, dtype=n.uint32),
    "full float32 2**40": lambda n: n.full(2, 2**40, dtype=n.float32),
    "float32 2**40": lambda n: n.float32(2**40),
    "array float32 2**64": lambda n: n.array(2**64, dtype=n.float32),
    "list uint32": lambda n: n.array([[1, 2**31], [2**32 - 1, 0]], dtype=n.uint32),
    "list mixed": lambda n: n.array([1.5, 2**32 - 1], dtype=n.uint32),
    "int8 bounds": lambda n: n.array([-128, 127], dtype=n.int8),
    "uint8 max": lambda n: n.uint8(255),
    "int16 min": lambda n: n.int16(-(2**15)),
    "bool from int": lambda n: n.bool_(5),
    "bfloat16 from int": lambda n: n.bfloat16(2**20 + 1),
    "uint32 plus numpy uint32": lambda n: n.zeros(2, n.uint32) + np.uint32(2**32 - 1),
    "uint32 plus small int": lambda n: n.array([1, 2], dtype=n.uint32) + (-1),
    "int8 plus weak int": lambda n: n.array([1], dtype=n.int8) + 200,
}

OVERFLOWS = {
    "int8(128)": lambda n: n.int8(128),
    "int8(-129)": lambda n: n.int8(-129),
    "uint8(256)": lambda n: n.uint8(256),
    "uint8(-1)": lambda n: n.uint8(-1),
    "uint32(2**32)": lambda n: n.uint32(2**32),
    "uint32(-1)": lambda n: n.uint32(-1),
    "int32(2**31)": lambda n: n.int32(2**31),
    "list out of uint32": lambda n: n.array([1, 2**32], dtype=n.uint32),
    "list negative uint32": lambda n: n.array([1, -1], dtype=n.uint32),
    "uint64 without x64": lambda n: n.uint64(2**40),
    "float into int8": lambda n: n.array(300.0, dtype=n.int8),
}

WEAK_OVERFLOWS = {
    "uint32 scalar + 2**31": lambda n, a: n.uint32(5) + 2**31,
    "uint32 array + 2**31": lambda n, a: a + 2**31,
    "uint32 array * (2**32 - 1)": lambda n, a: a * (2**32 - 1),
    "uint32 array ^ golden": lambda n, a: a ^ 0x9E3779B9,
    "uint32 == 2**32 - 1": lambda n, a: a == 2**32 - 1,
    "float32 + 2**40": lambda n, a: a.astype(n.float32) + 2**40,
    "where": lambda n, a: n.where(a > 1, a, 2**32 - 1),
}


def _check(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", list(CONVERT))
def test_conversion_matches_jax(name):
    f = CONVERT[name]
    want = f(jjnp)
    _check(f(jnp), want)
    got = purejit.jit(lambda: f(jnp))()
    _check(got, want)
    assert getattr(f(jnp), "weak_type", False) == getattr(want, "weak_type", False)


@pytest.mark.parametrize("name", list(OVERFLOWS))
def test_out_of_range_raises_jax_overflow_error(name):
    f = OVERFLOWS[name]
    with pytest.raises(OverflowError) as want:
        f(jjnp)
    with pytest.raises(OverflowError) as got:
        f(jnp)
    # JAX's (NumPy's) text, then the user's line
    assert str(got.value).startswith(str(want.value)), (str(got.value), str(want.value))
    assert "test_python_int_conversion.py" in str(got.value)


@pytest.mark.parametrize("name", list(WEAK_OVERFLOWS))
@pytest.mark.parametrize("wrap", ["eager", "jit"])
def test_weak_int_beyond_int32_raises_as_in_jax(name, wrap):
    f = WEAK_OVERFLOWS[name]
    a = np.array([1, 2], np.uint32)
    with pytest.raises(OverflowError):
        f(jjnp, jjnp.asarray(a))
    run = (lambda a: f(jnp, a)) if wrap == "eager" else purejit.jit(lambda a: f(jnp, a))
    with pytest.raises(OverflowError, match="Python int .* is outside int32") as got:
        run(jnp.asarray(a))
    msg = str(got.value)
    assert "test_python_int_conversion.py" in msg and "write it as" in msg


def test_the_hint_names_a_dtype_that_holds_the_value():
    with pytest.raises(OverflowError, match=r"purejit\.numpy\.uint32\(2654435769\)"):
        jnp.zeros(2, jnp.uint32) ^ 0x9E3779B9


def test_x64_converts_in_the_64_bit_ranges():
    with purejit.enable_x64(True), jax.enable_x64(True):
        for f in (lambda n: n.uint64(2**64 - 1), lambda n: n.array(2**63, dtype=n.uint64),
                  lambda n: n.int64(-(2**63)), lambda n: n.full(2, 2**40, dtype=n.int64),
                  lambda n: n.zeros(2, n.int64) + 2**40):  # fmt: skip
            _check(f(jnp), f(jjnp))
        for f in (lambda n: n.uint64(2**64), lambda n: n.int64(2**63)):
            with pytest.raises(OverflowError) as want:
                f(jjnp)
            with pytest.raises(OverflowError, match=str(want.value)):
                f(jnp)
