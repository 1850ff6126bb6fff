"""custom_vjp as JAX reads fwd's residuals and bwd's output: Python scalars among the
residuals reach bwd as Python values (Equinox saves bool flags and branches on them in
bwd), and bwd's output structure is a prefix of the primal inputs' (a cotangent where the
input is None is dropped; one value where the input is a subtree stands for each leaf).
Each case is checked against JAX under eager grad and jit(grad)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit


def _scalar_residuals(lib):
    seen = []

    @lib.custom_vjp
    def f(x):
        return x * 2.0

    def fwd(x):
        return x * 2.0, (False, 3, 0.5, None, x)

    def bwd(res, g):
        flag, n, scale, none, x = res
        seen.append((type(flag), type(n) is not float and isinstance(n, int), none))
        # a Python branch on the saved flag: a traced array here would raise
        return ((g * n * scale if not flag else g),)

    f.defvjp(fwd, bwd)
    return f, seen


@pytest.mark.parametrize("jit", [False, True])
def test_python_scalar_residuals_stay_python_values(jit):
    got = {}
    for name, lib in (("jax", jax), ("purejit", purejit)):
        f, seen = _scalar_residuals(lib)
        g = lib.grad(lambda x: f(x).sum())
        g = lib.jit(g) if jit else g
        got[name] = (float(g(np.float32(1.5))), seen)
    assert got["purejit"] == got["jax"]
    assert got["purejit"][1] == [(bool, True, None)]


def _prefix_outputs(lib):
    @lib.custom_vjp
    def f(a, pair, nothing):
        return a * pair[0] + pair[1]

    def fwd(a, pair, nothing):
        return f(a, pair, nothing), (a, pair)

    def bwd(res, g):
        a, (p0, p1) = res
        # `pair` gets one value for both leaves; `nothing` (None) gets a value, dropped
        return (g * p0, g * a, g * 7.0)

    f.defvjp(fwd, bwd)
    return f


@pytest.mark.parametrize("jit", [False, True])
def test_bwd_output_is_a_prefix_of_the_inputs(jit):
    a, pair = np.float32(2.0), (np.float32(3.0), np.float32(4.0))
    got = {}
    for name, lib in (("jax", jax), ("purejit", purejit)):
        f = _prefix_outputs(lib)
        g = lib.grad(lambda a, pair: f(a, pair, None), argnums=(0, 1))
        g = lib.jit(g) if jit else g
        ga, (g0, g1) = g(a, pair)
        got[name] = (float(ga), float(g0), float(g1))
    assert got["purejit"] == got["jax"] == (3.0, 2.0, 2.0)


def test_a_bwd_structure_that_is_no_prefix_still_fails():
    @purejit.custom_vjp
    def f(a, pair):
        return a * pair[0]

    f.defvjp(lambda a, pair: (f(a, pair), None), lambda res, g: (g, (g, g, g)))
    with pytest.raises(TypeError, match="same container"):
        purejit.grad(f)(np.float32(1.0), (np.float32(2.0), np.float32(3.0)))
