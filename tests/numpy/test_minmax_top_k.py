"""jax 0.11's `jnp.minmax` and `jnp.top_k`. The local jax (0.10.2) lacks both names, so the
references are what jax 0.11 computes them from, in jax 0.10.2: `(jnp.min, jnp.max)` and
`lax.top_k` of the array or of its order-reversing image. tools/check_jax011_names.py compares
them with jax 0.11.2 itself."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp


def _same(a, b):
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), strict=True)


def _jax_top_k(a, k, axis=-1, mode="largest"):
    # jax 0.11's jnp.top_k, spelt in jax 0.10.2's lax
    a = jjnp.asarray(a)
    if mode == "largest":
        return jax.lax.top_k(a, k, axis=axis)
    if a.dtype == np.bool_:
        v, i = jax.lax.top_k(jax.lax.bitwise_not(a), k, axis=axis)
        return jax.lax.bitwise_not(v), i
    if np.issubdtype(a.dtype, np.unsignedinteger):
        v, i = jax.lax.top_k(-(a + 1), k, axis=axis)
        return -(v + 1), i
    v, i = jax.lax.top_k(-a, k, axis=axis)
    return -v, i


CASES = [
    np.array([[1, 2, 3, 4, 5], [5, 4, 3, 2, 1]], np.int32),
    np.array([[3.0, np.nan, -1.0, 2.0], [0.0, -0.0, 7.0, 7.0]], np.float32),
    np.array([[0, 255, 3], [9, 0, 1]], np.uint8),
    np.array([[True, False, True], [False, False, True]]),
    np.array([[-2147483648, 5, 0], [3, 3, -1]], np.int32),
]


@pytest.mark.parametrize("mode", ["largest", "smallest"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_top_k_matches_jax_formula(mode, axis):
    for a in CASES:
        want = _jax_top_k(a, 2, axis, mode)
        _same(pnp.top_k(a, 2, axis=axis, mode=mode), want)
        f = purejit.jit(lambda v: pnp.top_k(v, 2, axis=axis, mode=mode))
        _same(f(a), want)


def test_top_k_documented_example_gradient_and_errors():
    a = np.array([[1, 2, 3, 4, 5], [5, 4, 3, 2, 1]], np.int32)
    vals, idx = pnp.top_k(a, 2, axis=0, mode="smallest")
    want = ([[1, 2, 3, 2, 1], [5, 4, 3, 4, 5]], [[0, 0, 0, 1, 1], [1, 1, 1, 0, 0]])
    _same((vals, idx), [np.array(w, np.int32) for w in want])
    x = np.array([3.0, 1.0, 2.0, 0.5], np.float32)
    g = purejit.grad(lambda v: pnp.top_k(v, 2, mode="smallest")[0].sum())(x)
    want = jax.grad(lambda v: _jax_top_k(v, 2, mode="smallest")[0].sum())(x)
    _same((g,), (want,))
    with pytest.raises(ValueError, match="mode must be 'largest' or 'smallest'"):
        pnp.top_k(x, 2, mode="biggest")
    with pytest.raises(ValueError, match="complex"):
        pnp.top_k(x.astype(np.complex64), 2)


def test_minmax_is_min_then_max():
    a = np.array([[2, 5, 1, 6], [3, -7, -2, 4], [8, -4, 1, -3]], np.int32)
    _same(pnp.minmax(a), (np.array(-7, np.int32), np.array(8, np.int32)))
    for kw in (
        {"axis": 1},
        {"axis": 0, "keepdims": True},
        {"initial": (0, 5)},
        {"initial": 1, "where": a > 0, "axis": 1},
    ):
        init = kw.get("initial")
        lo, hi = init if isinstance(init, tuple) else (init, init)
        rest = {k: v for k, v in kw.items() if k != "initial"}
        want = (jjnp.min(a, initial=lo, **rest), jjnp.max(a, initial=hi, **rest))
        _same(pnp.minmax(a, **kw), want)
        _same(purejit.jit(lambda v, kw=kw: pnp.minmax(v, **kw))(a), want)


def test_lax_top_k_takes_jax_011s_is_stable():
    # jax 0.11's keyword: False leaves ties unordered, which purejit's stable order satisfies
    a = np.array([[3, 1, 3, 2], [0, 5, 5, 5]], np.int32)
    want = jax.lax.top_k(a, 3)
    for stable in (True, False):
        _same(purejit.lax.top_k(a, 3, is_stable=stable), want)
    with pytest.raises(TypeError, match="is_stable must be a bool"):
        purejit.lax.top_k(a, 3, is_stable="yes")
