"""vmap hands every unmapped argument to the function as it is, as jax.vmap does
(`batching.to_elt`): Python ints stay static (a `fori_loop` bound stays a `fori_loop`, so
reverse mode works), `range`, strings, NumPy arrays and configuration objects reach the
function unchanged, under grad and jit too. Keyword arguments are mapped over axis 0, and
`in_axes` / `out_axes` out of range raise JAX's errors."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import lax

X = np.linspace(0.1, 0.5, 4).astype(np.float32)
XS = np.linspace(-1.0, 1.0, 12).astype(np.float32).reshape(4, 3)


def _same(got, want, rtol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_allclose(got, want, rtol=rtol)


def _poly(fori_loop):
    def f(x, n):
        return fori_loop(0, n, lambda i, c: c * x + 1.0, x)

    return f


@pytest.mark.parametrize("wrap", ["eager", "jit"])
def test_grad_of_fori_loop_with_an_unmapped_python_int_bound(wrap):
    """The issue's case: vmap(grad(f), in_axes=(0, None))(x, 5)."""
    got_f = purejit.vmap(purejit.grad(_poly(lax.fori_loop)), in_axes=(0, None))
    if wrap == "jit":
        got_f = purejit.jit(got_f, static_argnums=1)
    want = jax.vmap(jax.grad(_poly(jax.lax.fori_loop)), in_axes=(0, None))(X, 5)
    _same(got_f(X, 5), want)
    # and reverse mode over the vmapped loop (grad outside vmap)
    outer = purejit.grad(lambda x: jnp.sum(purejit.vmap(_poly(lax.fori_loop), (0, None))(x, 4)))
    want = jax.grad(lambda x: jjnp.sum(jax.vmap(_poly(jax.lax.fori_loop), (0, None))(x, 4)))(X)
    _same(outer(X), want)


def test_unmapped_values_reach_the_function_unchanged():
    seen = {}

    @dataclasses.dataclass(frozen=True)
    class Config:
        scale: float
        mode: str

    def f(x, n, r, s, w, cfg):
        seen.update(n=n, r=r, s=s, w=type(w), cfg=cfg)
        acc = x * 0
        for i in r:
            acc = acc + x * i
        acc = acc * n * cfg.scale
        if s == "double" and cfg.mode == "fast":
            acc = acc * 2
        return acc + w.sum()

    cfg = Config(0.5, "fast")
    w = np.arange(3.0, dtype=np.float32)
    args = (XS, 3, range(4), "double", w, cfg)
    axes = (0, None, None, None, None, None)
    got = purejit.vmap(f, in_axes=axes)(*args)
    assert seen == {"n": 3, "r": range(4), "s": "double", "w": np.ndarray, "cfg": cfg}
    _same(got, jax.vmap(f, in_axes=axes)(*args))
    # under grad, the unmapped values are still themselves
    g = purejit.grad(lambda x: jnp.sum(purejit.vmap(f, in_axes=axes)(x, *args[1:])))(XS)
    want = jax.grad(lambda x: jjnp.sum(jax.vmap(f, in_axes=axes)(x, *args[1:])))(XS)
    _same(g, want)
    assert seen["n"] == 3 and seen["w"] is np.ndarray


def test_static_unmapped_int_shapes_a_result():
    """An unmapped int can size an array (it would be a tracer if vmap traced it)."""

    def f(x, n):
        return jnp.zeros(n) + x.sum()

    got = purejit.vmap(f, in_axes=(0, None))(XS, 5)
    want = jax.vmap(lambda x, n: jjnp.zeros(n) + x.sum(), in_axes=(0, None))(XS, 5)
    _same(got, want)


def test_unmapped_outer_tracers_and_arrays_still_work():
    """An unmapped jit tracer or purejit Array is captured, not turned into a constant."""

    def f(x, y):
        return x * y

    got = purejit.jit(lambda x, y: purejit.vmap(f, in_axes=(0, None))(x, y))(XS, X[:3])
    _same(got, XS * X[:3])
    _same(purejit.vmap(f, in_axes=(0, None))(XS, jnp.asarray(X[:3])), XS * X[:3])
    _same(purejit.vmap(lambda x, n: n, in_axes=(0, None))(X, 5), jax.vmap(
        lambda x, n: n, in_axes=(0, None))(X, 5))  # fmt: skip


def test_keyword_arguments_are_mapped_over_axis_0():
    def f(x, *, y, scale):
        return x * y + scale

    ys, scale = XS[:, ::-1].copy(), np.full(4, 2.0, np.float32)
    got = purejit.vmap(f, in_axes=1)(XS.T, y=ys, scale=scale)
    want = jax.vmap(f, in_axes=1)(XS.T, y=ys, scale=scale)
    _same(got, want)
    with pytest.raises(ValueError, match="inconsistent sizes"):
        purejit.vmap(f)(XS, y=XS.T, scale=scale)


def _jax_error(fn):
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize("out_axes", [2, 3, -3, 5])
def test_out_axes_out_of_range_raise_jax_error(out_axes):
    x = np.ones((3, 4), np.float32)
    want = _jax_error(lambda: jax.vmap(lambda v: v * 2, out_axes=out_axes)(x))
    got = _jax_error(lambda: purejit.vmap(lambda v: v * 2, out_axes=out_axes)(x))
    assert got.startswith(want), (got, want)
    assert "test_vmap_unmapped.py" in got


@pytest.mark.parametrize("out_axes", [1, -1, -2])
def test_out_axes_in_range_match_jax(out_axes):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    _same(purejit.vmap(lambda v: v * 2, out_axes=out_axes)(x),
          jax.vmap(lambda v: v * 2, out_axes=out_axes)(x))  # fmt: skip


@pytest.mark.parametrize("in_axes", [2, -3])
def test_in_axes_out_of_range_raise_jax_error(in_axes):
    x = np.ones((3, 4), np.float32)
    want = _jax_error(lambda: jax.vmap(lambda v: v * 2, in_axes=in_axes)(x))
    got = _jax_error(lambda: purejit.vmap(lambda v: v * 2, in_axes=in_axes)(x))
    assert got.startswith(want), (got, want)
